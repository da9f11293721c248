"""The off-policy LightningModules."""

from lit_rl.algorithms.crossq import CrossQ
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm

__all__ = ["CrossQ", "OffPolicyAlgorithm"]
