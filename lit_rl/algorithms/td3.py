"""TD3 (Fujimoto et al., 2018): twin delayed DDPG with target policy smoothing."""

from __future__ import annotations

from lit_rl.algorithms.deterministic import DeterministicActorCritic


class TD3(DeterministicActorCritic):
    """Twin Delayed DDPG as in Stable-Baselines3 2.x (``policy_kwargs``: see :class:`~lit_rl.policies.td3.TD3Policy`).

    Its three tricks over DDPG, with SB3's defaults: twin critics (the target
    is the minimum of both target critics), delayed actor and target updates
    (every ``policy_delay`` critic steps) and target policy smoothing
    (clipped Gaussian noise on the target action). The update itself is
    :mod:`lit_rl.algorithms.deterministic`: critic step against
    ``r + (1 - terminated) * gamma * min_i Q'_i(s', clip(pi'(s') + clip(eps, -c, c), -1, 1))``
    with ``eps ~ N(0, target_policy_noise^2)`` and ``c = target_noise_clip``;
    every ``policy_delay`` steps an actor step on ``-Q_0(s, pi(s))`` (the first
    critic only) followed by Polyak updates of the target actor and critics.
    Exploration comes from ``action_noise`` (default none, as SB3).
    """

    hyperparameters = {
        "policy_delay": 2,  # critic updates per actor (and target) update
        "target_policy_noise": 0.2,  # smoothing noise on the target action ...
        "target_noise_clip": 0.5,  # ... clipped to this range
    }
