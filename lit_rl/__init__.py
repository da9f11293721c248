"""lit_rl: off-policy deep RL on Lightning, launched with Hydra."""

import importlib.metadata

from lit_rl.utils import moved, rendering

# Before anything imports MuJoCo or dm_control: on a machine without a display, the offscreen backend that works.
rendering.choose_mujoco_gl()
moved.install()  # old module paths (scripts, pickles, checkpoints) resolve to where their names live now

# ruff: noqa: E402
from lit_rl.algorithms import DDPG, DQN, QRDQN, SAC, TD3, TQC, CrossQ, OffPolicyAlgorithm
from lit_rl.buffers import GoalSelectionStrategy, HerReplayBuffer
from lit_rl.collect.collector import NonFiniteEnvOutput
from lit_rl.packed import Pack
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
    "Pack",
    "QRDQN",
    "SAC",
    "TD3",
    "TQC",
]
try:
    __version__ = importlib.metadata.version("lit_rl")  # the installed distribution's: pyproject.toml's version
except importlib.metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
