"""The Stable-Baselines3 API: save/load, parameters, replay buffer files, predict, SB3-style callbacks."""

from __future__ import annotations

import gymnasium as gym
import lightning as L
import numpy as np
import pytest
import torch

from lit_rl import SAC, TD3, CrossQ
from lit_rl.callbacks.sb3 import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    EvalCallback,
    EveryNTimesteps,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
)
from lit_rl.core.persistence import load_algorithm
from tests.helpers import run_launcher

TINY = {"net_arch": [16, 16]}
OBS = np.random.default_rng(0).uniform(-1, 1, size=(6, 3)).astype(np.float32)


def small(cls=CrossQ, **kwargs):
    return cls("MlpPolicy", learning_starts=40, batch_size=16, buffer_size=1000, policy_kwargs=TINY, seed=0, **kwargs)


@pytest.fixture(scope="module")
def trained():
    return small(SAC).learn(120, env="Pendulum-v1")


def test_predict_single_batched_deterministic_and_stochastic(trained):
    single, state = trained.predict(OBS[0], deterministic=True)
    assert single.shape == (1,) and state is None and np.all(np.abs(single) <= 2.0)
    batch, _ = trained.predict(OBS, deterministic=True)
    assert batch.shape == (6, 1)
    np.testing.assert_allclose(batch[0], single, rtol=1e-6)
    np.testing.assert_array_equal(batch, trained.predict(OBS, deterministic=True)[0])
    assert not np.array_equal(trained.predict(OBS)[0], trained.predict(OBS)[0])  # stochastic: samples differ
    with pytest.raises(ValueError, match=r"observation shape \(6, 4\)"):
        trained.predict(np.zeros((6, 4), dtype=np.float32))


def test_save_load_predicts_identically_on_cpu(trained, tmp_path):
    path = trained.save(tmp_path / "model.pt")
    loaded = SAC.load(path, device="cpu")
    assert loaded.device == torch.device("cpu") and loaded.num_timesteps == 120
    np.testing.assert_array_equal(trained.predict(OBS, deterministic=True)[0], loaded.predict(OBS, deterministic=True)[0])
    assert type(load_algorithm(path)) is SAC
    with pytest.raises(ValueError, match="holds a SAC model, not a TD3"):
        TD3.load(path)


