"""``scripts/chaos.py`` on a real SLURM: a 10-job sweep under a dozen injected faults of every kind ends complete,
each compared job bitwise equal to its uncut run, nothing left behind; ``scripts/chaos_tune.py``: an Optuna study
on 8 workers under faults ends with exactly its trials."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scripts.chaos import fresh_starts_after_a_checkpoint
from tests.helpers import ROOT


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.xdist_group("slurm")
@pytest.mark.timeout(1800)
def test_ten_jobs_under_faults_end_complete_and_equal_to_their_uncut_runs(slurm_cluster, tmp_path):
    out = tmp_path / "chaos"
    cmd = [sys.executable, "scripts/chaos.py", "--lrs", "5", "--seeds", "1", "--faults", "12", "--uncut", "3",
           "--seed", "3", "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    result = json.loads((out / "chaos.json").read_text())
    assert result["jobs"] == 10 and all(result["checks"].values()), result["checks"]
    assert len(result["faults"]) >= 10 and len(result["equal"]) == len(result["compared"]) == 3
    assert len({f["kind"] for f in result["faults"]}) >= 3, result["by_kind"]  # the seeded draw mixes kinds
    logged = [json.loads(line) for line in (out / "faults.jsonl").read_text().splitlines()]
    assert logged == result["faults"]  # what was injected is written down as it happens, for a replay
    assert "| check | outcome | passed |" in proc.stdout and "| NO |" not in proc.stdout


@pytest.mark.slow
@pytest.mark.xdist_group("slurm")
@pytest.mark.timeout(1800)
def test_an_optuna_study_on_eight_workers_under_faults_ends_complete(slurm_cluster, tmp_path):
    out = tmp_path / "chaos_tune"
    cmd = [sys.executable, "scripts/chaos_tune.py", "--storage", "journal", "--trials", "8", "--faults", "12",
           "--expected", "60", "--seed", "1", "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    result = json.loads((out / "chaos_tune.json").read_text())
    assert all(result["checks"].values()), result["checks"]
    (study,) = result["studies"]
    assert study["state"]["finished"] == 8 and len(study["faults"]) >= 8
    assert study["state"]["failed"] >= 1  # the faults cost trials, and each was run again
    assert "| journal: finished trials (n_trials=8) | 8 | yes |" in proc.stdout


def test_a_fresh_start_after_a_checkpoint_is_counted(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        "[t][lit_rl.train][INFO] - Run folder: /r\n"
        "[t][lit_rl.callbacks.evaluation][INFO] - Eval at env step 500: return -1\n"
        "[t][lit_rl.train][INFO] - Run folder: /r\n"  # killed before its checkpoint was written: a fresh start
        "[t][lit_rl.callbacks.evaluation][INFO] - Eval at env step 500: return -1\n"
        "[t][lit_rl.callbacks.evaluation][INFO] - Checkpoint last.ckpt written at env step 500\n"
        "[t][lit_rl.train][INFO] - Run folder: /r\n"
        "[t][lit_rl.train][INFO] - Resuming from /r/checkpoints/last.ckpt at env step 500\n"
        "[t][lit_rl.train][INFO] - Run folder: /r\n"  # started over although a checkpoint existed
        "[t][lit_rl.callbacks.evaluation][INFO] - Eval at env step 500: return -1\n"
    )
    assert fresh_starts_after_a_checkpoint(log) == 1
