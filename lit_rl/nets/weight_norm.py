"""Weight normalisation (Salimans & Kingma, 2016) of fused-ensemble linear layers, as XQC adds to CrossQ's critics."""

from __future__ import annotations

import math

import torch
from torch import nn

from lit_rl.nets.mlp import EnsembleLinear


class WeightNormEnsembleLinear(EnsembleLinear):
    """:class:`EnsembleLinear` with ``weight = g * v / ||v||``: each output unit's weight vector has learned norm ``g``.

    Gradients on the direction ``v`` do not change the scale, so the effective learning rate
    of the direction stays stable as training goes on. ``g`` starts at the initial norm, so
    the layer computes the same function as an :class:`EnsembleLinear` with the same init.
    """

    def __init__(self, n_members: int, in_features: int, out_features: int) -> None:
        nn.Module.__init__(self)  # EnsembleLinear's init, with the weight split into direction and norm
        bound = 1.0 / math.sqrt(in_features)
        self.weight_v = nn.Parameter(torch.empty(n_members, in_features, out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(n_members, 1, out_features).uniform_(-bound, bound))
        self.weight_g = nn.Parameter(self.weight_v.detach().norm(dim=1, keepdim=True))  # (n_members, 1, out)

    @property
    def weight(self) -> torch.Tensor:  # type: ignore[override]  # computed from g and v; EnsembleLinear's is a Parameter
        return self.weight_g * self.weight_v / self.weight_v.norm(dim=1, keepdim=True)
