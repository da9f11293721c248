"""TQC (Kuznetsov et al., 2020): SAC with distributional quantile critics whose top quantiles are truncated."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.compiled import compiled, run_update
from lit_rl.core.entropy import EntropyRegularized, policy_samples
from lit_rl.core.gradients import frozen
from lit_rl.core.hyperparameters import GymEnv, Schedule
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.core.quantile_regression import quantile_huber_loss
from lit_rl.nets.target import update_target
from lit_rl.policies.tqc import TQCPolicy
from lit_rl.utils.checks import check_int
from lit_rl.utils.declared import bound_arguments


def truncated_mixture(next_quantiles: torch.Tensor, n_target_quantiles: int) -> torch.Tensor:
    """The ``n_target_quantiles`` smallest of all critics' quantiles pooled per sample, sorted: ``(batch, n_target)``.

    Dropping the largest atoms of the mixture is how TQC controls overestimation.
    """
    pooled = next_quantiles.transpose(0, 1).reshape(next_quantiles.shape[1], -1)
    return pooled.sort(dim=1).values[:, :n_target_quantiles]


def critic_loss(
    policy: TQCPolicy,
    batch: ReplayBatch,
    alpha: torch.Tensor,
    discount: torch.Tensor | float,
    n_target_quantiles: int,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Quantile Huber loss of Z(s, a) against ``r + (1 - terminated) * discount * (Z_trunc(s', a') - alpha * log pi(a'|s'))``.

    ``a' ~ pi(s')`` without gradients. Z_trunc pools the target critics' quantiles and keeps the
    smallest ``n_target_quantiles``. Without a target network (CrossQ-style) one forward of
    ``cat([s, s'])``, ``cat([a, a'])`` through the critics, BatchRenorm in train mode, gives both
    Z(s, a) and the (detached) Z(s', a'); the actor's BatchRenorm is in eval mode for ``a'``.
    """
    actor, critic = policy.actor, policy.critic
    with torch.no_grad():
        actor.set_bn_training_mode(False)
        next_actions, next_log_prob = actor.action_log_prob(batch.next_observations)
    critic.set_bn_training_mode(True)
    if policy.has_target_critic:
        policy.critic_target.set_bn_training_mode(False)  # a target network always uses running statistics (SB3)
        with torch.no_grad():
            next_quantiles = policy.critic_target.quantiles(batch.next_observations, next_actions)
        quantiles = critic.quantiles(batch.observations, batch.actions)
    else:
        both = critic.quantiles(
            torch.cat([batch.observations, batch.next_observations]), torch.cat([batch.actions, next_actions])
        )
        quantiles, next_quantiles = both.split(batch.rewards.shape[0], dim=1)
    with torch.no_grad():
        next_z = truncated_mixture(next_quantiles.detach(), n_target_quantiles) - alpha * next_log_prob[:, None]
        discount = discount[:, None] if isinstance(discount, torch.Tensor) and discount.dim() == 1 else discount
        target = batch.rewards[:, None] + (1.0 - batch.terminated[:, None]) * discount * next_z
    loss = quantile_huber_loss(quantiles, target)
    return loss, {"train/critic_loss": loss.detach()}


