"""Old module paths keep working: a module that moved resolves to its new home, warning on each name read.

Users' scripts, pickled objects (noises, schedules) and old checkpoints name modules by their path at the
time. :func:`install` puts a finder on ``sys.meta_path`` that answers each old path below with a proxy
module; reading a name from it returns the object from its new module, with a DeprecationWarning that
points at the reader's line (for pickles, inside the unpickler, where Python's default filters hide it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

# old module -> new modules, searched in order (the first that has the name is the documented home).
MOVED: dict[str, tuple[str, ...]] = {
    # action noises moved to the collector (commit 7a923c0); the classes' documented path is lit_rl.noise
    "lit_rl.algorithms.noise": ("lit_rl.noise", "lit_rl.collect.noise"),
    # the package layout: the launcher wing, the algorithm core and the helpers' floor
    "lit_rl.algorithms.arguments": ("lit_rl.core.arguments",),
    "lit_rl.algorithms.batching": ("lit_rl.core.batching",),
    "lit_rl.algorithms.buffer_setup": ("lit_rl.core.buffer_setup",),
    "lit_rl.algorithms.compiled": ("lit_rl.core.compiled",),
    "lit_rl.algorithms.deterministic": ("lit_rl.core.deterministic",),
    "lit_rl.algorithms.entropy": ("lit_rl.core.entropy",),
    "lit_rl.algorithms.exact_resume": ("lit_rl.core.exact_resume",),
    "lit_rl.algorithms.gradients": ("lit_rl.core.gradients",),
    "lit_rl.algorithms.host": ("lit_rl.core.host",),
    "lit_rl.algorithms.hyperparameters": ("lit_rl.core.hyperparameters",),
    "lit_rl.algorithms.network_setup": ("lit_rl.core.network_setup",),
    "lit_rl.algorithms.off_policy": ("lit_rl.core.off_policy",),
    "lit_rl.algorithms.optimizers": ("lit_rl.core.optimizers",),
    "lit_rl.algorithms.persistence": ("lit_rl.core.persistence",),
    "lit_rl.algorithms.plain_optimization": ("lit_rl.core.plain_optimization",),
    "lit_rl.algorithms.run_metrics": ("lit_rl.core.run_metrics",),
    "lit_rl.algorithms.sb3_api": ("lit_rl.core.sb3_api",),
    "lit_rl.checks": ("lit_rl.utils.checks",),
    "lit_rl.config": ("lit_rl.launcher.config",),
    "lit_rl.declared": ("lit_rl.utils.declared",),
    "lit_rl.io": ("lit_rl.utils.io",),
    "lit_rl.loggers": ("lit_rl.launcher.loggers",),
    "lit_rl.measure": ("lit_rl.utils.measure",),
    "lit_rl.run_info": ("lit_rl.launcher.run_info",),
    "lit_rl.run_records": ("lit_rl.launcher.run_records",),
    "lit_rl.sb3_logger": ("lit_rl.core.sb3_logger",),
    "lit_rl.stats": ("lit_rl.utils.stats",),
    "lit_rl.sweep_job": ("lit_rl.launcher.sweep_job",),
    "lit_rl.trainer": ("lit_rl.core.trainer",),
    "lit_rl.trainer_fields": ("lit_rl.data.trainer_fields",),
    "lit_rl.tune_workers": ("lit_rl.launcher.tune_workers",),
}


class MovedModule(types.ModuleType):
    """Stands at an old path; each name read resolves in the new modules, with a DeprecationWarning."""

    def __init__(self, name: str, targets: tuple[str, ...]) -> None:
        super().__init__(name, f"Moved: use {' or '.join(targets)}.")
        self.__targets = targets

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for target in self.__targets:
            module = importlib.import_module(target)
            if hasattr(module, name):
                warnings.warn(f"{self.__name__}.{name} moved to {target}: use from {target} import {name}",
                              DeprecationWarning, stacklevel=2)  # fmt: skip
                return getattr(module, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted({n for t in self.__targets for n in dir(importlib.import_module(t)) if not n.startswith("_")})


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED` (no file is left at them) and loads a :class:`MovedModule`."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return MovedModule(spec.name, MOVED[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the proxy resolves names when they are read."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (``import lit_rl`` does, before any of its modules loads)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())


def renamed(module: str, name: str, renames: dict[str, tuple[Any, str]]) -> Any:
    """A module ``__getattr__``'s answer for names that were renamed in place: the new object, with a warning.

    ``renames`` maps an old name to ``(new object, message)``; any other name raises AttributeError as usual.
    """
    if name not in renames:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new, message = renames[name]
    warnings.warn(message, DeprecationWarning, stacklevel=3)
    return new
