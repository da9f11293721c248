"""gSDE (generalized State-Dependent Exploration) options shared by SAC and CrossQ, as in Stable-Baselines3."""

from __future__ import annotations

import math
from typing import Any

import torch

from lit_rl.checks import check_bool, check_float, check_int

# policy_kwargs of the gSDE actor and their Stable-Baselines3 defaults (read only when use_sde=True).
SDE_POLICY_DEFAULTS: dict[str, Any] = {"log_std_init": -3.0, "full_std": True, "use_expln": False, "clip_mean": 2.0}


def sde_actor_kwargs(use_sde: bool, policy_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Checked keyword arguments of :class:`~lit_rl.nets.actors.SquashedGaussianActor` for gSDE."""
    pk = {**SDE_POLICY_DEFAULTS, **{k: v for k, v in policy_kwargs.items() if k in SDE_POLICY_DEFAULTS}}
    return {
        "use_sde": use_sde,
        "log_std_init": check_float("policy_kwargs.log_std_init", pk["log_std_init"], -math.inf, math.inf),
        "full_std": check_bool("policy_kwargs.full_std", pk["full_std"]),
        "use_expln": check_bool("policy_kwargs.use_expln", pk["use_expln"]),
        "clip_mean": check_float("policy_kwargs.clip_mean", pk["clip_mean"], 0.0, math.inf, low_open=False),
    }


class StateDependentExploration:
    """Mixin for an OffPolicyAlgorithm with a ``SquashedGaussianActor`` in ``self.actor``: gSDE's schedule.

    As Stable-Baselines3: a new exploration matrix per env at the start of every
    ``collect_rollouts`` and every ``sde_sample_freq`` env steps within it
    (-1: only at the start); a new shared matrix before every gradient step,
    since ``log_std`` has moved (:meth:`reset_noise_for_update`); with
    ``use_sde_at_warmup`` the gSDE policy, not uniform sampling, acts before
    ``learning_starts``.
    """

    def init_sde(self, use_sde: bool, sde_sample_freq: int, use_sde_at_warmup: bool) -> None:
        """Check and store the three gSDE arguments of the algorithm's constructor."""
        self.use_sde = check_bool("use_sde", use_sde)
        self.sde_sample_freq = check_int("sde_sample_freq", sde_sample_freq, minimum=1, allowed_extra=(-1,))
        self.use_sde_at_warmup = check_bool("use_sde_at_warmup", use_sde_at_warmup)
        self.policy_acts_at_warmup = self.use_sde and self.use_sde_at_warmup

    def on_rollout_step(self, step: int) -> None:
        if self.use_sde and (step == 0 or (self.sde_sample_freq > 0 and step % self.sde_sample_freq == 0)):
            with torch.no_grad():  # rollout noise needs no graph back to log_std
                self.actor.reset_noise(self._n_envs)

    def reset_noise_for_update(self) -> None:
        """Resample the shared matrix with a graph to ``log_std``, so the actor loss trains it through the sample."""
        if self.use_sde:
            self.actor.reset_noise()


SDE_ARGUMENTS = ("use_sde", "sde_sample_freq", "use_sde_at_warmup")


def reject_sde_arguments(algorithm: str, kwargs: dict[str, Any]) -> None:
    """Raise a TypeError when an algorithm without a stochastic policy (TD3, DDPG, DQN) is given gSDE arguments."""
    given = sorted(set(kwargs) & set(SDE_ARGUMENTS))
    if given:
        raise TypeError(
            f"{algorithm} does not take {given}: gSDE needs a stochastic (squashed Gaussian) policy; "
            f"allowed: use_sde with SAC or CrossQ, or action_noise to explore with {algorithm}"
        )
