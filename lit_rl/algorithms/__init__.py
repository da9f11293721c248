"""The off-policy algorithms (LightningModules with the Stable-Baselines3 API)."""

from lit_rl.algorithms.crossq import CrossQ
from lit_rl.algorithms.ddpg import DDPG
from lit_rl.algorithms.dqn import DQN
from lit_rl.algorithms.qrdqn import QRDQN
from lit_rl.algorithms.sac import SAC
from lit_rl.algorithms.td3 import TD3
from lit_rl.algorithms.tqc import TQC
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.core.persistence import load_algorithm

__all__ = ["CrossQ", "DDPG", "DQN", "OffPolicyAlgorithm", "QRDQN", "SAC", "TD3", "TQC", "load_algorithm"]
