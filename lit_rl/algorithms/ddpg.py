"""DDPG (Lillicrap et al., 2016), as Stable-Baselines3 defines it: TD3 without its three tricks."""

from __future__ import annotations

from typing import Any

from lit_rl.algorithms.td3 import TD3


class DDPG(TD3):
    """Deep Deterministic Policy Gradient: :class:`TD3` with one critic, no policy delay, no target smoothing.

    As in Stable-Baselines3 2.x: ``policy_delay=1``, no target policy noise,
    ``policy_kwargs.n_critics`` 1 unless given; the critic loss is the plain
    MSE to ``r + (1 - terminated) * gamma * Q'(s', pi'(s'))`` and the targets
    move by ``tau`` after every gradient step. Exploration comes from
    ``action_noise`` (default none, as SB3).
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
        policy_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        policy_kwargs = {"n_critics": 1, **(policy_kwargs or {})}
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
            policy_delay=1,
            target_policy_noise=0.0,
            target_noise_clip=0.0,
            policy_kwargs=policy_kwargs,
            **kwargs,
        )
        # TD3 saved the fixed settings above as hyperparameters; drop them so DDPG(**hparams) rebuilds this model.
        self.save_hyperparameters(
            ignore=["replay_buffer_class", "policy_delay", "target_policy_noise", "target_noise_clip"]
        )
