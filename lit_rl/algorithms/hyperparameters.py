"""Each algorithm's hyperparameters, written once.

An algorithm class lists in ``hyperparameters`` the arguments it adds and the
defaults it changes; merged along the class hierarchy they are the
constructor's signature (``inspect.signature(CrossQ)``), the values bound in
``__init__`` and the Hydra schema (:mod:`lit_rl.config` generates it).
``pinned`` settings are fixed by the algorithm and are not arguments (DDPG is
TD3 without its three tricks).
"""

from __future__ import annotations

from typing import Any

from lit_rl.declared import Hyperparameters

__all__ = ["NO_SDE", "NO_SDE_HINT", "OFF_POLICY_HYPERPARAMETERS", "Hyperparameters"]

# The arguments of every off-policy algorithm and their Stable-Baselines3 defaults (OffPolicyAlgorithm's signature).
OFF_POLICY_HYPERPARAMETERS: dict[str, Any] = {
    "policy": "MlpPolicy",
    "env": None,
    "learning_rate": 3e-4,
    "buffer_size": 1_000_000,
    "learning_starts": 100,
    "batch_size": 256,
    "tau": 0.005,
    "gamma": 0.99,
    "train_freq": 1,
    "gradient_steps": 1,
    "action_noise": None,  # an ActionNoise, or "normal" / "ornstein-uhlenbeck" (built once the env is known)
    "replay_buffer_class": None,
    "replay_buffer_kwargs": None,
    "optimize_memory_usage": False,
    "n_steps": 1,
    "policy_kwargs": None,
    "stats_window_size": 100,
    "verbose": 0,
    "tensorboard_log": None,  # a folder: learn() logs there with TensorBoard (SB3); the launcher has logger=
    "device": "auto",
    "support_multi_env": False,  # the algorithms that handle several envs set True (as SB3's do)
    "monitor_wrapper": True,
    "seed": None,
    "use_sde": False,
    "sde_sample_freq": -1,
    "use_sde_at_warmup": False,
    "sde_support": True,
    "supported_action_spaces": None,
    "action_noise_std": 0.1,  # std of a named action_noise, in [-1, 1] action units
    # Observation / reward normalisation inside the model (SB3's VecNormalize; lit_rl.nets.normalization)
    "normalize_obs": False,
    "normalize_reward": False,
    "normalize_kwargs": None,  # clip_obs, clip_reward, epsilon, gamma (None: the algorithm's), training
    "_init_setup_model": True,
}

# A deterministic or greedy policy has no gSDE: TD3, DDPG and DQN pin these (SB3's do not take them either).
NO_SDE = {"use_sde": False, "sde_sample_freq": -1, "use_sde_at_warmup": False, "sde_support": False}
NO_SDE_HINT = "gSDE needs a stochastic (squashed Gaussian) policy; allowed: use_sde with SAC or CrossQ, or action_noise"
