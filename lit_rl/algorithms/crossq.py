"""CrossQ (Bhatt, Palenicek et al., ICLR 2024): SAC with BatchRenorm and no target network."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces

from lit_rl.algorithms.entropy import EntropyCoefficient
from lit_rl.algorithms.gsde import SDE_POLICY_DEFAULTS, StateDependentExploration, sde_actor_kwargs
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm
from lit_rl.algorithms.optimizers import make_adam
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.checks import check_int
from lit_rl.nets.actors import SquashedGaussianActor
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.mlp import activation_class

DEFAULT_NET_ARCH = {"pi": [256, 256], "qf": [1024, 1024]}


def split_net_arch(net_arch: Any, default: dict[str, list[int]]) -> tuple[list[int], list[int]]:
    """``net_arch`` as SB3 takes it (a list for both, or ``{"pi": [...], "qf": [...]}``) -> (pi, qf)."""
    if net_arch is None:
        return list(default["pi"]), list(default["qf"])
    if isinstance(net_arch, (list, tuple)):
        return list(net_arch), list(net_arch)
    if isinstance(net_arch, dict) and set(net_arch) <= {"pi", "qf"}:
        return list(net_arch.get("pi", default["pi"])), list(net_arch.get("qf", default["qf"]))
    raise ValueError(
        f"policy_kwargs.net_arch={net_arch!r} must be a list of layer sizes or a dict with keys 'pi' and 'qf'"
    )


class CrossQ(StateDependentExploration, OffPolicyAlgorithm):
    """CrossQ as in the paper and sb3-contrib 2.9.

    The critic sees ``cat([s, s'])`` and ``cat([a, a'])`` in one forward with
    BatchRenorm in training mode, so its batch statistics mix both halves;
    Q(s', a') is detached and used without a target network. The actor and the
    entropy coefficient are updated every ``policy_delay`` critic updates.

    ``policy_kwargs``: ``net_arch`` (default pi [256, 256], qf [1024, 1024]),
    ``activation_fn`` ("relu"), ``n_critics`` (2), ``batch_norm`` (True),
    ``batch_norm_momentum`` (0.01), ``batch_norm_eps`` (1e-3),
    ``renorm_warmup_steps`` (100_000); with ``use_sde`` (gSDE, see
    :class:`StateDependentExploration`) also ``log_std_init`` (-3),
    ``full_std`` (True), ``use_expln`` (False), ``clip_mean`` (2.0). The gSDE
    features are the actor's last (BatchRenorm-normalised) hidden layer, in
    the same train/eval mode as the rest of the actor.
    """

    def __init__(
        self,
        policy: str = "MlpPolicy",
        learning_rate: float = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        ent_coef: str | float = "auto",
        target_entropy: str | float = "auto",
        policy_delay: int = 3,
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
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            **kwargs,
        )
        self.policy_delay = check_int("policy_delay", policy_delay, minimum=1)
        self.ent_coef_spec, self.target_entropy_spec = ent_coef, target_entropy
        EntropyCoefficient.check(ent_coef, target_entropy)
        known = {
            "net_arch",
            "activation_fn",
            "n_critics",
            "batch_norm",
            "batch_norm_momentum",
            "batch_norm_eps",
            "renorm_warmup_steps",
            *SDE_POLICY_DEFAULTS,
        }
        unknown = set(self.policy_kwargs) - known
        if unknown:
            raise ValueError(f"policy_kwargs has unknown keys {sorted(unknown)}; allowed: {sorted(known)}")
        self.net_arch_pi, self.net_arch_qf = split_net_arch(self.policy_kwargs.get("net_arch"), DEFAULT_NET_ARCH)
        self.n_critics = check_int("policy_kwargs.n_critics", self.policy_kwargs.get("n_critics", 2), minimum=1)
        self.init_sde(use_sde, sde_sample_freq, use_sde_at_warmup)
        self.actor_sde_kwargs = sde_actor_kwargs(self.use_sde, self.policy_kwargs)
        self.save_hyperparameters(ignore=["replay_buffer_class"])

    def build_networks(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        pk = self.policy_kwargs
        obs_dim, action_dim = int(np.prod(observation_space.shape)), int(np.prod(action_space.shape))
        batch_norm = None
        if pk.get("batch_norm", True):
            batch_norm = {
                "momentum": pk.get("batch_norm_momentum", 0.01),
                "eps": pk.get("batch_norm_eps", 1e-3),
                "warmup_steps": pk.get("renorm_warmup_steps", 100_000),
            }
        activation = activation_class(pk.get("activation_fn", "relu"))
        self.actor = SquashedGaussianActor(
            obs_dim, action_dim, self.net_arch_pi, activation, batch_norm, **self.actor_sde_kwargs
        )
        self.critic = QEnsemble(obs_dim, action_dim, self.net_arch_qf, self.n_critics, activation, batch_norm)
        self.entropy = EntropyCoefficient(self.ent_coef_spec, self.target_entropy_spec, action_dim)

    def configure_optimizers(self):
        lr = self.initial_learning_rate()
        # betas (0.5, 0.999) for actor and critic as in the paper; the entropy coefficient keeps Adam's defaults.
        optimizers = [
            make_adam(self.actor.parameters(), lr=lr, betas=(0.5, 0.999)),
            make_adam(self.critic.parameters(), lr=lr, betas=(0.5, 0.999)),
        ]
        if self.entropy.learned:
            optimizers.append(make_adam(self.entropy.parameters(), lr=lr))
        return optimizers

    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        self.actor.eval()  # rollouts and evaluation use BatchRenorm's running statistics
        return self.actor(obs, deterministic=deterministic)

    def update(self, batch: ReplayBatch) -> None:
        optimizers = self.optimizers()
        _actor_opt, critic_opt = optimizers[0], optimizers[1]
        self._n_updates += 1
        self.reset_noise_for_update()  # one matrix for a' and, on actor steps, for pi(s) (sb3-contrib)
        alpha = self.entropy.value().detach()

        # Critic: next actions from the actor in eval mode, no gradients.
        with torch.no_grad():
            self.actor.eval()
            next_actions, next_log_prob = self.actor.action_log_prob(batch.next_observations)
        # One joint forward over (s, a) and (s', a'): BatchRenorm statistics see both halves.
        self.critic.train()
        q_all = self.critic(
            torch.cat([batch.observations, batch.next_observations]), torch.cat([batch.actions, next_actions])
        )
        q, q_next = q_all.split(batch.rewards.shape[0], dim=1)
        with torch.no_grad():
            next_v = q_next.min(dim=0).values - alpha * next_log_prob
            target = batch.rewards + (1.0 - batch.terminated) * self.discounts(batch) * next_v
        critic_loss = 0.5 * sum(F.mse_loss(q_i, target) for q_i in q)
        critic_opt.zero_grad(set_to_none=True)
        self.manual_backward(critic_loss)
        critic_opt.step()
        self.record("train/critic_loss", critic_loss)

        if self._n_updates % self.policy_delay == 0:
            self.update_actor(batch.observations, alpha)
        self.record("train/ent_coef", alpha)

    def update_actor(self, obs: torch.Tensor, alpha: torch.Tensor) -> None:
        """Entropy-coefficient step, then actor step against min_i Q_i(s, pi(s)) with the critic in eval mode."""
        optimizers = self.optimizers()
        actor_opt = optimizers[0]
        self.actor.train()
        actions, log_prob = self.actor.action_log_prob(obs)
        if self.entropy.learned:
            ent_opt = optimizers[2]
            ent_loss = self.entropy.loss(log_prob)
            ent_opt.zero_grad(set_to_none=True)
            self.manual_backward(ent_loss)
            ent_opt.step()
            self.record("train/ent_coef_loss", ent_loss)

        self.critic.eval()
        self.critic.requires_grad_(False)  # the actor loss must not spend work on critic gradients
        q_pi = self.critic(obs, actions).min(dim=0).values
        self.critic.requires_grad_(True)
        actor_loss = (alpha * log_prob - q_pi).mean()
        actor_opt.zero_grad(set_to_none=True)
        self.manual_backward(actor_loss)
        actor_opt.step()
        self.record("train/actor_loss", actor_loss)
