"""DDPG (Lillicrap et al., 2016), as Stable-Baselines3 defines it: TD3 without its three tricks."""

from __future__ import annotations

from typing import Any

from lit_rl.algorithms.deterministic import DeterministicActorCritic
from lit_rl.algorithms.hyperparameters import NO_SDE_HINT


class DDPG(DeterministicActorCritic):
    """Deep Deterministic Policy Gradient: one critic, no policy delay, no target smoothing.

    As in Stable-Baselines3 2.x: ``policy_delay=1``, no target policy noise,
    ``policy_kwargs.n_critics`` 1 unless given; the critic loss is the plain
    MSE to ``r + (1 - terminated) * gamma * Q'(s', pi'(s'))`` and the targets
    move by ``tau`` after every gradient step (the shared update:
    :mod:`lit_rl.algorithms.deterministic`). Exploration comes from
    ``action_noise`` (default none, as SB3).
    """

    pinned = {"policy_delay": 1, "target_policy_noise": 0.0, "target_noise_clip": 0.0}
    pinned_hint = f"policy delay and target policy smoothing are TD3's (use TD3 for them); {NO_SDE_HINT}"
    policy_defaults = {"n_critics": 1}

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        hp["policy_kwargs"] = {**self.policy_defaults, **(hp["policy_kwargs"] or {})}
        super().set_hyperparameters(hp)
