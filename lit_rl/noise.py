"""Action noises for exploration (SB3's ``stable_baselines3.common.noise``): the documented import path.

The classes live in :mod:`lit_rl.collect.noise`, next to the collector that draws them.
"""

from lit_rl.collect.noise import ActionNoise, NormalActionNoise, OrnsteinUhlenbeckActionNoise, VectorizedActionNoise

__all__ = ["ActionNoise", "NormalActionNoise", "OrnsteinUhlenbeckActionNoise", "VectorizedActionNoise"]
