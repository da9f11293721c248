"""SB3's callback base classes: ``BaseCallback`` and the ones that hold others (event, list, function)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload


class BaseCallback:
    """Base class: override ``_on_step`` (and optionally the other ``_on_*`` hooks)."""

    def __init__(self, verbose: int = 0) -> None:
        self.verbose = verbose
        self.model: Any = None
        self.n_calls = 0  # vector-env steps seen
        self.num_timesteps = 0  # env steps (n_envs per call)
        self.locals: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        self.parent: BaseCallback | None = None

    @property
    def logger(self) -> Any:
        """The model's SB3-style logger (``self.logger.record(key, value)``)."""
        return self.model.logger

    @property
    def training_env(self) -> Any:
        """The env the model trains on: ``model.get_env()`` (a user's SB3 VecEnv stays one), as in SB3."""
        get_env = getattr(self.model, "get_env", None)
        env = get_env() if get_env is not None else None
        return env if env is not None else self.model.env

    def init_callback(self, model: Any) -> None:
        self.model = model
        self._init_callback()

    def _init_callback(self) -> None:
        pass

    def on_training_start(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        self.locals, self.globals = locals_, globals_
        self.num_timesteps = self.model.num_timesteps
        self._on_training_start()

    def _on_training_start(self) -> None:
        pass

    def on_rollout_start(self) -> None:
        self._on_rollout_start()

    def _on_rollout_start(self) -> None:
        pass

    def on_step(self) -> bool:
        """Called after each vector-env step; False stops training."""
        self.n_calls += 1
        self.num_timesteps = self.model.num_timesteps
        return self._on_step()

    def _on_step(self) -> bool:
        return True

    def on_rollout_end(self) -> None:
        self._on_rollout_end()

    def _on_rollout_end(self) -> None:
        pass

    def on_training_end(self) -> None:
        self._on_training_end()

    def _on_training_end(self) -> None:
        pass

    def update_locals(self, locals_: dict[str, Any]) -> None:
        self.locals.update(locals_)
        self.update_child_locals(locals_)

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        pass


class EventCallback(BaseCallback):
    """A callback that triggers a child callback on an event (its return value is the child's)."""

    def __init__(self, callback: BaseCallback | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.callback = callback
        if callback is not None:
            callback.parent = self

    def init_callback(self, model: Any) -> None:
        super().init_callback(model)
        if self.callback is not None:
            self.callback.init_callback(model)

    def _on_training_start(self) -> None:
        if self.callback is not None:
            self.callback.on_training_start(self.locals, self.globals)

    def _on_event(self) -> bool:
        return self.callback.on_step() if self.callback is not None else True

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        if self.callback is not None:
            self.callback.update_locals(locals_)


class CallbackList(BaseCallback):
    """Several callbacks in order; training stops if any returns False (all still run)."""

    def __init__(self, callbacks: list[BaseCallback | Callable[..., bool]]) -> None:
        super().__init__()
        self.callbacks = [as_sb3_callback(cb) for cb in callbacks]

    def _init_callback(self) -> None:
        for cb in self.callbacks:
            cb.init_callback(self.model)

    def _on_training_start(self) -> None:
        for cb in self.callbacks:
            cb.on_training_start(self.locals, self.globals)

    def _on_rollout_start(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_start()

    def _on_step(self) -> bool:
        return all([cb.on_step() for cb in self.callbacks])  # a list: every callback runs

    def _on_rollout_end(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_end()

    def _on_training_end(self) -> None:
        for cb in self.callbacks:
            cb.on_training_end()

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.update_locals(locals_)


class ConvertCallback(BaseCallback):
    """A function ``(locals, globals) -> bool`` as a callback."""

    def __init__(self, callback: Callable[[dict[str, Any], dict[str, Any]], bool], verbose: int = 0) -> None:
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        return bool(self.callback(self.locals, self.globals))


@overload
def as_sb3_callback(callback: None) -> None: ...
@overload
def as_sb3_callback(callback: BaseCallback | Callable[..., bool] | list[Any] | tuple[Any, ...]) -> BaseCallback: ...
@overload
def as_sb3_callback(callback: Any) -> BaseCallback | None: ...
def as_sb3_callback(callback: Any) -> BaseCallback | None:
    """``None``, a callback, a list of callbacks or a function -> one :class:`BaseCallback` (or None)."""
    if callback is None or isinstance(callback, BaseCallback):
        return callback
    if isinstance(callback, (list, tuple)):
        return CallbackList(list(callback))  # CallbackList converts each item
    if callable(callback):
        return ConvertCallback(callback)
    raise TypeError(f"callback={callback!r} is not a BaseCallback, a list of them or a function (locals, globals)")
