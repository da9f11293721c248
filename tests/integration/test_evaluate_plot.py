"""``python -m lit_rl.evaluate`` and ``python -m lit_rl.plot`` on real smoke runs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import matplotlib.image
import pytest
from hydra import compose, initialize_config_dir

from lit_rl.launcher.evaluate import evaluate_checkpoint, evaluation_checkpoint
from lit_rl.launcher.plot import main as plot_main
from tests.helpers import CONF, ROOT


def run_module(module: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    """Two seeds of a CrossQ smoke run on Pendulum (one multirun): sweep_dir/0 and sweep_dir/1."""
    sweep = tmp_path_factory.mktemp("sweep")
    proc = run_module(
        "lit_rl.train", "-m", "algo=crossq", "env=Pendulum-v1", "trainer=smoke", "seed=0,1", "total_timesteps=400",
        f"hydra.sweep.dir={sweep}", "trainer.enable_progress_bar=false",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sweep


def test_evaluate_a_run_folder_writes_results_beside_the_checkpoint(sweep_dir):
    run = sweep_dir / "0"
    proc = run_module("lit_rl.evaluate", f"run={run}", "episodes=3", "checkpoint=last")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "mean return" in proc.stdout
    results = json.loads((run / "checkpoints" / "eval_results.json").read_text())
    assert results["checkpoint"] == str(run / "checkpoints" / "last.ckpt")
    assert (results["algorithm"], results["env_id"], results["num_timesteps"]) == ("CrossQ", "Pendulum-v1", 400)
    # The run's episode limit (trainer=smoke: 100 steps) comes from its .hydra/config.yaml.
    assert results["lengths"] == [100, 100, 100] and len(results["returns"]) == 3
    assert results["mean_reward"] == pytest.approx(sum(results["returns"]) / 3)
    assert -1700 < results["mean_reward"] < 0


def test_evaluate_is_deterministic_and_env_override_changes_the_episode_limit(sweep_dir, tmp_path):
    ckpt = sweep_dir / "1" / "checkpoints" / "best.ckpt"
    first = evaluate_checkpoint(ckpt, "Pendulum-v1", episodes=2, seed=5, output_dir=tmp_path / "a")
    again = evaluate_checkpoint(ckpt, "Pendulum-v1", episodes=2, seed=5, output_dir=tmp_path / "b")
    assert first["returns"] == again["returns"]
    # env=Pendulum-v1: the env config's own limit (the registered 200 steps), not the run's 100.
    proc = run_module("lit_rl.evaluate", f"ckpt_path={ckpt}", "env=Pendulum-v1", "episodes=1", f"output_dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "eval_results.json").read_text())["lengths"] == [200]


def test_evaluate_records_videos(sweep_dir, tmp_path):
    for module, why in (("moviepy", "RecordVideo needs moviepy"), ("pygame", "Pendulum renders with pygame")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{why}, which is not installed")
    ckpt = sweep_dir / "0" / "checkpoints" / "best.ckpt"
    results = evaluate_checkpoint(
        ckpt, "Pendulum-v1", max_episode_steps=50, episodes=3, output_dir=tmp_path, video=True, video_episodes=2
    )
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert [v.name for v in videos] == ["Pendulum-v1-episode-0.mp4", "Pendulum-v1-episode-1.mp4"]
    assert results["videos"] == [str(v) for v in videos]
    assert all(v.stat().st_size > 1000 for v in videos)
    assert results["lengths"] == [50, 50, 50]


def evaluate_config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("evaluate", overrides=list(overrides))


def test_evaluate_bad_input_fails_naming_the_key(sweep_dir, tmp_path):
    with pytest.raises(ValueError, match=r"checkpoint='first' is not allowed; allowed: \['best', 'last'\]"):
        evaluation_checkpoint(evaluate_config(f"run={sweep_dir / '0'}", "checkpoint=first"))
    with pytest.raises(ValueError, match="exactly one of run="):
        evaluation_checkpoint(evaluate_config())
    with pytest.raises(FileNotFoundError, match="is not a run folder"):
        evaluation_checkpoint(evaluate_config(f"run={tmp_path}"))
    loose = tmp_path / "model.ckpt"
    loose.write_bytes((sweep_dir / "0" / "checkpoints" / "best.ckpt").read_bytes())
    proc = run_module("lit_rl.evaluate", f"ckpt_path={loose}")  # the command line reports it too
    assert proc.returncode != 0 and "is not inside a run folder" in proc.stderr and "add env=" in proc.stderr
    assert not (tmp_path / "eval_results.json").exists()


def test_plot_writes_a_png_of_the_requested_size_and_a_results_table(sweep_dir, tmp_path, capsys):
    out = tmp_path / "figs" / "curves.png"
    rows = plot_main([str(sweep_dir), "--out", str(out), "--size", "6", "4", "--dpi", "50"])
    image = matplotlib.image.imread(out)
    assert image.shape[:2] == (200, 300)  # 4 x 6 inches at 50 dpi
    assert image[..., :3].std() > 0.05  # something was drawn
    # Seeds 0 and 1 are one configuration (the seed is not part of the label).
    assert len(rows) == 1 and rows[0]["runs"] == 2
    assert rows[0]["configuration"] == "crossq Pendulum-v1 total_timesteps=400 trainer=smoke"
    finals = [json.loads((sweep_dir / s / "summary.json").read_text())["final_eval_return"] for s in ("0", "1")]
    assert rows[0]["iqm"] == pytest.approx(sum(finals) / 2)  # IQM of 2 values: their mean
    assert rows[0]["iqm_ci_low"] == pytest.approx(min(finals)) and rows[0]["iqm_ci_high"] == pytest.approx(max(finals))
    markdown = out.with_suffix(".md").read_text()
    assert markdown in capsys.readouterr().out and "| crossq Pendulum-v1" in markdown
    csv_lines = out.with_suffix(".csv").read_text().splitlines()
    assert csv_lines[0].startswith("configuration,runs,env_steps,iqm") and len(csv_lines) == 2


def test_plot_without_runs_is_a_usage_error(tmp_path):
    proc = run_module("lit_rl.plot", str(tmp_path))
    assert proc.returncode == 2 and "no run folder" in proc.stderr
    assert not (tmp_path / "learning_curves.png").exists()
