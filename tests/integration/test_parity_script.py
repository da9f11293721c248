"""scripts/parity.py: a real ``--quick`` run compares both implementations; failed seeds stay in the table."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "parity.py"


def load_parity(name: str = "parity"):
    """scripts/<name>.py as a module (parity.py puts scripts/ on sys.path for parity_report)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_report_trains_both_implementations_and_writes_json_and_markdown(tmp_path):
    pytest.importorskip("sb3_contrib")
    out = tmp_path / "parity.json"
    cmd = [sys.executable, str(SCRIPT), "--quick", "--jobs", "2", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[8/8]" in proc.stdout  # one progress line per run

    data = json.loads(out.read_text())
    assert data["meta"]["steps"] == [200, 400] and data["meta"]["seeds"] == [0, 1]
    runs = {(r["algo"], r["impl"], r["seed"]): r for r in data["runs"]}
    assert set(runs) == {(a, i, s) for a in ("crossq", "sac") for i in ("lit_rl", "reference") for s in (0, 1)}
    for run in runs.values():
        assert run["status"] == "completed", run.get("traceback")
        assert set(run["returns"]) == {"200", "400"} and run["wall_s"] > 0
        assert all(len(r) == 2 for r in run["episode_returns"].values())  # --quick: 2 eval episodes
        assert all(-2000.0 < v <= 0.0 for v in run["returns"].values())  # Pendulum returns are negative
    # The same seed gives the same eval start states on both sides, but not the same learning.
    assert runs[("sac", "lit_rl", 0)]["returns"] != runs[("sac", "lit_rl", 1)]["returns"]
    for algo in ("crossq", "sac"):
        hp = data["meta"]["hyperparameters"][algo]
        assert hp["learning_rate"] == {"crossq": 1e-3, "sac": 3e-4}[algo] and hp["batch_size"] == 256
        for step in (200, 400):
            stats = data["stats"][f"{algo}/{step}"]
            assert stats["n"] == {"lit_rl": 2, "reference": 2}
            for impl in ("lit_rl", "reference"):
                low, high = stats[impl]["iqm_ci95"]
                assert low <= stats[impl]["iqm"] <= high
            assert stats["iqm_diff"] == pytest.approx(stats["lit_rl"]["iqm"] - stats["reference"]["iqm"])
            assert 0.0 <= stats["mann_whitney_u"] <= 4.0 and 0.0 < stats["p_value"] <= 1.0

    markdown = out.with_suffix(".md").read_text()
    assert markdown in proc.stdout
    for words in (
        "| seed | lit_rl | sb3_contrib.CrossQ |",
        "| seed | lit_rl | stable_baselines3.SAC |",
        "## crossq at 400 env steps (actor [32, 32], 2 critics [64, 64]",
        "**IQM [95% CI]**",
        "**median**",
        "Mann-Whitney U =",
        "p = ",
    ):
        assert words in markdown


@pytest.mark.slow
def test_the_breakout_preset_trains_both_dqns_on_frames_and_scores_whole_games(tmp_path):
    pytest.importorskip("ale_py")
    out = tmp_path / "breakout.json"
    cmd = [sys.executable, str(SCRIPT), "--preset", "breakout_dqn", "--quick", "--jobs", "2", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Powered by Stella" not in proc.stdout + proc.stderr  # ALE's banner stays silent
    data = json.loads(out.read_text())
    hp = data["meta"]["hyperparameters"]["dqn"]
    assert (hp["learning_rate"], hp["batch_size"], hp["train_freq"], hp["exploration_final_eps"]) == (1e-4, 32, 4, 0.1)
    runs = {(r["impl"], r["seed"]): r for r in data["runs"]}
    assert set(runs) == {(i, s) for i in ("lit_rl", "reference") for s in (0, 1)}
    for run in runs.values():
        assert run["status"] == "completed", run.get("traceback")
        scores = [v for r in run["episode_returns"].values() for v in r]
        assert len(scores) == 4 and all(v >= 0 and v == int(v) for v in scores)  # whole games' raw points
    assert "## dqn at 400 env steps (NatureCNN; lr 0.0001, batch 32" in out.with_suffix(".md").read_text()


def test_a_failed_seed_is_listed_and_left_out_of_the_statistics():
    parity = load_parity("parity_report")
    runs = [
        {"algo": "sac", "impl": impl, "seed": seed, "status": "completed", "returns": {"100": ret}}
        for impl, seed, ret in [("lit_rl", 0, -150.0), ("lit_rl", 1, -170.0), ("reference", 0, -160.0)]
    ]
    runs.append(
        {
            "algo": "sac",
            "impl": "reference",
            "seed": 1,
            "status": "failed",
            "returns": {},
            "error": "RuntimeError: boom",
        }
    )
    table, stats = parity.summarize(runs, "sac", 100, {"seeds": [0, 1]})
    assert "| 1 | -170.0 | failed (RuntimeError: boom) |" in table
    assert stats["n"] == {"lit_rl": 2, "reference": 1}
    assert stats["reference"]["median"] == -160.0 and stats["median_diff"] == pytest.approx(0.0)
    assert stats["mann_whitney_u"] == 1.0  # -150 > -160, -170 < -160


def test_bad_options_are_refused():
    parity = load_parity()
    with pytest.raises(SystemExit):
        parity.parse_args(["--algos", "ppo"])
    with pytest.raises(SystemExit):
        parity.parse_args(["--steps", "0"])
    args = parity.parse_args(["--seeds", "3,5", "--steps", "10000,5000"])
    assert args.seeds == [3, 5] and args.steps == [5000, 10000]


def test_a_resumed_report_names_the_commit_of_each_run():
    report = load_parity("parity_report")
    meta = {"commit": "ccc3333"}
    runs = [{"commit": "aaa1111"}, {"commit": "aaa1111"}, {}]  # the last one from a report without per-run commits
    assert report.commits(runs, meta) == "commits aaa1111 (2 runs), ccc3333 (1 run)"
    assert report.commits([{"commit": "aaa1111"}], meta) == "commit aaa1111"
    assert report.commits([], meta) == "commit ccc3333"


def test_report_only_tabulates_the_finished_runs_of_a_partial_report(tmp_path, capsys):
    parity = load_parity()
    args = parity.parse_args(["--quick"])
    hp = {a: parity.hyperparameters(a, args.env, True) for a in args.algos}
    meta = {"env": args.env, "steps": args.steps, "episodes": args.episodes, "compile": False,
            "precision": "32-true", "hyperparameters": hp, "commit": "aaa1111"}  # fmt: skip
    runs = [
        {"algo": "sac", "impl": impl, "seed": seed, "status": "completed", "returns": {"200": ret, "400": ret / 2}}
        for impl, seed, ret in [("lit_rl", 0, -900.0), ("lit_rl", 1, -800.0), ("reference", 0, -850.0)]
    ]
    out = tmp_path / "parity.json"
    with pytest.raises(SystemExit, match="does not exist"):
        parity.main(["--quick", "--report-only", "--out", str(out)])
    out.write_text(json.dumps({"meta": meta, "runs": runs}))
    assert parity.main(["--quick", "--report-only", "--out", str(out)]) == 0
    assert "runs of" not in capsys.readouterr().out  # nothing was started

    markdown = out.with_suffix(".md").read_text()
    assert "**Partial report: 3 of 8 runs finished.**" in markdown
    assert "| 1 | -800.0 | not run |" in markdown and "| 0 | not run | not run |" in markdown  # crossq: none yet
    assert "Interim, sac against the reference: Holm-adjusted p over 2 checkpoints" in markdown
    data = json.loads(out.read_text())
    assert len(data["runs"]) == 3 and data["stats"]["sac/200"]["n"] == {"lit_rl": 2, "reference": 1}
    assert out.with_suffix(".png").stat().st_size > 0
