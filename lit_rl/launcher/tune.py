"""Hyperparameter search with Optuna: ``python -m lit_rl.tune hparams_search=crossq_optuna env=Pendulum-v1 ...``.

Tuner keys (``conf/tune.yaml``: ``n_trials``, ``sampler.*``, ``pruner.*``,
``study_name``, ``storage``, ``retrain_best`` ...) configure the study; every
other override goes to each trial's train config. A trial composes the train
config with the search space's fixed overrides, the user's overrides and the
sampled parameters, and runs the normal ``lit_rl.train.train`` in
``<study_dir>/trial_<number>/``, reporting every evaluation to the pruner.
The study lives in a SQLite file by default: the same study name and storage
continue it, from this machine or another. The best trial's overrides are
written to ``best_overrides.yaml``; ``retrain_best=true`` trains them again.

``workers.n=N`` runs the study on N workers (a SLURM job array, or local
processes) sharing its storage (PostgreSQL, or ``journal:///path.log``);
``n_trials`` is then the study's total. See :mod:`lit_rl.launcher.tune_workers`.

Optuna >= 3 is used directly: the Hydra Optuna sweeper plugin pins
optuna < 3 and cannot prune.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

import optuna
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep, Transformer
from omegaconf import DictConfig, OmegaConf, open_dict

from lit_rl.callbacks.pruning import OptunaPruning
from lit_rl.launcher.config import CONF_DIR, path_name
from lit_rl.launcher.plain import config_dict
from lit_rl.launcher.train import train
from lit_rl.launcher.tune_workers import check_workers_config, launch, open_storage, run_worker, worker_name
from lit_rl.utils.io import write_json_atomically

# Top-level keys of conf/tune.yaml: overrides of these configure the study, all others a trial's training run.
TUNER_KEYS = (
    "hparams_search",
    "study_name",
    "study_dir",
    "storage",
    "n_trials",
    "sampler",
    "pruner",
    "retrain_best",
    "workers",
    "hydra",
)
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "successive_halving", "none")


def override_key(override: str) -> str:
    """The dotted key of a Hydra override (``+a.b=1`` -> ``a.b``)."""
    return override.split("=", 1)[0].lstrip("+~")


def split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(tuner overrides, train overrides)`` of a command line."""
    tuner: list[str] = []
    trial: list[str] = []
    for arg in argv:
        if "=" not in arg and not arg.startswith("~"):
            raise ValueError(f"argument {arg!r} is not an override key=value; e.g. n_trials=20 env=Pendulum-v1")
        (tuner if override_key(arg).split(".")[0] in TUNER_KEYS else trial).append(arg)
    return tuner, trial


def format_value(value: Any) -> str:
    """A sampled value as a Hydra override value (floats keep full precision)."""
    return repr(value) if isinstance(value, float) else str(value)


def parse_search_space(params: dict[str, str]) -> dict[str, optuna.distributions.BaseDistribution]:
    """Optuna distributions from hydra-optuna-sweeper style ``{key: "tag(log, interval(a, b))" | "choice(...)"}``."""
    space: dict[str, optuna.distributions.BaseDistribution] = {}
    parser = OverridesParser.create()
    for key, spec in params.items():
        override = parser.parse_override(f"{key}={spec}")
        value = override.value()
        if isinstance(value, IntervalSweep):
            log = "log" in value.tags
            if value.start is None or value.end is None:
                raise ValueError(f"hparams_search.params.{key}={spec!r} needs both bounds: interval(a, b)")
            if isinstance(value.start, int) and isinstance(value.end, int):
                space[key] = optuna.distributions.IntDistribution(value.start, value.end, log=log)
            else:
                space[key] = optuna.distributions.FloatDistribution(value.start, value.end, log=log)
        elif isinstance(value, ChoiceSweep | RangeSweep):
            # Encoded choices are primitives Optuna can store ("[256,256]" for a list).
            choices: list[optuna.distributions.CategoricalChoiceType] = []
            for choice in override.sweep_iterator(transformer=Transformer.encode):
                if not isinstance(choice, str | int | float | bool):  # encode turns every other value into a str
                    raise TypeError(f"hparams_search.params.{key}: choice {choice!r} is not a primitive")
                choices.append(choice)
            space[key] = optuna.distributions.CategoricalDistribution(choices)
        else:
            raise ValueError(
                f"hparams_search.params.{key}={spec!r} is not a search dimension; allowed: interval(a, b), "
                "int(interval(a, b)), tag(log, interval(a, b)), choice(x, y, ...), range(a, b); "
                "put fixed values in hparams_search.overrides"
            )
    return space


