"""Checks of the composed config that Hydra's schemas cannot make, run before the run folder exists.

Network options, ``trainer.compile`` and ``trainer.precision`` (typed ``Any`` in the schema: Lightning takes
strings and numbers there).

Hydra's ``+key=value`` adds a key even to a structured (typed) node, so a misspelt network option
(``+algo.policy_kwargs.net.dropuot=0.1``) passes composition; :class:`ConfigValidation` rejects it
before Hydra creates the run folder, and :func:`build_algorithm <lit_rl.launcher.build.build_algorithm>`
checks again for runs that do not start through it (sweep jobs, tune trials).
"""

from __future__ import annotations

import sys
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from lit_rl.core.compiled import check_compile
from lit_rl.core.precision import check_precision
from lit_rl.nets.net_options import net_options

NET_KEY = "algo.policy_kwargs.net"


def check_net_options(cfg: DictConfig) -> None:
    """``algo.policy_kwargs.net``: every key a network option, every value allowed (:func:`net_options`'s checks)."""
    net = OmegaConf.select(cfg, NET_KEY, default=None)
    if net is not None:
        net_options(OmegaConf.to_container(net, resolve=True) if isinstance(net, DictConfig) else net, NET_KEY)


class ConfigValidation(Callback):
    """Hydra callback (``hydra.callbacks`` in ``conf/train.yaml``): the checks above, before any folder is made.

    Hydra turns a callback's exception into a warning and goes on, so a bad config prints its error and exits 1.
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)  # the overrides every job shares; swept values are checked by each job

    @staticmethod
    def _check(config: DictConfig) -> None:
        try:
            check_net_options(config)
            trainer = config.get("trainer")
            if trainer is not None:  # the algorithm's run settings (build_algorithm checks them again)
                check_compile(trainer.get("compile", False), "trainer.compile")
                check_precision(trainer.get("precision", "32-true"), "trainer.precision")
        except ValueError as error:
            print(f"Error in the config: {error}", file=sys.stderr)
            sys.exit(1)
