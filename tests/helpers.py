"""Shared test helpers: run the launcher as a user would."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lit_rl.utils.rendering import MISSING, headless_linux, usable_backend
from tests.launcher_farm import launch

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
# Tests that render MuJoCo offscreen (pixels, videos): skipped, naming the system package, where nothing can.
needs_rendering = pytest.mark.skipif(headless_linux() and usable_backend() is None, reason=MISSING)


def run_launcher(
    run_dir: Path, *overrides: str, timeout: float = 600, fresh: bool = False
) -> subprocess.CompletedProcess:
    """``python -m lit_rl.train`` with ``overrides`` writing into ``run_dir``; returns the finished process.

    It runs as a fork of this worker's :mod:`tests.launcher_farm` (the launcher without its seconds of imports),
    or with ``fresh=True`` as a new interpreter: for what only a fresh start shows, such as import-time warnings.
    """
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    args = [*overrides, f"hydra.run.dir={run_dir}", "trainer.enable_progress_bar=false"]
    if fresh:
        cmd = [sys.executable, "-m", "lit_rl.train", *args]
        return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    with tempfile.TemporaryDirectory(prefix="lit_rl_launch_") as logs:
        return launch("lit_rl.train", args, cwd=ROOT, env=env, timeout=timeout, logs=Path(logs))


def read_summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def read_wandb_run_file(path: Path) -> dict:
    """Config, summary, group and tags of an offline W&B run, read from its ``run-*.wandb`` file.

    wandb-core (0.19+) writes ``files/config.yaml`` and ``files/wandb-summary.json`` only
    when it uploads (wandb issue #9646); offline, the same records live only in this
    LevelDB-log-format file: a 7-byte header, then 32 KiB blocks of chunks, each
    ``crc32 (4) | length (2, little-endian) | type (1: full, 2: first, 3: middle, 4: last) | payload``.
    """
    import struct

    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    block, pos, pending, payloads = 32768, 7, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a chunk header is zero padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            payloads.append(pending)
    run = {"config": {}, "summary": {}, "group": None, "tags": []}
    for payload in payloads:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(payload)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run["group"], run["tags"] = record.run.run_group, list(record.run.tags)
            updates = record.run.config.update
        elif kind == "config":
            updates = record.config.update
        elif kind == "summary":
            run["summary"].update({u.key: json.loads(u.value_json) for u in record.summary.update})
            continue
        else:
            continue
        run["config"].update({u.key: json.loads(u.value_json) for u in updates})
    return run


def run_multirun(sweep_dir: Path, *overrides: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m lit_rl.train -m`` with ``overrides`` writing the sweep into ``sweep_dir``."""
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    cmd = [
        sys.executable,
        "-m",
        "lit_rl.train",
        "-m",
        *overrides,
        f"hydra.sweep.dir={sweep_dir}",
        "trainer.enable_progress_bar=false",
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def read_csv_rows(path: Path) -> list[dict]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ci_cases(values: list, in_ci: list) -> list:
    """A slow test's parameters, those in ``in_ci`` marked ``ci``: the cases ``make test`` (CI) runs too."""
    return [pytest.param(v, marks=pytest.mark.ci) if v in in_ci else v for v in values]


def without_trainer(algo, observation_space, action_space):
    """``algo`` with its networks and optimizers built for the spaces, and the two Lightning calls its updates make
    (``optimizers()``, ``manual_backward``) answered without a Trainer; the optimizers as ``algo._test_opts``."""
    algo.build_networks(observation_space, action_space)
    opts = algo.configure_optimizers()
    algo.optimizers = lambda: opts
    algo.manual_backward = lambda loss: loss.backward()
    algo._test_opts = opts
    return algo


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """``folder`` as a tmpfs mounted with ``options`` (``ro``, ``size=1m``: a read-only or a small disk; needs root,
    as CI has), unmounted afterwards; the test is skipped where mounting is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)]
    mounted = subprocess.run(cmd, capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs ({options}) here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            # Still busy (a file the test read may stay mapped until collected): detach it now, freed when released.
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill_disk(folder: Path) -> Path:
    """Fill ``folder``'s file system to the last byte with a file ``ballast`` in it; returns the file."""
    ballast = folder / "ballast"
    with open(ballast, "wb") as f:
        for size in (1 << 16, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(f.fileno(), b"\0" * size)
    return ballast

