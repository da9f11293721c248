"""lit_rl: off-policy deep RL on Lightning, launched with Hydra."""

from lit_rl.utils import moved

moved.install()  # old module paths (scripts, pickles, checkpoints) resolve to where their names live now

# ruff: noqa: E402
from lit_rl.algorithms import DDPG, DQN, SAC, TD3, TQC, CrossQ, OffPolicyAlgorithm
from lit_rl.buffers import GoalSelectionStrategy, HerReplayBuffer
from lit_rl.collect.collector import NonFiniteEnvOutput
from lit_rl.utils.checks import NonFiniteError

__all__ = [
    "CrossQ",
    "DDPG",
    "DQN",
    "GoalSelectionStrategy",
    "HerReplayBuffer",
    "NonFiniteEnvOutput",
    "NonFiniteError",
    "OffPolicyAlgorithm",
    "SAC",
    "TD3",
    "TQC",
]
__version__ = "0.1.0"
