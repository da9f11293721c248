"""One table for a Hydra sweep: a row per job and a row per configuration across seeds.

Written at the sweep root by :class:`SweepSummaryCallback` when a multirun ends
(``sweep_summary.csv``, ``sweep_seeds.csv``, ``sweep_summary.md``), or by hand::

    python -m lit_rl.sweep_summary outputs/multirun/2026-12-02/14-30-00
"""

from __future__ import annotations

import argparse
import csv
import errno
import json
import logging
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from lit_rl.utils.io import write_atomically
from lit_rl.utils.stats import iqm

log = logging.getLogger(__name__)
DISK_FULL_WAIT_S = 60.0  # how long a sweep's end waits for a full disk to have room for its summary

JOB_COLUMNS = [
    "job",
    "overrides",
    "status",
    "final_eval_return",
    "best_eval_return",
    "learning_phase_fps",
    "env_steps",
    "wall_seconds",
    "error",
]
SEED_COLUMNS = ["config", "seeds", "n", "failed", "final_mean", "final_std", "final_iqm", "best_mean"]


def override_key(override: str) -> str:
    """The key an override sets: ``algo.learning_rate`` for ``+algo.learning_rate=1e-3``."""
    return override.split("=", 1)[0].lstrip("+~")


def read_job(job_dir: Path) -> dict[str, Any]:
    """One row: the job's overrides (``.hydra/overrides.yaml``) and its ``summary.json``.

    A job without ``summary.json`` (killed, or still running) has status ``"no summary"``.
    """
    overrides = [str(o) for o in OmegaConf.load(job_dir / ".hydra" / "overrides.yaml")]
    hydra_yaml = job_dir / ".hydra" / "hydra.yaml"
    num = OmegaConf.select(OmegaConf.load(hydra_yaml), "hydra.job.num") if hydra_yaml.exists() else None
    summary_file = job_dir / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {"status": "no summary"}
    return {
        "job": num if num is not None else job_dir.name,
        "job_dir": str(job_dir),
        "overrides": overrides,
        **{k: summary.get(k) for k in JOB_COLUMNS if k not in ("job", "overrides")},
    }


