"""SAC (Haarnoja et al., 2018): soft actor-critic with twin critics, target critics and a learned temperature."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.compiled import compiled, run_update
from lit_rl.core.entropy import EntropyRegularized
from lit_rl.core.gradients import frozen
from lit_rl.core.hyperparameters import GymEnv, Schedule
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.nets.target import update_target
from lit_rl.policies.sac import SACPolicy
from lit_rl.utils.checks import check_int
from lit_rl.utils.declared import bound_arguments


def critic_loss(
    policy: SACPolicy, batch: ReplayBatch, alpha: torch.Tensor, discount: torch.Tensor | float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``0.5 * sum_i MSE(Q_i(s, a), r + (1 - terminated) * discount * (min_i Q'_i(s', a') - alpha * log pi(a'|s')))``.

    ``a' ~ pi(s')``; the soft Bellman target comes from the target critics Q', without gradients.
    """
    with torch.no_grad():
        next_actions, next_log_prob = policy.actor.action_log_prob(batch.next_observations)
        next_q = policy.critic_target.q_values(batch.next_observations, next_actions).min(dim=0).values
        target = batch.rewards + (1.0 - batch.terminated) * discount * (next_q - alpha * next_log_prob)
    # 0.5 * sum_i MSE(Q_i, target); with policy_kwargs.net.critic_head=categorical, a two-hot cross-entropy.
    loss = policy.critic.td_loss(policy.critic.q_outputs(batch.observations, batch.actions), target)
    return loss, {"train/critic_loss": loss.detach()}


def actor_loss(
    policy: SACPolicy, obs: torch.Tensor, actions: torch.Tensor, log_prob: torch.Tensor, alpha: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``mean(alpha * log pi(a|s) - min_i Q_i(s, a))`` for ``a ~ pi(s)``; no gradient work on critic parameters."""
    with frozen(policy.critic):
        q_pi = policy.critic.q_values(obs, actions).min(dim=0).values
    loss = (alpha * log_prob - q_pi).mean()
    return loss, {"train/actor_loss": loss.detach()}


class SAC(EntropyRegularized, OffPolicyAlgorithm):
    """Soft Actor-Critic as in Stable-Baselines3 2.x (``policy_kwargs``: see :class:`SACPolicy`).

    Per gradient step, in SB3's order: entropy-coefficient step (on the
    log-probability of fresh actions pi(s)), critic step against
    ``r + (1 - terminated) * gamma * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))``
    with ``a' ~ pi(s')`` and the target critics Q', actor step on
    ``alpha * log pi(a|s) - min_i Q_i(s, a)``, then a Polyak update of the
    target critics on every ``target_update_interval``-th gradient step
    counted, as SB3 counts them, from 0 within the gradient steps that follow
    one rollout (SB3's ``train`` call): the first step after each rollout
    always updates them, so with ``gradient_steps=1`` every step does.
    ``use_sde`` explores with gSDE instead of independent Gaussian noise per step.
    """

    default_policy_class = SACPolicy

    def __init__(
        self,
        policy: str | type[SACPolicy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 3e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | str | None = None,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        verbose: int = 0,
        tensorboard_log: str | None = None,
        device: torch.device | str = "auto",
        support_multi_env: bool = True,
        monitor_wrapper: bool = True,
        seed: int | None = None,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        use_sde_at_warmup: bool = False,
        sde_support: bool = True,
        supported_action_spaces: tuple[type[spaces.Space], ...] | None = None,
        action_noise_std: float = 0.1,
        normalize_obs: bool = False,
        normalize_reward: bool = False,
        normalize_kwargs: dict[str, Any] | None = None,
        _init_setup_model: bool = True,
        ent_coef: str | float = "auto",  # learned from 1.0 ("auto_0.1": from 0.1) or a fixed number
        target_entropy: str | float = "auto",  # "auto": -dim(A)
        target_update_interval: int = 1,  # every N-th gradient step after each rollout, counted from 0 (SB3)
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """SAC with Stable-Baselines3's arguments and defaults (see :class:`OffPolicyAlgorithm`)."""
        self.init_algorithm(bound_arguments(locals()))

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.target_update_interval = check_int("target_update_interval", hp["target_update_interval"], minimum=1)

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """Entropy-coefficient, critic and actor steps, then (every ``target_update_interval``) the targets."""
        self.clock.n_updates += 1  # counted first: policy_delay reads the count
        if self.use_sde:
            self.policy.actor.reset_noise()
        # SB3 tests its loop index within one train call, not the total number of updates.
        update_targets = self.round_gradient_step % self.target_update_interval == 0
        return run_update(self, SAC.tensor_step, batch, self.discounts(batch), update_targets)

    def tensor_step(
        self, optimizers: list, batch: ReplayBatch, discount: torch.Tensor | float, update_targets: bool
    ) -> dict[str, torch.Tensor]:
        """The gradient step's tensor work (one compiled graph with ``compile`` on: :func:`run_update`)."""
        policy = self.policy
        # Fresh actions for the entropy and actor losses; alpha is read before its own step (SB3).
        actions, log_prob = compiled(self, policy.actor.action_log_prob)(batch.observations)
        alpha = self.entropy.value().detach()
        metrics = {"train/ent_coef": alpha}
        if self.entropy.learned:
            ent_loss = self.entropy.loss(log_prob)
            metrics["train/ent_coef_loss"] = ent_loss.detach()  # returned tensors keep no graph (compiled_step)
            self.optimizer_step(optimizers[2], ent_loss)

        loss, critic_metrics = compiled(self, critic_loss)(policy, batch, alpha, discount)
        self.optimizer_step(optimizers[1], loss)
        # The actor loss sees the just-updated critics.
        actor_step = compiled(self, actor_loss, frozen=policy.critic)
        loss, actor_metrics = actor_step(policy, batch.observations, actions, log_prob, alpha)
        self.optimizer_step(optimizers[0], loss)
        if update_targets:
            update_target(policy.critic, policy.critic_target, self.tau)
        return metrics | critic_metrics | actor_metrics