def actor_loss(
    policy: TQCPolicy, obs: torch.Tensor, actions: torch.Tensor, log_prob: torch.Tensor, alpha: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``mean(alpha * log pi(a|s) - mean_{i,k} Z_i,k(s, a))``; all quantiles of all critics, none dropped.

    Critic BatchRenorm (if any) in eval mode; no gradient work on critic parameters.
    """
    critic = policy.critic
    critic.set_bn_training_mode(False)
    with frozen(critic):
        q_pi = critic.quantiles(obs, actions).mean(dim=(0, 2))
    loss = (alpha * log_prob - q_pi).mean()
    return loss, {"train/actor_loss": loss.detach()}


class TQC(EntropyRegularized, OffPolicyAlgorithm):
    """Truncated Quantile Critics as in sb3-contrib 2.9 (``policy_kwargs``: see :class:`TQCPolicy`).

    Per gradient step, in sb3-contrib's order: entropy-coefficient step, critic step (quantile
    Huber loss against the truncated target mixture, ``top_quantiles_to_drop_per_net`` atoms
    dropped per critic), actor step on ``alpha * log pi(a|s) - mean Z(s, a)``, then a Polyak
    update of the target critics every ``target_update_interval``-th step of a rollout's
    gradient steps (as SAC). ``policy_delay`` > 1 (lit_rl's addition; 1 is sb3-contrib) does
    the entropy and actor steps only on every ``policy_delay``-th critic step.

    CrossQ-style (``experiment=tqc_crossq``): ``policy_kwargs`` ``batch_norm=True,
    target_network=False``; the critics then see ``cat([s, s'])`` in one forward, ``tau`` is
    unused and Adam takes CrossQ's betas (0.5, 0.999) unless ``optimizer_kwargs`` set them.
    """

    default_policy_class = TQCPolicy

    def __init__(
        self,
        policy: str | type[TQCPolicy] = "MlpPolicy",
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
        top_quantiles_to_drop_per_net: int = 2,  # per critic; the target keeps n_critics * (n_quantiles - this)
        policy_delay: int = 1,  # critic steps per entropy and actor step (1: sb3-contrib)
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """TQC with sb3-contrib's arguments and defaults (see :class:`OffPolicyAlgorithm`)."""
        self.init_algorithm(bound_arguments(locals()))

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.target_update_interval = check_int("target_update_interval", hp["target_update_interval"], minimum=1)
        self.top_quantiles_to_drop_per_net = check_int(
            "top_quantiles_to_drop_per_net", hp["top_quantiles_to_drop_per_net"], minimum=0
        )
        self.policy_delay = check_int("policy_delay", hp["policy_delay"], minimum=1)

    def build_networks(self, observation_space: Any, action_space: Any) -> None:
        super().build_networks(observation_space, action_space)
        critic = self.policy.critic
        if self.top_quantiles_to_drop_per_net >= critic.n_quantiles:
            raise ValueError(
                f"top_quantiles_to_drop_per_net={self.top_quantiles_to_drop_per_net} drops every quantile; "
                f"allowed: 0 to n_quantiles - 1 = {critic.n_quantiles - 1}"
            )
        self.n_target_quantiles = critic.quantiles_total - self.top_quantiles_to_drop_per_net * critic.n_critics

    def batch_norm_betas(self) -> bool:
        return not self.policy.has_target_critic  # CrossQ-style critic (BatchRenorm, no target)

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """Entropy-coefficient, critic and actor steps, then (every ``target_update_interval``) the targets."""
        self.clock.n_updates += 1  # counted first: policy_delay reads the count
        if self.use_sde:
            self.policy.actor.reset_noise()
        policy_step = self._n_updates % self.policy_delay == 0
        # SB3 tests its loop index within one train call, not the total number of updates.
        update_targets = self.policy.has_target_critic and self.round_gradient_step % self.target_update_interval == 0
        return run_update(self, TQC.tensor_step, batch, self.discounts(batch), policy_step, update_targets)

    def tensor_step(
        self,
        optimizers: list,
        batch: ReplayBatch,
        discount: torch.Tensor | float,
        policy_step: bool,
        update_targets: bool,
    ) -> dict[str, torch.Tensor]:
        """The gradient step's tensor work (one compiled graph with ``compile`` on: :func:`run_update`)."""
        policy = self.policy
        # alpha is read before its own step (sb3-contrib); the actor loss uses it too.
        alpha = self.entropy.value().detach()
        metrics = {"train/ent_coef": alpha}
        if policy_step:
            actions, log_prob = compiled(self, policy_samples)(policy, batch.observations)
            if self.entropy.learned:
                ent_loss = self.entropy.loss(log_prob)
                metrics["train/ent_coef_loss"] = ent_loss.detach()  # returned tensors keep no graph (compiled_step)
                self.optimizer_step(optimizers[2], ent_loss)

        step = compiled(self, critic_loss)
        loss, critic_metrics = step(policy, batch, alpha, discount, self.n_target_quantiles)
        self.optimizer_step(optimizers[1], loss)
        metrics |= critic_metrics
        if policy_step:
            # The actor loss sees the just-updated critics.
            actor_step = compiled(self, actor_loss, frozen=policy.critic)
            loss, actor_metrics = actor_step(policy, batch.observations, actions, log_prob, alpha)
            self.optimizer_step(optimizers[0], loss)
            metrics |= actor_metrics
        if update_targets:
            update_target(policy.critic, policy.critic_target, self.tau)
        return metrics
