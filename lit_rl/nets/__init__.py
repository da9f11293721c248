"""Network building blocks: BatchRenorm, MLPs, actors, critics, features extractors, gSDE noise, target networks."""

from lit_rl.nets.actors import DeterministicActor, SquashedGaussianActor
from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.distributions import StateDependentNoiseDistribution
from lit_rl.nets.extractors import BaseFeaturesExtractor, CombinedExtractor, FlattenExtractor, NatureCNN
from lit_rl.nets.mlp import EnsembleLinear, build_mlp
from lit_rl.nets.target import make_target, polyak_update, update_target

__all__ = [
    "BaseFeaturesExtractor",
    "BatchRenorm",
    "CombinedExtractor",
    "DeterministicActor",
    "EnsembleLinear",
    "FlattenExtractor",
    "NatureCNN",
    "QEnsemble",
    "SquashedGaussianActor",
    "StateDependentNoiseDistribution",
    "build_mlp",
    "make_target",
    "polyak_update",
    "update_target",
]
