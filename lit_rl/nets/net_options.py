"""The ``policy_kwargs.net`` setting: network options of the actor-critic policies (DroQ, SimBa, XQC, categorical).

One dict selects them; every key is optional and the empty dict (or None) is the default network, unchanged::

    residual: false      # SimBa residual blocks with LayerNorm, actor and critics (lit_rl.nets.simba)
    dropout: 0.0         # critics: dropout after each hidden linear layer (DroQ, lit_rl.nets.droq)
    layer_norm: false    # critics: LayerNorm after each hidden linear layer (DroQ)
    weight_norm: false   # critics: weight-normalised hidden linear layers (XQC, lit_rl.nets.weight_norm)
    critic_head: scalar  # scalar | categorical: logits over n_bins fixed values in [v_min, v_max], trained
    n_bins: 101          # with a two-hot cross-entropy (SAC, CrossQ; lit_rl.nets.categorical)
    v_min: -1000.0       # the support must cover the env's Q-values (about r / (1 - gamma))
    v_max: 1000.0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CRITIC_HEADS = ("scalar", "categorical")


@dataclass(frozen=True)
class NetOptions:
    """Parsed ``policy_kwargs.net`` (see the module docstring); the defaults build the standard MLPs."""

    residual: bool = False
    dropout: float = 0.0
    layer_norm: bool = False
    weight_norm: bool = False
    critic_head: str = "scalar"
    n_bins: int = 101
    v_min: float = -1000.0
    v_max: float = 1000.0

    @property
    def is_default(self) -> bool:
        """Whether these options build exactly the standard networks."""
        return self == NetOptions()

    @property
    def categorical(self) -> bool:
        """Whether the critics end in a categorical head."""
        return self.critic_head == "categorical"

    def actor_options(self) -> NetOptions:
        """The options an actor uses: the residual trunk only (the rest are critic options, as in the papers)."""
        return NetOptions(residual=self.residual)


def net_options(value: Any, key: str = "policy_kwargs.net") -> NetOptions:
    """``policy_kwargs.net`` (None, a dict or a :class:`NetOptions`) as :class:`NetOptions`; a ValueError names a bad key."""
    if value is None:
        return NetOptions()
    if isinstance(value, NetOptions):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"{key}={value!r} must be a dict of network options or None; allowed keys: {_allowed()}")
    unknown = sorted(set(value) - set(_allowed()))
    if unknown:
        raise ValueError(f"{key} has unknown keys {unknown}: {key}.{unknown[0]}={value[unknown[0]]!r} is not a "
                         f"network option; allowed keys: {_allowed()}")  # fmt: skip
    options = NetOptions(**dict(value))
    for name in ("residual", "layer_norm", "weight_norm"):
        if not isinstance(getattr(options, name), bool):
            raise ValueError(f"{key}.{name}={getattr(options, name)!r} must be true or false")
    dropout = options.dropout
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
        raise ValueError(f"{key}.dropout={dropout!r} must be a number in [0, 1)")
    if options.critic_head not in CRITIC_HEADS:
        raise ValueError(f"{key}.critic_head={options.critic_head!r} is not known; allowed: {list(CRITIC_HEADS)}")
    if isinstance(options.n_bins, bool) or not isinstance(options.n_bins, int) or options.n_bins < 2:
        raise ValueError(f"{key}.n_bins={options.n_bins!r} must be an integer of at least 2")
    for name in ("v_min", "v_max"):
        v = getattr(options, name)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{key}.{name}={v!r} must be a number")
    if not options.v_min < options.v_max:
        raise ValueError(f"{key}: v_min={options.v_min!r} must be below v_max={options.v_max!r}")
    return dataclasses.replace(options, dropout=float(dropout), v_min=float(options.v_min), v_max=float(options.v_max))


def _allowed() -> list[str]:
    return [f.name for f in dataclasses.fields(NetOptions)]
