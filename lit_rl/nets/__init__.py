"""Network building blocks: BatchRenorm, MLPs, actors, critics."""

from lit_rl.nets.actors import SquashedGaussianActor
from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.mlp import EnsembleLinear, build_mlp

__all__ = ["BatchRenorm", "EnsembleLinear", "QEnsemble", "SquashedGaussianActor", "build_mlp"]
