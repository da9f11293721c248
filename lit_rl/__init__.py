"""lit_rl: off-policy deep RL on Lightning, launched with Hydra."""

from lit_rl.algorithms import CrossQ, OffPolicyAlgorithm

__all__ = ["CrossQ", "OffPolicyAlgorithm"]
__version__ = "0.1.0"
