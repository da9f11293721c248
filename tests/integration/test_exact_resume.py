"""Exact resume: N steps in one run == about N/2 steps, then a resumed run to N (bitwise, on CPU).

The split point is a multiple of every algorithm's ``train_freq`` (DQN: 4), as a run's rollouts are
whole: a budget that ends mid-rollout changes where gradient steps fall, in SB3 as here.
"""

from __future__ import annotations

import pytest
import torch

from tests.helpers import read_summary, run_launcher

# Episodes are 200 steps: the split at 252 falls mid-episode, so the env state must be restored.
COMMON = ["trainer=smoke", "env=Pendulum-v1", "env.max_episode_steps=200", "eval.freq=252", "eval.episodes=2"]


def _state(run_dir):
    return torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)


# Mixed precision too: bf16 CrossQ (BatchRenorm statistics in fp32 across the split), and 16-mixed SAC,
# whose gradient scales (one GradScaler per optimizer) must travel in the checkpoint.
@pytest.mark.parametrize(
    "algo, precision",
    [("crossq", "32-true"), ("td3", "32-true"), ("dqn", "32-true"), ("crossq", "bf16-mixed"), ("sac", "16-mixed")],
)
def test_split_run_equals_straight_run(tmp_path, algo, precision):
    env = ["env=CartPole-v1", "env.max_episode_steps=200"] if algo == "dqn" else []
    straight, half, resumed = tmp_path / "straight", tmp_path / "half", tmp_path / "resumed"
    args = [*COMMON, f"algo={algo}", *env, f"trainer.precision={precision}"]
    if algo == "td3":
        args.append("algo.action_noise=ornstein-uhlenbeck")  # noise state must survive the checkpoint too
    assert run_launcher(straight, *args, "total_timesteps=500").returncode == 0
    assert run_launcher(half, *args, "total_timesteps=252").returncode == 0
    proc = run_launcher(resumed, *args, "total_timesteps=500", f"ckpt_path={half}/checkpoints/last.ckpt")
    assert proc.returncode == 0, proc.stderr[-3000:]

    a, b = _state(straight), _state(resumed)
    assert a["state_dict"].keys() == b["state_dict"].keys()
    for name, tensor in a["state_dict"].items():
        assert torch.equal(tensor, b["state_dict"][name]), f"{algo}: parameter {name} differs after resume"
    for opt_a, opt_b in zip(a["optimizer_states"], b["optimizer_states"], strict=True):
        for key, state in opt_a["state"].items():
            for field, value in state.items():
                assert torch.equal(torch.as_tensor(value), torch.as_tensor(opt_b["state"][key][field]))
    buffer_a, buffer_b = a["rl_state"]["training"]["replay_buffer"], b["rl_state"]["training"]["replay_buffer"]
    assert buffer_a["extra"] == buffer_b["extra"] and buffer_a["extra"]["pos"] == 500
    for name, stored in buffer_a["storage"].items():
        assert torch.equal(stored, buffer_b["storage"][name]), f"{algo}: replay buffer {name} differs after resume"
    training_a, training_b = a["rl_state"]["training"], b["rl_state"]["training"]
    assert training_a["loss_scaling"] == training_b["loss_scaling"]
    assert len(training_a["loss_scaling"]) == (3 if precision == "16-mixed" else 0)  # SAC: entropy, critic, actor
    for stats in ("ep_returns", "ep_lengths", "ep_success_buffer"):
        assert training_a[stats] == training_b[stats], f"{algo}: {stats} differs after resume"
    returns_and_lengths = [[(e["r"], e["l"]) for e in t["ep_info_buffer"]] for t in (training_a, training_b)]
    assert returns_and_lengths[0] == returns_and_lengths[1], f"{algo}: ep_info_buffer differs (wall time 't' may)"
    assert len(training_a["ep_info_buffer"]) == len(training_a["ep_returns"]) > 0  # one record per ended episode
    sa, sb = read_summary(straight), read_summary(resumed)
    assert sa["env_steps"] == sb["env_steps"] == 500
    assert sa["final_eval_return"] == sb["final_eval_return"]
    evals_a = a["callbacks"]
    evals_b = b["callbacks"]
    assert [e for cb in evals_a.values() for e in cb.get("evaluations", [])] == [
        e for cb in evals_b.values() for e in cb.get("evaluations", [])
    ]
