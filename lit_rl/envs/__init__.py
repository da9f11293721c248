"""Env construction, and the project's own envs (registered with gymnasium on import)."""

import gymnasium as gym

from lit_rl.envs.atari import ATARI_ID
from lit_rl.envs.bit_flipping import BitFlippingEnv
from lit_rl.envs.dmc import DMC_ID
from lit_rl.envs.goal import check_goal_env, goal_compute_reward
from lit_rl.envs.make import as_vector_env, check_env_id, make_vec_env
from lit_rl.envs.sb3_vec_env import SB3VecEnvAdapter, is_sb3_vec_env

BIT_FLIPPING_ID = "lit_rl/BitFlipping-v0"
if BIT_FLIPPING_ID not in gym.registry:
    # No TimeLimit wrapper: the env truncates itself after max_steps (n_bits by default).
    gym.register(BIT_FLIPPING_ID, entry_point="lit_rl.envs.bit_flipping:BitFlippingEnv", kwargs={"n_bits": 10})
if DMC_ID not in gym.registry:
    # DeepMind Control Suite (lit_rl.envs.dmc); no TimeLimit wrapper: the suite truncates after 1000 sim steps.
    gym.register(DMC_ID, entry_point="lit_rl.envs.dmc:make_dmc_env", kwargs={"task": "cheetah-run"})
if ATARI_ID not in gym.registry:
    # Atari games with SB3's preprocessing (lit_rl.envs.atari); no TimeLimit wrapper: ALE truncates at 108,000 frames.
    gym.register(ATARI_ID, entry_point="lit_rl.envs.atari:make_atari_env", kwargs={"game": "Breakout"})

__all__ = [
    "ATARI_ID",
    "BIT_FLIPPING_ID",
    "DMC_ID",
    "BitFlippingEnv",
    "SB3VecEnvAdapter",
    "as_vector_env",
    "check_env_id",
    "check_goal_env",
    "goal_compute_reward",
    "is_sb3_vec_env",
    "make_vec_env",
]
