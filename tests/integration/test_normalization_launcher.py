"""env.normalize_* from Hydra: passed to the algorithm, bad values named, statistics resumed bitwise and used by
lit_rl.evaluate."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from lit_rl.algorithms import load_algorithm
from lit_rl.callbacks.evaluation import evaluate_episodes
from lit_rl.launcher.build import build_algorithm
from lit_rl.launcher.config import register_configs
from lit_rl.launcher.evaluate import evaluate_checkpoint, make_eval_env
from tests.helpers import CONF, read_summary, run_launcher

register_configs()
NORMALIZE = ["env.normalize_obs=true", "env.normalize_reward=true", "env.normalize_kwargs.clip_reward=5"]
# Episodes are 200 steps: the split at 152 falls mid-episode (the discounted returns must be resumed too).
COMMON = ["trainer=smoke", "algo=sac", "env=Pendulum-v1", "env.max_episode_steps=200", "eval.freq=152",
          "eval.episodes=1", "algo.learning_starts=50", "algo.policy_kwargs.net_arch.pi=[16]",
          "algo.policy_kwargs.net_arch.qf=[16]", *NORMALIZE]  # fmt: skip


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_env_group_keys_reach_the_algorithm():
    algo = build_algorithm(compose_train("algo=sac", "env=Pendulum-v1", *NORMALIZE, "env.normalize_kwargs.gamma=0.9"))
    assert (algo.normalize_obs, algo.normalize_reward) == (True, True)
    assert algo.normalize_kwargs == {"clip_obs": 10.0, "clip_reward": 5.0, "epsilon": 1e-8, "gamma": 0.9, "training": True}
    assert not build_algorithm(compose_train("algo=sac", "env=Pendulum-v1")).normalize_obs  # off by default


def test_bad_values_fail_naming_the_key():
    with pytest.raises(ValueError, match=r"env.normalize_kwargs.clip_obs=-1.0 is out of range; allowed: \(0.0, inf\]"):
        build_algorithm(compose_train("algo=sac", "env=Pendulum-v1", "env.normalize_kwargs.clip_obs=-1"))
    with pytest.raises(ConfigCompositionException, match="clip"):  # a misspelled key fails at composition
        compose_train("env=Pendulum-v1", "env.normalize_kwargs.clip=1")
    with pytest.raises(ConfigCompositionException, match="normalize_obs"):
        compose_train("env=Pendulum-v1", "env.normalize_obs=maybe")


def test_resume_is_exact_and_evaluate_uses_the_checkpoint_statistics(tmp_path):
    straight, half, resumed = tmp_path / "straight", tmp_path / "half", tmp_path / "resumed"
    with ThreadPoolExecutor(2) as pool:  # two independent runs side by side: the test waits for one, not two
        runs = [pool.submit(run_launcher, folder, *COMMON, f"total_timesteps={n}") for folder, n in ((straight, 300), (half, 152))]
        assert [run.result().returncode for run in runs] == [0, 0]
    proc = run_launcher(resumed, *COMMON, "total_timesteps=300", f"ckpt_path={half}/checkpoints/last.ckpt")
    assert proc.returncode == 0, proc.stderr[-3000:]

    a, b = (torch.load(d / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False) for d in (straight, resumed))
    names = [n for n in a["state_dict"] if n.startswith("normalizer.")]
    assert {"normalizer.obs_stats.obs.mean", "normalizer.ret_stats.var", "normalizer.returns"} <= set(names)
    assert a["state_dict"]["normalizer.obs_stats.obs.count"].item() == pytest.approx(301, abs=1e-3)  # reset + steps
    for name, tensor in a["state_dict"].items():
        assert torch.equal(tensor, b["state_dict"][name]), f"{name} differs after resume"
    buffer_a, buffer_b = a["rl_state"]["training"]["replay_buffer"], b["rl_state"]["training"]["replay_buffer"]
    for name, stored in buffer_a["storage"].items():
        assert torch.equal(stored, buffer_b["storage"][name]), f"replay buffer {name} differs after resume"
    assert read_summary(straight)["final_eval_return"] == read_summary(resumed)["final_eval_return"]

    # lit_rl.evaluate plays with the checkpoint's statistics: the same returns as the loaded agent, other ones
    # once its statistics are replaced by fresh ones.
    ckpt = straight / "checkpoints" / "last.ckpt"
    agent = load_algorithm(ckpt, device="cpu")
    for name in names:
        assert torch.equal(agent.state_dict()[name], a["state_dict"][name])
    result = evaluate_checkpoint(ckpt, "Pendulum-v1", episodes=1, output_dir=tmp_path)

    def play(model) -> float:
        env = make_eval_env("Pendulum-v1")
        returns, _ = evaluate_episodes(lambda obs: model.predict(obs, deterministic=True)[0], env, 1, seed=0)
        return float(returns.mean())

    assert result["mean_reward"] == play(agent)
    for stats in agent.normalizer.obs_stats.values():
        stats.mean.zero_()
        stats.var.fill_(1.0)
    assert result["mean_reward"] != play(agent)