def suggest(trial: optuna.Trial, key: str, distribution: optuna.distributions.BaseDistribution) -> Any:
    """Sample ``key`` from ``distribution`` with the trial's public ``suggest_*`` API."""
    if isinstance(distribution, optuna.distributions.CategoricalDistribution):
        return trial.suggest_categorical(key, distribution.choices)
    if isinstance(distribution, optuna.distributions.IntDistribution):
        return trial.suggest_int(key, distribution.low, distribution.high, log=distribution.log)
    if isinstance(distribution, optuna.distributions.FloatDistribution):
        return trial.suggest_float(key, distribution.low, distribution.high, log=distribution.log)
    raise TypeError(f"{key}: {type(distribution).__name__} is not a distribution parse_search_space makes")


def make_sampler(cfg: DictConfig, offset: int = 0) -> optuna.samplers.BaseSampler:
    """The sampler; ``offset`` shifts a fixed seed, so that workers sharing a study do not sample alike."""
    seed = None if cfg.seed is None else cfg.seed + offset
    if cfg.name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=cfg.n_startup_trials)
    if cfg.name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"sampler.name={cfg.name!r} is not allowed; allowed: {list(SAMPLERS)}")


def make_pruner(cfg: DictConfig) -> optuna.pruners.BasePruner:
    if cfg.name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=cfg.n_startup_trials, n_warmup_steps=cfg.n_warmup_steps)
    if cfg.name == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=cfg.min_resource, reduction_factor=cfg.reduction_factor
        )
    if cfg.name == "none":
        return optuna.pruners.NopPruner()
    raise ValueError(f"pruner.name={cfg.name!r} is not allowed; allowed: {list(PRUNERS)}")


