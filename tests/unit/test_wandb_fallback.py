"""W&B unreachable or without credentials: the logger falls back to offline and says so once; W&B's service process
lost mid-run: W&B logging stops with one warning, the run goes on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lit_rl.launcher.loggers import make_wandb_logger, wandb_reachable


def test_unreachable_server_falls_back_to_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)  # credentials present, so only reachability decides
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    assert not wandb_reachable(timeout=1.0)
    for mode in ("auto", "online"):
        with pytest.warns(UserWarning, match="unreachable, logging offline") as record:
            logger = make_wandb_logger(mode=mode, save_dir=str(tmp_path))
        assert len(record) == 1 and logger._wandb_init["mode"] == "offline"


def test_no_credentials_is_offline_with_one_warning(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    with pytest.warns(UserWarning, match="no credentials found") as record:
        logger = make_wandb_logger(mode="auto", save_dir=str(tmp_path))
    assert len(record) == 1 and logger._wandb_init["mode"] == "offline"


def test_unknown_mode_names_the_allowed_ones(tmp_path):
    with pytest.raises(ValueError, match="logger.wandb.mode='sometimes'.*offline"):
        make_wandb_logger(mode="sometimes", save_dir=str(tmp_path))


LOSE_THE_SERVICE = """
import sys, warnings
import psutil
from lit_rl.launcher.loggers import make_wandb_logger

logger = make_wandb_logger(mode="offline", save_dir=sys.argv[1])
logger.log_metrics({"a": 1.0}, step=1)
service = psutil.Process().children(recursive=True)  # wandb-core: what SLURM's SIGTERM to the job ends first
assert any(p.name().startswith("wandb") for p in service), [p.name() for p in service]
for process in service:
    process.kill()
psutil.wait_procs(service, timeout=30)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for step in range(2, 50):
        logger.log_metrics({"a": float(step)}, step=step)
print("\\n".join(str(w.message) for w in caught))
print("went on to step", step)
"""


def test_a_lost_wandb_service_stops_wandb_logging_with_one_warning_not_the_run(tmp_path):
    env = dict(os.environ, WANDB_MODE="offline")
    cmd = [sys.executable, "-c", LOSE_THE_SERVICE, str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert "went on to step 49" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    lost = [line for line in proc.stdout.splitlines() if line.startswith("W&B: lost the connection to its service")]
    assert len(lost) == 1 and "metrics.csv goes on" in lost[0], proc.stdout
