"""Reading finished run folders: their config, their evaluation curve, their configuration label."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from lit_rl.launcher.plain import config_dict

# Overrides that do not change what is learned: they never split runs into different configurations.
LAUNCHER_ONLY_KEYS = ("seed", "hydra.", "trainer.enable_progress_bar", "trainer.enable_model_summary", "logger", "ckpt_path")


@dataclass
class RunRecord:
    """One run folder: its configuration label, seed and evaluation curve (env steps, returns)."""

    path: Path
    label: str
    seed: int | None
    steps: np.ndarray
    returns: np.ndarray
    extra: dict = field(default_factory=dict)

    @property
    def final_return(self) -> float:
        return float(self.returns[-1])


def read_run_config(run_dir: str | Path) -> dict[str, Any]:
    """The composed train config of a run folder (``.hydra/config.yaml``) as a plain dict."""
    path = Path(run_dir) / ".hydra" / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"run={str(run_dir)!r} is not a run folder: {path} does not exist")
    return config_dict(OmegaConf.load(path), resolve=False)


CHECKPOINT_NAMES = ("best", "last")


def run_checkpoint(run_dir: str | Path, name: str = "last", key: str = "run") -> Path:
    """``<run>/checkpoints/<name>.ckpt`` of a run folder; ``key`` names the setting in errors.

    The one place that knows where a run keeps its checkpoints (train's ``resume=``, evaluate's ``run=``).
    """
    if name not in CHECKPOINT_NAMES:
        raise ValueError(f"checkpoint={name!r} is not allowed; allowed: {list(CHECKPOINT_NAMES)}")
    path = Path(run_dir) / "checkpoints" / f"{name}.ckpt"
    if not Path(run_dir).is_dir():
        raise ValueError(f"{key}={str(run_dir)!r} is not a run folder; allowed: a folder written by lit_rl.train")
    return path


def read_eval_curve(metrics_csv: str | Path, metric: str = "eval/mean_reward") -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of ``metric`` in a Lightning CSVLogger file, in logging order."""
    steps, values = [], []
    with open(metrics_csv, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or metric not in reader.fieldnames:
            raise ValueError(f"metric={metric!r} is not a column of {metrics_csv}; columns: {reader.fieldnames}")
        for row in reader:
            if row.get(metric) not in (None, ""):
                steps.append(int(float(row["step"])))
                values.append(float(row[metric]))
    return np.array(steps, dtype=int), np.array(values, dtype=float)


def configuration_label(run_dir: Path, config: dict) -> str:
    """``"<algo> <env id>"`` plus the run's command-line overrides, leaving out seed and launcher-only keys."""
    hydra_file = run_dir / ".hydra" / "hydra.yaml"
    overrides_file = run_dir / ".hydra" / "overrides.yaml"
    algo = None
    if hydra_file.is_file():
        algo = OmegaConf.load(hydra_file).hydra.runtime.choices.get("algo")
    if algo is None:
        algo = str(config.get("algo", {}).get("_target_", "?")).rsplit(".", 1)[-1].lower()
    overrides = list(OmegaConf.load(overrides_file)) if overrides_file.is_file() else []
    extra = [
        o
        for o in overrides
        if not o.lstrip("+~").startswith(("algo=", "env=", *LAUNCHER_ONLY_KEYS))
    ]
    return " ".join([algo, str(config.get("env", {}).get("id", "?")), *sorted(extra)])


def find_runs(paths: list[str | Path], metric: str = "eval/mean_reward") -> list[RunRecord]:
    """Every run folder (``metrics.csv`` beside ``.hydra/config.yaml``) at or below ``paths``, with an eval curve."""
    runs = []
    for root in paths:
        root = Path(root)
        if not root.exists():
            raise FileNotFoundError(f"{str(root)!r} does not exist; give run folders or sweep folders")
        for metrics in sorted(root.rglob("metrics.csv")):
            run_dir = metrics.parent
            if not (run_dir / ".hydra" / "config.yaml").is_file():
                continue
            steps, values = read_eval_curve(metrics, metric)
            if steps.size == 0 or not np.isfinite(values).all():
                continue
            config = read_run_config(run_dir)
            seed = config.get("seed")
            runs.append(RunRecord(run_dir, configuration_label(run_dir, config), seed, steps, values))
    return runs


def group_runs(runs: list[RunRecord]) -> dict[str, list[RunRecord]]:
    """Runs grouped by configuration label (seeds of one configuration together), labels sorted."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    return {label: groups[label] for label in sorted(groups)}
