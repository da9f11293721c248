"""Checks of the composed config that Hydra's schemas cannot make, run before the run folder exists.

Network options, ``trainer.compile`` and ``trainer.precision`` (typed ``Any`` in the schema: Lightning takes
strings and numbers there), ``trainer.accelerator`` against the machine, ``env.id`` against gymnasium's registry,
for a single run with ``buffer=her``, that the env is goal-conditioned (one env is made for it), and for a sweep,
that its folder holds no sweep of another config (:mod:`lit_rl.launcher.sweep_folder`).

Hydra's ``+key=value`` adds a key even to a structured (typed) node, so a misspelt network option
(``+algo.policy_kwargs.net.dropuot=0.1``) passes composition; :class:`ConfigValidation` rejects it
before Hydra creates the run folder, and :func:`build_algorithm <lit_rl.launcher.build.build_algorithm>`
checks again for runs that do not start through it (sweep jobs, tune trials).
"""

from __future__ import annotations

import sys
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from lit_rl.core.compiled import check_compile
from lit_rl.core.precision import check_precision
from lit_rl.envs import check_env_id, check_goal_env
from lit_rl.launcher.plain import config_dict
from lit_rl.launcher.sweep_folder import check_sweep_folder
from lit_rl.nets.net_options import net_options
from lit_rl.utils.checks import check_accelerator
from lit_rl.utils.io import unwritable_reason

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
        self._check(config, goal_env=True)
        self._check_folder(config, "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # The overrides every job shares (swept ones are left out here, so the env may not be the jobs' one: no
        # HER check); each job checks its own values again.
        self._check(config, goal_env=False)
        self._check_folder(config, "hydra.sweep.dir")
        try:
            check_sweep_folder(config)
        except ValueError as error:
            print(f"Error in the config: {error}", file=sys.stderr)
            sys.exit(1)

    @staticmethod
    def _check_folder(config: DictConfig, key: str) -> None:
        """The run (sweep) folder can be made and written: its checkpoints, logs and, for resume=auto, its resumes."""
        try:
            # The folder's interpolations read Hydra's runtime config (${hydra:runtime.choices.algo}), which Hydra
            # sets only after this callback: set it now, as Hydra will.
            HydraConfig.instance().set_config(config)
            folder = OmegaConf.select(config, key, default=None)
        except Exception:  # a folder Hydra cannot resolve either: Hydra reports it
            return
        reason = unwritable_reason(str(folder)) if folder is not None else None
        if reason is not None:
            needs = (
                " (resume=auto continues a run from the checkpoints it writes there)"
                if config.get("resume") == "auto"
                else ""
            )
            print(
                f"Error in the config: {key}={str(folder)!r} cannot be written: {reason}{needs}; allowed: a folder "
                f"this user can create and write, e.g. {key}=outputs/my_run",
                file=sys.stderr,
            )
            sys.exit(1)

    @staticmethod
    def _check(config: DictConfig, goal_env: bool) -> None:
        try:
            check_net_options(config)
            trainer = config.get("trainer")
            if trainer is not None:  # the algorithm's run settings (build_algorithm checks them again)
                check_compile(trainer.get("compile", False), "trainer.compile")
                check_precision(trainer.get("precision", "32-true"), "trainer.precision")
                check_accelerator(trainer.get("accelerator", "auto"))
            env = config.get("env")
            if env is not None:
                check_env_id(env.id)
                buffer = config.get("buffer")
                if goal_env and buffer is not None and str(buffer.get("_target_", "")).endswith("HerReplayBuffer"):
                    check_goal_env(env.id, config_dict(env.kwargs), env.get("max_episode_steps"))
        except (ValueError, ImportError) as error:
            print(f"Error in the config: {error}", file=sys.stderr)
            sys.exit(1)
