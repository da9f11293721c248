"""The algorithm core: the OffPolicyAlgorithm base, its composed parts, the SB3 facade, persistence, the Trainer.

The algorithms (:mod:`lit_rl.algorithms`) build on it; it imports no algorithm.
"""
