"""SAC (Haarnoja et al., 2018): soft actor-critic with twin critics, target critics and a learned temperature."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces

from lit_rl.algorithms.crossq import split_net_arch
from lit_rl.algorithms.entropy import EntropyCoefficient
from lit_rl.algorithms.gsde import SDE_POLICY_DEFAULTS, StateDependentExploration, sde_actor_kwargs
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm
from lit_rl.algorithms.optimizers import make_adam
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.checks import check_int
from lit_rl.nets.actors import SquashedGaussianActor
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.mlp import activation_class
from lit_rl.nets.target import make_target, update_target

DEFAULT_NET_ARCH = {"pi": [256, 256], "qf": [256, 256]}
POLICY_KWARGS = {"net_arch", "activation_fn", "n_critics", *SDE_POLICY_DEFAULTS}


class SAC(StateDependentExploration, OffPolicyAlgorithm):
    """Soft Actor-Critic as in Stable-Baselines3 2.x.

    Per gradient step, in SB3's order: entropy-coefficient step (on the
    log-probability of fresh actions pi(s)), critic step against
    ``r + (1 - terminated) * gamma * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))``
    with ``a' ~ pi(s')`` and the target critics Q', actor step on
    ``alpha * log pi(a|s) - min_i Q_i(s, a)``, then a Polyak update of the
    target critics on every ``target_update_interval``-th gradient step
    counted, as SB3 counts them, from 0 within the gradient steps that follow
    one rollout (SB3's ``train`` call): the first step after each rollout
    always updates them, so with ``gradient_steps=1`` every step does.

    ``use_sde`` explores with gSDE (:class:`StateDependentExploration`)
    instead of independent Gaussian noise per step.

    ``policy_kwargs``: ``net_arch`` (default pi and qf [256, 256]),
    ``activation_fn`` ("relu"), ``n_critics`` (2); with gSDE also
    ``log_std_init`` (-3), ``full_std`` (True), ``use_expln`` (False),
    ``clip_mean`` (2.0).
    """

    def __init__(
        self,
        policy: str = "MlpPolicy",
        learning_rate: float = 3e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        ent_coef: str | float = "auto",
        target_update_interval: int = 1,
        target_entropy: str | float = "auto",
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        use_sde_at_warmup: bool = False,
        **kwargs: Any,
    ) -> None:
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
        self.target_update_interval = check_int("target_update_interval", target_update_interval, minimum=1)
        self._gradient_step_in_rollout = 0  # SB3's ``gradient_step`` loop index in ``train``
        self.ent_coef_spec, self.target_entropy_spec = ent_coef, target_entropy
        EntropyCoefficient.check(ent_coef, target_entropy)
        unknown = set(self.policy_kwargs) - POLICY_KWARGS
        if unknown:
            raise ValueError(f"policy_kwargs has unknown keys {sorted(unknown)}; allowed: {sorted(POLICY_KWARGS)}")
        self.net_arch_pi, self.net_arch_qf = split_net_arch(self.policy_kwargs.get("net_arch"), DEFAULT_NET_ARCH)
        self.n_critics = check_int("policy_kwargs.n_critics", self.policy_kwargs.get("n_critics", 2), minimum=1)
        self.activation_fn = activation_class(self.policy_kwargs.get("activation_fn", "relu"))
        self.init_sde(use_sde, sde_sample_freq, use_sde_at_warmup)
        self.actor_sde_kwargs = sde_actor_kwargs(self.use_sde, self.policy_kwargs)
        self.save_hyperparameters(ignore=["replay_buffer_class"])

    def build_networks(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        obs_dim, action_dim = int(np.prod(observation_space.shape)), int(np.prod(action_space.shape))
        self.actor = SquashedGaussianActor(
            obs_dim, action_dim, self.net_arch_pi, self.activation_fn, batch_norm=None, **self.actor_sde_kwargs
        )
        self.critic = QEnsemble(obs_dim, action_dim, self.net_arch_qf, self.n_critics, self.activation_fn, None)
        self.critic_target = make_target(self.critic)
        self.entropy = EntropyCoefficient(self.ent_coef_spec, self.target_entropy_spec, action_dim)

    def configure_optimizers(self):
        lr = self.initial_learning_rate()
        optimizers = [
            make_adam(self.actor.parameters(), lr=lr),
            make_adam(self.critic.parameters(), lr=lr),
        ]
        if self.entropy.learned:
            optimizers.append(make_adam(self.entropy.parameters(), lr=lr))
        return optimizers

    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs, deterministic=deterministic)

    def on_rollout_step(self, step: int) -> None:
        if step == 0:  # a new rollout: the gradient steps after it count from 0 again (SB3's train call)
            self._gradient_step_in_rollout = 0
        super().on_rollout_step(step)

    def update(self, batch: ReplayBatch) -> None:
        optimizers = self.optimizers()
        actor_opt, critic_opt = optimizers[0], optimizers[1]
        self._n_updates += 1
        self.reset_noise_for_update()

        # Fresh actions for the entropy and actor losses; alpha is read before its own step (SB3).
        actions_pi, log_prob = self.actor.action_log_prob(batch.observations)
        alpha = self.entropy.value().detach()
        if self.entropy.learned:
            ent_opt = optimizers[2]
            ent_loss = self.entropy.loss(log_prob)
            ent_opt.zero_grad(set_to_none=True)
            self.manual_backward(ent_loss)
            ent_opt.step()
            self.record("train/ent_coef_loss", ent_loss)
        self.record("train/ent_coef", alpha)

        # Critic: soft Bellman target from the target critics, no gradients.
        with torch.no_grad():
            next_actions, next_log_prob = self.actor.action_log_prob(batch.next_observations)
            next_q = self.critic_target(batch.next_observations, next_actions).min(dim=0).values
            target = batch.rewards + (1.0 - batch.terminated) * self.discounts(batch) * (next_q - alpha * next_log_prob)
        q = self.critic(batch.observations, batch.actions)
        critic_loss = 0.5 * sum(F.mse_loss(q_i, target) for q_i in q)
        critic_opt.zero_grad(set_to_none=True)
        self.manual_backward(critic_loss)
        critic_opt.step()
        self.record("train/critic_loss", critic_loss)

        # Actor: against the just-updated critics; no gradient work on critic parameters.
        self.critic.requires_grad_(False)
        q_pi = self.critic(batch.observations, actions_pi).min(dim=0).values
        self.critic.requires_grad_(True)
        actor_loss = (alpha * log_prob - q_pi).mean()
        actor_opt.zero_grad(set_to_none=True)
        self.manual_backward(actor_loss)
        actor_opt.step()
        self.record("train/actor_loss", actor_loss)

        # SB3 tests its loop index within one train call, not the total number of updates.
        if self._gradient_step_in_rollout % self.target_update_interval == 0:
            update_target(self.critic, self.critic_target, self.tau)
        self._gradient_step_in_rollout += 1
