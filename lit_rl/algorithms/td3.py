"""TD3 (Fujimoto et al., 2018): twin delayed DDPG with target policy smoothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces

from lit_rl.algorithms.crossq import split_net_arch
from lit_rl.algorithms.gsde import reject_sde_arguments
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm
from lit_rl.algorithms.optimizers import make_adam
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.checks import check_float, check_int
from lit_rl.nets.actors import DeterministicActor
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.mlp import activation_class
from lit_rl.nets.target import make_target, update_target

DEFAULT_NET_ARCH = {"pi": [400, 300], "qf": [400, 300]}
POLICY_KWARGS = {"net_arch", "activation_fn", "n_critics"}


class TD3(OffPolicyAlgorithm):
    """Twin Delayed DDPG as in Stable-Baselines3 2.x.

    Per gradient step: critic step against
    ``r + (1 - terminated) * gamma * min_i Q'_i(s', clip(pi'(s') + clip(eps, -c, c), -1, 1))``
    with ``eps ~ N(0, target_policy_noise^2)`` and ``c = target_noise_clip``;
    every ``policy_delay`` steps an actor step on ``-Q_0(s, pi(s))`` (the first
    critic only) followed by Polyak updates of the target actor and critics.
    Exploration comes from ``action_noise`` (default none, as SB3).

    ``policy_kwargs``: ``net_arch`` (default pi and qf [400, 300]),
    ``activation_fn`` ("relu"), ``n_critics`` (2).
    """

    def __init__(
        self,
        policy: str = "MlpPolicy",
        learning_rate: float = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        policy_delay: int = 2,
        target_policy_noise: float = 0.2,
        target_noise_clip: float = 0.5,
        **kwargs: Any,
    ) -> None:
        reject_sde_arguments(type(self).__name__, kwargs)
        super().__init__(
            policy=policy,
            learning_rate=learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            **kwargs,
        )
        self.policy_delay = check_int("policy_delay", policy_delay, minimum=1)
        self.target_policy_noise = check_float("target_policy_noise", target_policy_noise, 0.0, np.inf, low_open=False)
        self.target_noise_clip = check_float("target_noise_clip", target_noise_clip, 0.0, np.inf, low_open=False)
        unknown = set(self.policy_kwargs) - POLICY_KWARGS
        if unknown:
            raise ValueError(f"policy_kwargs has unknown keys {sorted(unknown)}; allowed: {sorted(POLICY_KWARGS)}")
        self.net_arch_pi, self.net_arch_qf = split_net_arch(self.policy_kwargs.get("net_arch"), DEFAULT_NET_ARCH)
        self.n_critics = check_int("policy_kwargs.n_critics", self.policy_kwargs.get("n_critics", 2), minimum=1)
        self.activation_fn = activation_class(self.policy_kwargs.get("activation_fn", "relu"))
        self.save_hyperparameters(ignore=["replay_buffer_class"])

    def build_networks(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        obs_dim, action_dim = int(np.prod(observation_space.shape)), int(np.prod(action_space.shape))
        self.actor = DeterministicActor(obs_dim, action_dim, self.net_arch_pi, self.activation_fn)
        self.critic = QEnsemble(obs_dim, action_dim, self.net_arch_qf, self.n_critics, self.activation_fn, None)
        self.actor_target = make_target(self.actor)
        self.critic_target = make_target(self.critic)

    def configure_optimizers(self):
        lr = self.initial_learning_rate()
        return [
            make_adam(self.actor.parameters(), lr=lr),
            make_adam(self.critic.parameters(), lr=lr),
        ]

    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs)

    def update(self, batch: ReplayBatch) -> None:
        actor_opt, critic_opt = self.optimizers()
        self._n_updates += 1

        # Critic: target policy smoothing, then the minimum over the target critics, no gradients.
        with torch.no_grad():
            next_actions = self.actor_target(batch.next_observations)
            if self.target_policy_noise > 0 and self.target_noise_clip > 0:
                noise = torch.randn_like(next_actions) * self.target_policy_noise
                next_actions = (next_actions + noise.clamp(-self.target_noise_clip, self.target_noise_clip)).clamp(
                    -1.0, 1.0
                )
            next_q = self.critic_target(batch.next_observations, next_actions).min(dim=0).values
            target = batch.rewards + (1.0 - batch.terminated) * self.discounts(batch) * next_q
        q = self.critic(batch.observations, batch.actions)
        critic_loss = sum(F.mse_loss(q_i, target) for q_i in q)  # SB3's TD3: no factor 0.5
        critic_opt.zero_grad(set_to_none=True)
        self.manual_backward(critic_loss)
        critic_opt.step()
        self.record("train/critic_loss", critic_loss)

        if self._n_updates % self.policy_delay == 0:
            # Actor: the first critic only (SB3's q1_forward); no gradient work on critic parameters.
            self.critic.requires_grad_(False)
            actor_loss = -self.critic.member_forward(batch.observations, self.actor(batch.observations), 0).mean()
            self.critic.requires_grad_(True)
            actor_opt.zero_grad(set_to_none=True)
            self.manual_backward(actor_loss)
            actor_opt.step()
            self.record("train/actor_loss", actor_loss)
            update_target(self.critic, self.critic_target, self.tau)
            update_target(self.actor, self.actor_target, self.tau)
