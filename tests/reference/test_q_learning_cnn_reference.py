"""DQN and QR-DQN with ``CnnPolicy`` on Atari frames, side by side with Stable-Baselines3 and sb3-contrib.

The same NatureCNN weights, the same batches of (4, 84, 84) uint8 frames (as the Atari env and the frame-once
buffer give them), several gradient steps with target copies between them: every parameter and the loss agree to
float32 rounding, so the image path (uint8 frames / 255, the convolutions, the heads) is the reference's.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import sb3_contrib
import stable_baselines3 as sb3
import torch
from gymnasium import spaces
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from lit_rl import DQN, QRDQN
from lit_rl.buffers.replay import ReplayBatch
from tests.reference.sb3_weights import Pair, assert_pairs_close, copy_into_lit, without_trainer

OBS = spaces.Box(0, 255, shape=(4, 84, 84), dtype=np.uint8)
ACT = spaces.Discrete(4)
BATCH, STEPS = 16, 6
RTOL, ATOL = 1e-4, 1e-6  # float32 rounding through three convolutions over 84 x 84 frames
KW = dict(
    learning_rate=1e-3, batch_size=BATCH, buffer_size=100, gamma=0.99, target_update_interval=3, learning_starts=0
)
ALGOS = {
    "dqn": (sb3.DQN, DQN, {"policy_kwargs": {"features_extractor_kwargs": {"features_dim": 64}}}),
    "qrdqn": (sb3_contrib.QRDQN, QRDQN, {"policy_kwargs": {"features_extractor_kwargs": {"features_dim": 64},
                                                            "n_quantiles": 8}}),
}  # fmt: skip


class FramesOnlyEnv(gym.Env):
    """Carries the spaces of Atari frames; the update tests never step it."""

    def __init__(self) -> None:
        self.observation_space, self.action_space = OBS, ACT

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def network_pairs(name: str, ref: torch.nn.Module, lit: torch.nn.Module) -> list[Pair]:
    """The two networks' parameters in order: both are NatureCNN, then the head."""
    ref_params, lit_params = list(ref.parameters()), list(lit.parameters())
    assert [tuple(p.shape) for p in ref_params] == [tuple(p.shape) for p in lit_params], name
    return [Pair(f"{name}.{i}", r, m) for i, (r, m) in enumerate(zip(ref_params, lit_params, strict=True))]


def batch_at(step: int) -> ReplayBatch:
    g = torch.Generator().manual_seed(100 + step)
    frames = torch.randint(0, 256, (2, BATCH, *OBS.shape), generator=g, dtype=torch.uint8)
    return ReplayBatch(
        observations=frames[0],
        actions=torch.arange(BATCH) % ACT.n,
        next_observations=frames[1],
        rewards=torch.randn(BATCH, generator=g).sign(),  # clipped rewards, as Atari's
        terminated=(torch.rand(BATCH, generator=g) < 0.2).float(),
    )


@pytest.mark.parametrize("algo", list(ALGOS))
def test_cnn_updates_on_atari_frames_equal_the_reference(algo):
    ref_class, lit_class, extra = ALGOS[algo]
    ref = ref_class("CnnPolicy", FramesOnlyEnv(), seed=0, device="cpu", **KW, **extra)
    ref.set_logger(Logger(folder=None, output_formats=[]))
    lit = lit_class("CnnPolicy", **KW, **extra)
    lit.build_networks_for(OBS, ACT)
    without_trainer(lit)
    online = network_pairs("online", ref.policy.q_net if algo == "dqn" else ref.policy.quantile_net, lit.q_net)
    target = network_pairs("target", ref.policy.q_net_target if algo == "dqn" else ref.policy.quantile_net_target,
                           lit.q_net_target)  # fmt: skip
    with torch.no_grad():  # the target off the online net, so reading the wrong one shows
        for p in target:
            p.ref.add_(torch.randn(p.ref.shape, generator=torch.Generator().manual_seed(1)) * 0.01)
    copy_into_lit(online + target)
    for step in range(STEPS):
        batch = batch_at(step)
        samples = ReplayBufferSamples(
            observations=batch.observations.clone(), actions=batch.actions.reshape(-1, 1).clone(),
            next_observations=batch.next_observations.clone(), dones=batch.terminated.reshape(-1, 1).clone(),
            rewards=batch.rewards.reshape(-1, 1).clone(),
        )  # fmt: skip
        ref.replay_buffer.sample = lambda *args, _s=samples, **kwargs: _s
        ref.train(gradient_steps=1, batch_size=BATCH)
        lit.metrics.sums, lit.metrics.counts = {}, {}
        lit.update(batch)
        ref._on_step()
        lit.on_env_step()
        assert_pairs_close(online + target, rtol=RTOL, atol=ATOL, when=f"after step {step + 1} ({algo})")
        ref_loss, lit_loss = float(ref.logger.name_to_value["train/loss"]), float(lit.metrics.sums["train/loss"])
        assert lit_loss == pytest.approx(ref_loss, rel=RTOL, abs=ATOL)
    diffs = [float((p.lit - p.ref).abs().max()) for p in online]
    print(f"{algo}: after {STEPS} steps on (4, 84, 84) frames, largest parameter difference {max(diffs):.1e}")
