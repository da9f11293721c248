"""CrossQ (Bhatt, Palenicek et al., ICLR 2024): SAC with BatchRenorm and no target network."""

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
from lit_rl.policies.crossq import CrossQPolicy
from lit_rl.utils.checks import check_int
from lit_rl.utils.declared import bound_arguments


def critic_loss(
    policy: CrossQPolicy, batch: ReplayBatch, alpha: torch.Tensor, discount: torch.Tensor | float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``0.5 * sum_i MSE(Q_i(s, a), r + (1 - terminated) * discount * (min_i Q_i(s', a') - alpha * log pi(a'|s')))``.

    ``a' ~ pi(s')`` from the actor with BatchRenorm in eval mode, without
    gradients; then one forward of ``cat([s, s'])``, ``cat([a, a'])`` through
    the critics with BatchRenorm in train mode, so their batch statistics mix
    both halves; Q(s', a') is detached (no target network).
    """
    actor, critic = policy.actor, policy.critic
    with torch.no_grad():
        actor.set_bn_training_mode(False)
        next_actions, next_log_prob = actor.action_log_prob(batch.next_observations)
    critic.set_bn_training_mode(True)
    # Q-values, or a categorical head's logits (policy_kwargs.net.critic_head=categorical).
    out_all = critic.q_outputs(
        torch.cat([batch.observations, batch.next_observations]), torch.cat([batch.actions, next_actions])
    )
    out, out_next = out_all.split(batch.rewards.shape[0], dim=1)
    with torch.no_grad():
        next_v = critic.expected_q(out_next).min(dim=0).values - alpha * next_log_prob
        target = batch.rewards + (1.0 - batch.terminated) * discount * next_v
    loss = critic.td_loss(out, target)  # 0.5 * sum_i MSE(Q_i, target), or the two-hot cross-entropy
    return loss, {"train/critic_loss": loss.detach()}


def actor_loss(
    policy: CrossQPolicy, obs: torch.Tensor, actions: torch.Tensor, log_prob: torch.Tensor, alpha: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``mean(alpha * log pi(a|s) - min_i Q_i(s, a))`` for ``a ~ pi(s)``, the critics' BatchRenorm in eval mode."""
    critic = policy.critic
    critic.set_bn_training_mode(False)
    with frozen(critic):
        q_pi = critic.q_values(obs, actions).min(dim=0).values
    loss = (alpha * log_prob - q_pi).mean()
    return loss, {"train/actor_loss": loss.detach()}


class CrossQ(EntropyRegularized, OffPolicyAlgorithm):
    """CrossQ as in the paper and sb3-contrib 2.9 (``policy_kwargs``: see :class:`CrossQPolicy`).

    The critic sees ``cat([s, s'])`` and ``cat([a, a'])`` in one forward with
    BatchRenorm in training mode, so its batch statistics mix both halves;
    Q(s', a') is detached and used without a target network. The actor and the
    entropy coefficient are updated every ``policy_delay`` critic updates.
    With ``use_sde`` the gSDE features are the actor's last (BatchRenorm-normalised)
    hidden layer, in the same train/eval mode as the rest of the actor.
    """

    default_policy_class = CrossQPolicy

    def __init__(
        self,
        policy: str | type[CrossQPolicy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
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
        policy_delay: int = 3,  # critic updates per actor and entropy-coefficient update
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """CrossQ with sb3-contrib's arguments and defaults; no ``tau`` (no target network)."""
        self.init_algorithm(bound_arguments(locals()))

    pinned = {"tau": 0.005}  # no target network: sb3-contrib's CrossQ takes no tau
    pinned_hint = "CrossQ has no target network"

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.policy_delay = check_int("policy_delay", hp["policy_delay"], minimum=1)

    def batch_norm_betas(self) -> bool:
        return True

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """Critic step; every ``policy_delay`` steps the entropy-coefficient step, then the actor step."""
        self.clock.n_updates += 1  # counted first: policy_delay reads the count
        if self.use_sde:
            self.policy.actor.reset_noise()  # one matrix for a' and, on actor steps, for pi(s) (sb3-contrib)
        actor_step = self._n_updates % self.policy_delay == 0
        return run_update(self, CrossQ.tensor_step, batch, self.discounts(batch), actor_step)

    def tensor_step(
        self, optimizers: list, batch: ReplayBatch, discount: torch.Tensor | float, actor_step: bool
    ) -> dict[str, torch.Tensor]:
        """The gradient step's tensor work (one compiled graph with ``compile`` on: :func:`run_update`)."""
        alpha = self.entropy.value().detach()
        loss, metrics = compiled(self, critic_loss)(self.policy, batch, alpha, discount)
        self.optimizer_step(optimizers[1], loss)
        metrics["train/ent_coef"] = alpha
        if not actor_step:
            return metrics

        actions, log_prob = compiled(self, policy_samples)(self.policy, batch.observations)
        if self.entropy.learned:
            ent_loss = self.entropy.loss(log_prob)
            metrics["train/ent_coef_loss"] = ent_loss.detach()  # returned tensors keep no graph (compiled_step)
            self.optimizer_step(optimizers[2], ent_loss)
        actor_step_loss = compiled(self, actor_loss, frozen=self.policy.critic)
        loss, actor_metrics = actor_step_loss(self.policy, batch.observations, actions, log_prob, alpha)
        self.optimizer_step(optimizers[0], loss)
        return metrics | actor_metrics
