"""gSDE during collection, through ``learn`` on a real env: when the exploration matrix is resampled, and warm-up."""

from __future__ import annotations

import pytest
import torch

from lit_rl import SAC, CrossQ
from lit_rl.envs import make_vec_env

TINY = {"net_arch": {"pi": [16, 16], "qf": [16, 16]}}


class RecordingMixin:
    """Records, at every env step, which exploration matrices the policy acts with."""

    def on_rollout_step(self, step):
        super().on_rollout_step(step)  # resamples when due; the collector acts right after this hook
        matrices = self.actor.action_dist.exploration_matrices
        # Values, not id(): a freed tensor's id can be reused by the next one.
        self.matrices.append((tuple(matrices.flatten()[:4].tolist()), matrices.shape[0], matrices.requires_grad))


class RecordingSAC(RecordingMixin, SAC):
    pass


class RecordingCrossQ(RecordingMixin, CrossQ):
    pass


def run(cls, total: int, n_envs: int = 1, **kwargs):
    model = cls(policy_kwargs=TINY, buffer_size=1_000, batch_size=16, seed=0, use_sde=True, **kwargs)
    model.matrices = []
    env = make_vec_env("Pendulum-v1", n_envs, seed=0)
    model.learn(total, env=env)
    env.close()
    return model


def change_steps(matrices: list[tuple]) -> list[int]:
    values = [m[0] for m in matrices]
    return [i for i in range(1, len(values)) if values[i] != values[i - 1]]


@pytest.mark.parametrize("cls", [RecordingSAC, RecordingCrossQ], ids=["sac", "crossq"])
@pytest.mark.parametrize(("sde_sample_freq", "expected_period"), [(4, 4), (-1, 8)])
def test_matrix_is_resampled_at_rollout_start_and_every_sde_sample_freq_steps(cls, sde_sample_freq, expected_period):
    # learning_starts past the run: no update touches the matrices, only collection does.
    model = run(cls, 48, train_freq=8, learning_starts=1_000, sde_sample_freq=sde_sample_freq)
    assert len(model.matrices) == 48
    assert change_steps(model.matrices) == list(range(expected_period, 48, expected_period))


def test_rollouts_act_with_their_own_matrices_not_the_updates():
    # Updates between rollouts resample a shared matrix with a graph to log_std; collection must not use it.
    model = run(RecordingSAC, 48, n_envs=2, train_freq=4, learning_starts=8, sde_sample_freq=-1)
    assert len(model.matrices) == 24 and model._n_updates > 0
    assert change_steps(model.matrices) == list(range(4, 24, 4))
    assert all(n == 2 and not requires_grad for _, n, requires_grad in model.matrices)


def test_one_matrix_per_env():
    model = run(RecordingSAC, 20, n_envs=2, learning_starts=1_000)
    assert model.actor.action_dist.exploration_matrices.shape == (2, 16, 1)


@pytest.mark.parametrize("at_warmup", [True, False])
def test_use_sde_at_warmup_acts_with_the_policy_before_learning_starts(at_warmup):
    # One rollout of 200 steps before learning_starts: one matrix for the whole run, no update.
    model = run(RecordingSAC, 200, train_freq=200, learning_starts=1_000, use_sde_at_warmup=at_warmup)
    batch = model.replay_buffer.sample(100)
    with torch.no_grad():
        policy_actions = model.actor(batch.observations)
    matches = torch.isclose(batch.actions, policy_actions, atol=1e-5).all(dim=-1)
    assert bool(matches.all()) if at_warmup else not bool(matches.any())