def collect_jobs(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """Rows for every job folder under ``sweep_dir`` (any folder holding ``.hydra/overrides.yaml``)."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise ValueError(f"sweep folder {str(sweep_dir)!r} does not exist or is not a folder")
    job_dirs = {p.parent.parent for p in sweep_dir.rglob(".hydra/overrides.yaml") if ".submitit" not in p.parts}
    # The sweep root holds multirun.yaml but no overrides.yaml, so it is never a job itself.
    rows = [read_job(d) for d in job_dirs]
    return sorted(
        rows, key=lambda r: (not isinstance(r["job"], int), r["job"] if isinstance(r["job"], int) else 0, str(r["job"]))
    )


def varying_keys(rows: list[dict[str, Any]]) -> set[str]:
    """Override keys whose value is not the same in every job."""
    per_job = [dict((override_key(o), o) for o in r["overrides"]) for r in rows]
    keys = set().union(*per_job) if per_job else set()
    return {k for k in keys if len({job.get(k) for job in per_job}) > 1}


def seed_groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows grouped by their overrides without ``seed``: n, mean, std (ddof=1), IQM of the final eval return."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = tuple(o for o in row["overrides"] if override_key(o) != "seed")
        groups.setdefault(key, []).append(row)
    varying = varying_keys(rows)
    table = []
    for key, members in groups.items():
        finals = [
            r["final_eval_return"] for r in members if r["status"] == "completed" and _finite(r["final_eval_return"])
        ]
        bests = [
            r["best_eval_return"] for r in members if r["status"] == "completed" and _finite(r["best_eval_return"])
        ]
        seeds = [o.split("=", 1)[1] for r in members for o in r["overrides"] if override_key(o) == "seed"]
        table.append(
            {
                "config": " ".join(o for o in key if override_key(o) in varying) or "(all jobs)",
                "seeds": " ".join(seeds),
                "n": len(finals),
                "failed": sum(r["status"] != "completed" for r in members),
                "final_mean": statistics.fmean(finals) if finals else None,
                "final_std": statistics.stdev(finals) if len(finals) > 1 else None,  # undefined for one run
                "final_iqm": iqm(finals) if finals else None,
                "best_mean": statistics.fmean(bests) if bests else None,
            }
        )
    return table


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _cell(value: Any, digits: int = 1) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _markdown_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def render_markdown(sweep_dir: Path, rows: list[dict[str, Any]], groups: list[dict[str, Any]]) -> str:
    """The readable sweep report: common overrides, the job table and the seed table."""
    varying = varying_keys(rows)
    common = sorted({o for r in rows for o in r["overrides"] if override_key(o) not in varying})
    failed = [r for r in rows if r["status"] != "completed"]
    lines = [f"# Sweep {sweep_dir}", ""]
    lines += [f"{len(rows)} jobs, {len(rows) - len(failed)} completed, {len(failed)} not completed.", ""]
    lines += [f"Common overrides: `{' '.join(common)}`" if common else "Common overrides: none", ""]
    job_rows = [
        [
            _cell(r["job"]),
            _cell(" ".join(o for o in r["overrides"] if override_key(o) in varying)),
            _cell(r["status"]),
            _cell(r["final_eval_return"]),
            _cell(r["best_eval_return"]),
            _cell(r["learning_phase_fps"], 0),
            _cell(r["env_steps"]),
            _cell((r["error"] or "")[:200]),
        ]
        for r in rows
    ]
    lines += _markdown_table(
        ["job", "overrides", "status", "final return", "best return", "steps/s", "env steps", "error"], job_rows
    )
    lines += ["", "## Across seeds (final eval return)", ""]
    seed_rows = [
        [
            _cell(g["config"]),
            _cell(g["seeds"]),
            _cell(g["n"]),
            _cell(g["failed"]),
            _cell(g["final_mean"]),
            _cell(g["final_std"]),
            _cell(g["final_iqm"]),
            _cell(g["best_mean"]),
        ]
        for g in groups
    ]
    lines += _markdown_table(["config", "seeds", "n", "failed", "mean", "std", "IQM", "best (mean)"], seed_rows)
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: " ".join(v) if isinstance(v, list) else v for k, v in row.items()})

    write_atomically(path, write)


def write_sweep_summary(sweep_dir: str | Path) -> tuple[list[dict[str, Any]], str]:
    """Write ``sweep_summary.csv``, ``sweep_seeds.csv`` and ``sweep_summary.md`` into ``sweep_dir``.

    Returns the job rows and the markdown text.
    """
    sweep_dir = Path(sweep_dir)
    rows = collect_jobs(sweep_dir)
    groups = seed_groups(rows)
    _write_csv(sweep_dir / "sweep_summary.csv", JOB_COLUMNS, rows)
    _write_csv(sweep_dir / "sweep_seeds.csv", SEED_COLUMNS, groups)
    text = render_markdown(sweep_dir, rows, groups)
    write_atomically(sweep_dir / "sweep_summary.md", lambda tmp: tmp.write_text(text))
    return rows, text


def write_sweep_summary_patiently(
    sweep_dir: Path, wait_s: float = DISK_FULL_WAIT_S
) -> tuple[list[dict[str, Any]], str]:
    """:func:`write_sweep_summary`, tried again every few seconds for up to ``wait_s`` while the disk is full
    (a sweep's last job can end while another process holds the disk full for a moment)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return write_sweep_summary(sweep_dir)
        except OSError as error:
            if error.errno not in (errno.ENOSPC, errno.EDQUOT) or time.monotonic() >= deadline:
                raise
            log.warning("The disk holding %s is full (%s); writing the sweep summary again in 5 s", sweep_dir, error)
            time.sleep(5)


class SweepSummaryCallback(Callback):
    """Hydra callback: writes the sweep tables when a multirun ends.

    With ``fail_on_job_failure`` the process then exits with status 1 if any
    job did not complete (Hydra ignores exceptions raised by callbacks, so this
    exits explicitly).
    """

    def __init__(self, fail_on_job_failure: bool = True, disk_full_wait_s: float = DISK_FULL_WAIT_S) -> None:
        self.fail_on_job_failure = fail_on_job_failure
        self.disk_full_wait_s = disk_full_wait_s

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():  # e.g. --cfg or a sweeper that launched nothing
            return
        try:
            rows, text = write_sweep_summary_patiently(sweep_dir, self.disk_full_wait_s)
        except OSError as error:
            log.error(
                "The sweep summary could not be written (%s). Every job's own folder is complete; once the disk "
                "has room, write the summary with: python -m lit_rl.sweep_summary %s",
                error,
                sweep_dir,
            )
            sys.exit(1)
        log.info("Sweep summary (%s):\n%s", sweep_dir / "sweep_summary.md", text)
        failed = [r for r in rows if r["status"] != "completed"]
        if failed and self.fail_on_job_failure:
            log.error("%d of %d jobs did not complete: %s", len(failed), len(rows), [r["job"] for r in failed])
            sys.exit(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", help="a multirun folder, e.g. outputs/multirun/<date>/<time>")
    args = parser.parse_args(argv)
    try:
        _, text = write_sweep_summary(args.sweep_dir)
    except ValueError as err:
        parser.error(str(err))
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
