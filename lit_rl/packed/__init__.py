"""Packed updates: the gradient steps of several runs that differ only in seed and scalar hyperparameters, taken
as one batched step over parameters stacked along a leading member axis (``torch.func.vmap``).

Each member stays a whole lit_rl algorithm: its networks' tensors become views into the stacked ones, so it acts,
evaluates, saves and loads as before, and the packed step changes it exactly as its own step would, up to float32
rounding of the batched matrix products.
"""

from lit_rl.packed.crossq import PackedCrossQ
from lit_rl.packed.pack import Pack
from lit_rl.packed.q_learning import PackedQLearning
from lit_rl.packed.run import learn_packed
from lit_rl.packed.sac import PackedSAC
from lit_rl.packed.td3 import PackedTD3
from lit_rl.packed.tqc import PackedTQC

__all__ = ["Pack", "PackedCrossQ", "PackedQLearning", "PackedSAC", "PackedTD3", "PackedTQC", "learn_packed"]
