"""Constructor arguments declared once, in a class dict: the signature, the binding and (for algorithms) the schema.

A class lists in ``hyperparameters`` the arguments it adds and the defaults it
changes (``REQUIRED``: no default); merged along the class hierarchy they are
the constructor's signature (``inspect.signature(CrossQ)``) and the values
``bind_hyperparameters`` returns. ``pinned`` settings are fixed by the class
and are not arguments (DDPG is TD3 without its three tricks).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

REQUIRED = inspect.Parameter.empty


class Hyperparameters:
    """Mixin: ``hyperparameters`` / ``pinned`` class dicts -> signature and bound values."""

    hyperparameters: ClassVar[dict[str, Any]] = {}
    pinned: ClassVar[dict[str, Any]] = {}
    pinned_hint: ClassVar[str] = ""  # why the pinned settings are fixed, for the error message

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        pinned: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            merged.update(vars(klass).get("hyperparameters", {}))
            pinned.update(vars(klass).get("pinned", {}))
        cls.defaults = {k: v for k, v in merged.items() if k not in pinned}
        cls.pinned_values = pinned
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD  # REQUIRED values become arguments without a default
        cls.__signature__ = inspect.Signature(
            [inspect.Parameter(name, kind, default=value) for name, value in cls.defaults.items()]
        )

    @classmethod
    def bind_hyperparameters(cls, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """All hyperparameter values from positional and keyword arguments; unknown names are a TypeError."""
        names = list(cls.defaults)
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__} takes at most {len(names)} positional arguments; got {len(args)}")
        pinned = sorted(set(kwargs) & set(cls.pinned_values))
        if pinned:
            fixed = {k: cls.pinned_values[k] for k in pinned}
            raise TypeError(f"{cls.__name__} does not take {pinned}: it fixes {fixed}; {cls.pinned_hint}".rstrip("; "))
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{cls.__name__} got unknown arguments {unknown}; allowed: {names}")
        twice = sorted(set(names[: len(args)]) & set(kwargs))
        if twice:
            raise TypeError(f"{cls.__name__} got {twice} both by position and by keyword")
        values = {**cls.defaults, **dict(zip(names[: len(args)], args, strict=True)), **kwargs, **cls.pinned_values}
        missing = [name for name, value in values.items() if value is REQUIRED]
        if missing:
            raise TypeError(f"{cls.__name__} is missing the required arguments {missing}")
        return values