def test_load_rejects_missing_truncated_and_foreign_files(trained, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        SAC.load(tmp_path / "nope.pt")
    data = trained.save(tmp_path / "model.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cannot be read as a checkpoint"):
        SAC.load(tmp_path / "cut.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a lit_rl checkpoint"):
        SAC.load(tmp_path / "other.pt")
    if not torch.cuda.is_available():  # as SB3: the CPU, with a warning that says so
        with pytest.warns(UserWarning, match="device='cuda' is not available"):
            assert SAC.load(tmp_path / "model.pt", device="cuda").device.type == "cpu"


def test_get_and_set_parameters_round_trip(trained):
    params = trained.get_parameters()
    assert "policy" in params and any(k.startswith("optimizer_") for k in params)
    other = small(SAC).learn(50, env="Pendulum-v1")
    assert not np.array_equal(other.predict(OBS, deterministic=True)[0], trained.predict(OBS, deterministic=True)[0])
    other.set_parameters(params)
    np.testing.assert_array_equal(other.predict(OBS, deterministic=True)[0], trained.predict(OBS, deterministic=True)[0])


def test_load_then_learn_continues_counters_and_buffer(trained, tmp_path):
    trained.save(tmp_path / "model.pt")
    trained.save_replay_buffer(tmp_path / "buffer.pt")
    loaded = SAC.load(tmp_path / "model.pt", device="cpu")
    loaded.load_replay_buffer(tmp_path / "buffer.pt")
    loaded.learn(30, env="Pendulum-v1", reset_num_timesteps=False)
    assert loaded.num_timesteps == 150 and len(loaded.replay_buffer) == 150
    original = trained.replay_buffer
    torch.testing.assert_close(loaded.replay_buffer.observations[:120], original.observations[:120])
    torch.testing.assert_close(loaded.replay_buffer.rewards[:120], original.rewards[:120])


def test_a_launcher_checkpoint_loads_with_the_python_api(tmp_path):
    run = tmp_path / "run"
    assert run_launcher(run, "trainer=smoke", "env=Pendulum-v1", "algo=td3").returncode == 0
    for name in ("last.ckpt", "best.ckpt"):
        model = TD3.load(run / "checkpoints" / name, device="cpu")
        assert model.num_timesteps > 0
        assert gym.spaces.Box(-2, 2, (1,)).contains(model.predict(OBS[0], deterministic=True)[0])


class StopAt(BaseCallback):
    def __init__(self, step: int) -> None:
        super().__init__()
        self.step, self.seen_keys = step, set()

    def _on_step(self) -> bool:
        self.seen_keys |= set(self.locals)
        return self.num_timesteps < self.step


class CountFits(L.Callback):
    def __init__(self) -> None:
        self.starts = 0

    def on_train_start(self, trainer, pl_module) -> None:
        self.starts += 1


def test_on_step_false_stops_at_that_step_next_to_lightning_callbacks():
    stopper, counter = StopAt(77), CountFits()
    model = small().learn(500, env="Pendulum-v1", callback=[stopper, counter])
    assert model.num_timesteps == 77 and stopper.n_calls == 77 and counter.starts == 1
    assert {"actions", "rewards", "dones", "infos", "new_obs"} <= stopper.seen_keys
    assert model._n_updates == 77 - 40 - 1  # no gradient step after the stopping env step


def test_callback_list_every_n_timesteps_and_function_callbacks():
    calls = []
    every = EveryNTimesteps(25, StopAt(10**9))
    model = small().learn(100, env="Pendulum-v1", callback=CallbackList([every, lambda loc, glob: calls.append(1) or True]))
    assert model.num_timesteps == 100 and len(calls) == 100 and every.callback.n_calls == 4


def test_eval_callback_saves_best_model_and_stops_on_reward_threshold(tmp_path):
    stop = StopTrainingOnRewardThreshold(reward_threshold=-1e9)  # any return reaches it: stop at the first eval
    evaluation = EvalCallback(
        "Pendulum-v1",
        callback_on_new_best=stop,
        n_eval_episodes=2,
        eval_freq=60,
        log_path=tmp_path,
        best_model_save_path=tmp_path,
        verbose=0,
        seed=0,
    )
    model = small().learn(1000, env="Pendulum-v1", callback=evaluation)
    assert model.num_timesteps == 60
    best = CrossQ.load(tmp_path / "best_model.zip", device="cpu")
    np.testing.assert_array_equal(best.predict(OBS, deterministic=True)[0], model.predict(OBS, deterministic=True)[0])
    log = np.load(tmp_path / "evaluations.npz")
    assert log["timesteps"].tolist() == [60] and log["results"].shape == (1, 2)


def test_no_model_improvement_stops_after_patience():
    patience = StopTrainingOnNoModelImprovement(max_no_improvement_evals=1, min_evals=1)
    evaluation = EvalCallback("Pendulum-v1", callback_after_eval=patience, n_eval_episodes=1, eval_freq=20, verbose=0)
    model = small().learn(2000, env="Pendulum-v1", callback=evaluation)
    # Stops at the first evaluation after min_evals that follows two without a new best: a multiple of 20, early.
    assert model.num_timesteps % 20 == 0 and model.num_timesteps < 2000
    assert patience.no_improvement_evals == 2


def test_checkpoint_callback_writes_model_and_replay_buffer_files(tmp_path):
    callback = CheckpointCallback(save_freq=50, save_path=tmp_path, name_prefix="ck", save_replay_buffer=True)
    small().learn(100, env="Pendulum-v1", callback=callback)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["ck_100_steps.zip", "ck_50_steps.zip", "ck_replay_buffer_100_steps.pkl", "ck_replay_buffer_50_steps.pkl"]
    model = CrossQ.load(tmp_path / "ck_50_steps.zip", device="cpu")
    model.load_replay_buffer(tmp_path / "ck_replay_buffer_50_steps.pkl")
    assert model.num_timesteps == 50