def compose_train_config(overrides: list[str], run_dir: Path) -> DictConfig:
    """The train config for ``overrides``, set up as ``@hydra.main`` would for a run in ``run_dir``.

    Writes ``.hydra/{config,hydra,overrides}.yaml`` there, as Hydra does, so
    ``lit_rl.evaluate`` and ``lit_rl.plot`` read trials like any run.
    """
    run_dir = run_dir.resolve()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3", job_name="train"):
        cfg = compose("train", overrides=[*overrides, f"hydra.run.dir={run_dir}"], return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(run_dir)
    HydraConfig.instance().set_config(cfg)
    job_cfg = copy.deepcopy(cfg)
    with open_dict(job_cfg):
        del job_cfg["hydra"]
    hydra_dir = run_dir / ".hydra"
    hydra_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(job_cfg, hydra_dir / "config.yaml")
    OmegaConf.save(OmegaConf.create({"hydra": cfg.hydra}), hydra_dir / "hydra.yaml")
    OmegaConf.save(OmegaConf.create(list(overrides)), hydra_dir / "overrides.yaml")
    return job_cfg


class Tuner:
    """An Optuna study over train configs: its objective runs one training run per trial."""

    def __init__(
        self,
        tune_cfg: DictConfig,
        train_overrides: list[str],
        search_name: str = "search",
        worker_index: int | None = None,
    ) -> None:
        """``worker_index``: this process is worker ``i`` of a shared study (heartbeats on, sampler seed + i)."""
        search = tune_cfg.hparams_search
        if search is None:
            raise ValueError("hparams_search is not set; allowed: a config of conf/hparams_search, e.g. crossq_optuna")
        self.cfg = tune_cfg
        self.base_overrides = [*search.get("overrides", []), *train_overrides]
        pinned = {override_key(o) for o in self.base_overrides}
        # A parameter the user set on the command line is fixed, not searched.
        self.space = {k: v for k, v in parse_search_space(dict(search.params)).items() if k not in pinned}
        # Compose once up front: a bad override fails now, naming its key, not in the first trial.
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            probe = compose("train", overrides=self.base_overrides)
        self.study_name = tune_cfg.study_name or f"{search_name}_{path_name(probe.env.name)}"  # also a folder name
        self.study_dir = Path(tune_cfg.study_dir or Path("outputs") / "optuna" / self.study_name)
        self.study_dir.mkdir(parents=True, exist_ok=True)
        self.storage = tune_cfg.storage or f"sqlite:///{(self.study_dir / 'study.db').resolve()}"
        workers = tune_cfg.workers
        beat = (workers.heartbeat_interval, workers.grace_period) if worker_index is not None else (None, None)
        self.storage_obj = open_storage(self.storage, *beat)
        self.study = optuna.create_study(
            study_name=self.study_name,
            storage=self.storage_obj,
            sampler=make_sampler(tune_cfg.sampler, offset=worker_index or 0),
            pruner=make_pruner(tune_cfg.pruner),
            direction=search.get("direction", "maximize"),
            load_if_exists=True,
        )

    def trial_overrides(self, params: dict[str, Any]) -> list[str]:
        return [*self.base_overrides, *(f"{k}={format_value(v)}" for k, v in params.items())]

    def run(self, overrides: list[str], run_dir: Path, trial: optuna.Trial | None = None) -> float:
        """One training run; with ``trial``, reports evaluations and raises ``TrialPruned`` when pruned."""
        cfg = compose_train_config(overrides, run_dir)
        pruning = [OptunaPruning(trial)] if trial is not None else []
        value = train(cfg, callbacks=pruning)
        if trial is not None:
            summary_file = run_dir / "summary.json"
            summary = config_dict(OmegaConf.load(summary_file), resolve=False) if summary_file.is_file() else {}
            summary["optuna"] = {"study": self.study_name, "trial": trial.number, "pruned": pruning[0].pruned}
            write_json_atomically(summary_file, summary)
            if pruning[0].pruned:
                raise optuna.TrialPruned()
        return value

    def objective(self, trial: optuna.Trial) -> float:
        params = {key: suggest(trial, key, distribution) for key, distribution in self.space.items()}
        overrides = self.trial_overrides(params)
        trial.set_user_attr("overrides", overrides)
        return self.run(overrides, self.study_dir / f"trial_{trial.number}", trial)

    def optimize(self, n_trials: int) -> None:
        if n_trials > 0:
            self.study.optimize(self.objective, n_trials=n_trials)

    def best(self) -> dict[str, Any] | None:
        """The best completed trial as ``{study, trial, value, params, overrides, command}``, or None."""
        completed = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if not completed:
            return None
        best = self.study.best_trial
        overrides = self.trial_overrides(best.params)
        return {
            "study": self.study_name,
            "storage": self.storage,
            "trial": best.number,
            "value": best.value,
            "params": best.params,
            "overrides": overrides,
            "command": "python -m lit_rl.train " + " ".join(f"'{o}'" if "[" in o else o for o in overrides),
        }

    def write_best(self) -> dict[str, Any] | None:
        best = self.best()
        if best is not None:
            OmegaConf.save(OmegaConf.create(best), self.study_dir / "best_overrides.yaml")
        return best

    def retrain_best(self, best: dict[str, Any]) -> float:
        cfg_seed = compose_seed(best["overrides"])
        return self.run(best["overrides"], self.study_dir / f"best_trial_{best['trial']}_s{cfg_seed}")


def compose_seed(overrides: list[str]) -> int:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return int(compose("train", overrides=overrides).seed)


def load_tune_config(tuner_overrides: list[str]) -> tuple[DictConfig, str]:
    """The tuner's config (``conf/tune.yaml`` + overrides) and the search space's name."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3", job_name="tune"):
        tune_cfg = compose("tune", overrides=tuner_overrides, return_hydra_config=True)
    if not isinstance(tune_cfg.n_trials, int) or tune_cfg.n_trials < 0:
        raise ValueError(f"n_trials={tune_cfg.n_trials!r} must be an integer >= 0")
    check_workers_config(tune_cfg)
    return tune_cfg, tune_cfg.hydra.runtime.choices.get("hparams_search") or "search"


def worker_job(tuner_overrides: list[str], train_overrides: list[str], index: int) -> dict[str, Any]:
    """The function each submitted job runs: one worker on the shared study."""
    import torch

    tune_cfg, search_name = load_tune_config(tuner_overrides)
    if not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(tune_cfg.workers.cpus_per_task or 1))  # the job's CPUs, not the node's
    tuner = Tuner(tune_cfg, train_overrides, search_name, worker_index=index)
    poll_s = tune_cfg.workers.poll_s or tune_cfg.workers.heartbeat_interval
    ran = run_worker(tuner, tune_cfg.n_trials, poll_s, tune_cfg.workers.max_retry)
    return {"worker": worker_name(), "trials": ran}


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    """Run the study described by the command line; return the best trial (see :meth:`Tuner.best`)."""
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return None
    tuner_overrides, train_overrides = split_overrides(argv)
    tune_cfg, search_name = load_tune_config(tuner_overrides)
    tuner = Tuner(tune_cfg, train_overrides, search_name)
    if tune_cfg.workers.n > 0:
        report = launch(tuner, tuner_overrides, train_overrides, worker_job)
        if not tune_cfg.workers.wait:
            return None
        done = [t for t in tuner.study.get_trials(deepcopy=False) if t.state != optuna.trial.TrialState.FAIL]
        if len(done) < tune_cfg.n_trials:
            raise RuntimeError(
                f"the workers ended with {len(done)} of n_trials={tune_cfg.n_trials} trials done: "
                f"{report['outcomes']}; run the same command again to continue the study"
            )
    else:
        tuner.optimize(tune_cfg.n_trials)
    states = [t.state.name for t in tuner.study.trials]
    print(
        f"study {tuner.study_name!r} ({tuner.storage}): {len(states)} trials, "
        + ", ".join(f"{states.count(s)} {s.lower()}" for s in sorted(set(states)))
    )
    best = tuner.write_best()
    if best is None:
        print("no completed trial yet")
        return None
    print(f"best trial {best['trial']}: value {best['value']:.2f}; params {best['params']}")
    print(f"wrote {tuner.study_dir / 'best_overrides.yaml'}; retrain with:\n  {best['command']}")
    if tune_cfg.retrain_best:
        value = tuner.retrain_best(best)
        print(f"retrained best trial {best['trial']}: final eval return {value:.2f}")
    return best


if __name__ == "__main__":
    main()
