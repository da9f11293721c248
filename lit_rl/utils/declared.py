"""Constructor arguments declared once.

Algorithms (:class:`SignatureArguments`): the typed ``__init__`` signature is
the declaration. Its parameters and defaults are what ``inspect.signature``,
static type checkers and IDEs show, what the constructor binds, and what the
Hydra schema (:mod:`lit_rl.launcher.config`) is generated from. ``pinned`` settings are
fixed by the class and are not arguments (DDPG is TD3 without its three tricks).

Policies (:class:`Hyperparameters`): a class lists in ``hyperparameters`` the
arguments it adds and the defaults it changes (``REQUIRED``: no default);
merged along the class hierarchy they are the constructor's signature and the
values ``bind_hyperparameters`` returns.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from typing_extensions import Self  # typing.Self is Python 3.11+

REQUIRED = inspect.Parameter.empty


def merged_pinned(cls: type) -> dict[str, Any]:
    """The ``pinned`` class dicts merged along the class hierarchy (a subclass's entries win)."""
    pinned: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        pinned.update(vars(klass).get("pinned", {}))
    return pinned


def pinned_error(cls: Any, names: list[str]) -> TypeError:
    """The error for arguments a class fixes: which, to what, and why."""
    fixed = {k: cls.pinned_values[k] for k in names}
    return TypeError(f"{cls.__name__} does not take {names}: it fixes {fixed}; {cls.pinned_hint}".rstrip("; "))


class DeclaredArguments:
    """What both ways of declaring arguments give a class: its ``defaults`` and its ``pinned`` settings."""

    pinned: ClassVar[dict[str, Any]] = {}
    pinned_hint: ClassVar[str] = ""  # why the pinned settings are fixed, for the error message
    pinned_values: ClassVar[dict[str, Any]] = {}  # ``pinned`` merged along the class hierarchy
    defaults: ClassVar[dict[str, Any]] = {}  # name -> default (:data:`REQUIRED`: none)


class SignatureArguments(DeclaredArguments):
    """Mixin: the constructor's typed signature is the list of arguments; ``pinned`` adds fixed settings.

    ``defaults`` holds the positional-or-keyword parameters of ``__init__``: the hyperparameters.
    Calls are checked before ``__init__`` runs, so a pinned or misspelt keyword fails naming it
    and the allowed ones.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.pinned_values = merged_pinned(cls)
        cls.defaults = {
            name: p.default
            for name, p in inspect.signature(cls).parameters.items()
            if p.kind is p.POSITIONAL_OR_KEYWORD
        }

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # Checked here, before Python binds __init__'s arguments, to keep the messages that name the allowed
        # keys and why a pinned setting is fixed (Python's own "unexpected keyword argument" says neither).
        if args or kwargs:
            check_arguments(cls, args, kwargs)
        return super().__new__(cls)


def check_arguments(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Raise a TypeError naming pinned, unknown or surplus arguments of ``cls(*args, **kwargs)``."""
    params = inspect.signature(cls).parameters
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    if len(args) > len(positional):
        raise TypeError(f"{cls.__name__} takes at most {len(positional)} positional arguments; got {len(args)}")
    pinned = sorted(set(kwargs) & set(cls.pinned_values))
    if pinned:
        raise pinned_error(cls, pinned)
    unknown = sorted(set(kwargs) - set(params))
    if unknown:
        raise TypeError(f"{cls.__name__} got unknown arguments {unknown}; allowed: {list(params)}")


def bound_arguments(frame_locals: dict[str, Any]) -> dict[str, Any]:
    """A constructor's arguments from its ``locals()`` taken first thing: every parameter by name."""
    return {k: v for k, v in frame_locals.items() if k not in ("self", "__class__")}


class Hyperparameters(DeclaredArguments):
    """Mixin: ``hyperparameters`` / ``pinned`` class dicts -> signature and bound values."""

    hyperparameters: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        merged: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            merged.update(vars(klass).get("hyperparameters", {}))
        cls.pinned_values = merged_pinned(cls)
        cls.defaults = {k: v for k, v in merged.items() if k not in cls.pinned_values}
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD  # REQUIRED values become arguments without a default
        cls.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # inspect reads it; type has no stub
            [inspect.Parameter(name, kind, default=value) for name, value in cls.defaults.items()]
        )

    @classmethod
    def bind_hyperparameters(cls, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """All hyperparameter values from positional and keyword arguments; unknown names are a TypeError."""
        names = list(cls.defaults)
        check_arguments(cls, args, kwargs)  # the class's __signature__ lists exactly ``names``
        twice = sorted(set(names[: len(args)]) & set(kwargs))
        if twice:
            raise TypeError(f"{cls.__name__} got {twice} both by position and by keyword")
        values = {**cls.defaults, **dict(zip(names[: len(args)], args, strict=True)), **kwargs, **cls.pinned_values}
        missing = [name for name, value in values.items() if value is REQUIRED]
        if missing:
            raise TypeError(f"{cls.__name__} is missing the required arguments {missing}")
        return values
