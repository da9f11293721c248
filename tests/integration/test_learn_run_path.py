"""``model.learn()`` runs on the launcher's Trainer, evaluation and checkpoints (lit_rl.core.trainer)."""

from __future__ import annotations

import gymnasium as gym
import lightning as L
import pytest
import torch

from lit_rl import SAC
from lit_rl.callbacks import PeriodicEvaluation

TINY = {"net_arch": [16]}


def test_learn_with_eval_freq_evaluates_and_writes_the_launchers_checkpoints(tmp_path):
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=16, policy_kwargs=TINY, seed=0)
    seen = {}

    class Spy(L.Callback):  # reads the Trainer's callbacks at the end of the run
        def on_train_end(self, trainer, pl_module):
            seen["evals"] = [cb for cb in trainer.callbacks if isinstance(cb, PeriodicEvaluation)]

    model.learn(300, eval_freq=100, n_eval_episodes=1, default_root_dir=tmp_path, tb_log_name="run", callback=Spy())
    (evaluation,) = seen["evals"]
    assert [e["step"] for e in evaluation.evaluations] == [100, 200, 300]
    checkpoints = tmp_path / "run" / "checkpoints"
    assert (checkpoints / "last.ckpt").is_file() and (checkpoints / "best.ckpt").is_file()
    # The checkpoint is the launcher's format: the Python API loads it and predicts as the model does.
    loaded = SAC.load(checkpoints / "last.ckpt", device="cpu")
    assert loaded.num_timesteps == 300
    obs = torch.zeros(3).numpy()
    assert (loaded.predict(obs, deterministic=True)[0] == model.predict(obs, deterministic=True)[0]).all()


def test_learn_continues_its_env_when_evaluation_is_added_later():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=16, policy_kwargs=TINY, seed=0)
    model.learn(100)
    train_env = model._learn_datamodule.train_env
    model.learn(100, reset_num_timesteps=False, eval_freq=100, n_eval_episodes=1)
    assert model._learn_datamodule.train_env is train_env and model.num_timesteps == 200
    assert model._learn_datamodule.eval_env is not None


def test_eval_freq_with_an_env_object_is_refused_with_the_alternative():
    model = SAC("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=50, policy_kwargs=TINY)
    with pytest.raises(ValueError, match=r"eval_freq=100.*EvalCallback"):
        model.learn(100, eval_freq=100)


def test_tensorboard_log_writes_event_files_with_the_training_metrics(tmp_path):
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=16, policy_kwargs=TINY,
                tensorboard_log=str(tmp_path))  # fmt: skip
    model.learn(200, log_every_n_steps=100, tb_log_name="sac_run")
    model.learn(100, log_every_n_steps=100, tb_log_name="sac_run", reset_num_timesteps=False)  # continues sac_run_1
    model.learn(100, log_every_n_steps=100, tb_log_name="sac_run")  # a new run: sac_run_2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sac_run_1", "sac_run_2"]  # SB3's folder names
    events = max((tmp_path / "sac_run_1").glob("events.out.tfevents.*"), key=lambda p: p.stat().st_size)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = EventAccumulator(str(events)).Reload().Tags()["scalars"]
    assert "train/critic_loss" in tags
