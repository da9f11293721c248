"""``hydra/launcher=packed``: a sweep's jobs trained as one pack, each job a run of its own folder, equal to the
same job run by the basic launcher, and resumed exactly after the process is killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from lit_rl import DQN, SAC, TD3
from lit_rl.launcher.packed_launcher import Job, group_jobs
from tests.helpers import ROOT, read_summary, run_launcher, run_multirun

SWEEP = ["algo=sac", "env=Pendulum-v1", "trainer=smoke", "total_timesteps=400", "seed=0,1",
         "algo.learning_rate=1e-3,3e-3"]  # fmt: skip
PACKED = ["hydra/launcher=packed", "hydra.launcher.pack_size=4"]
# One worker runs the module: its sweeps (module fixtures) are made once, not once per xdist worker.
pytestmark = pytest.mark.xdist_group("packed_launcher")


def weights(path: Path, cls=SAC) -> dict[str, torch.Tensor]:
    return cls.load(path, device="cpu").policy.state_dict()


def largest_difference(a: dict, b: dict) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in b)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("packed")
    packed = run_multirun(root / "packed", *SWEEP, *PACKED)
    assert packed.returncode == 0, packed.stderr[-3000:]
    alone = run_multirun(root / "alone", *SWEEP)
    assert alone.returncode == 0, alone.stderr[-3000:]
    return root / "packed", root / "alone", packed


def test_each_packed_job_has_the_folder_of_an_ordinary_run(sweeps):
    packed, alone, proc = sweeps
    assert "Launching 4 jobs in 1 pack(s) of up to 4" in proc.stdout + proc.stderr
    for job in range(4):
        folder = packed / str(job)
        own = sorted(p.name for p in (alone / str(job)).iterdir())
        assert sorted(p.name for p in folder.iterdir()) == own
        config = OmegaConf.load(folder / ".hydra" / "config.yaml")
        assert (config.seed, config.algo.learning_rate) == (job // 2, [1e-3, 3e-3][job % 2])
        assert config.logger.csv.save_dir == str(folder)  # resolved for this job, not another member
        summary = read_summary(folder)
        assert summary["status"] == "completed" and summary["env_steps"] == 400
        log = (folder / "train.log").read_text()
        assert f"seed {job // 2}: total_timesteps=400" in log and f"Run folder: {folder}" in log
        assert log.count("Run folder:") == 1  # no other member's records
        assert len((folder / "metrics.csv").read_text().splitlines()) > 3
    assert (packed / "sweep_summary.csv").exists()


def test_each_packed_job_equals_its_run_by_the_basic_launcher(sweeps):
    packed, alone, _ = sweeps
    for job in range(4):
        got, want = (
            weights(packed / str(job) / "checkpoints" / "last.ckpt"),
            weights(alone / str(job) / "checkpoints" / "last.ckpt"),
        )
        assert largest_difference(got, want) < 1e-3, f"job {job}"  # 300 packed updates: float32 rounding only
        got_return = read_summary(packed / str(job))["final_eval_return"]
        assert got_return == pytest.approx(read_summary(alone / str(job))["final_eval_return"], abs=0.5)
    other = weights(alone / "1" / "checkpoints" / "last.ckpt")
    assert largest_difference(weights(packed / "0" / "checkpoints" / "last.ckpt"), other) > 0.1


CUSTOM = "my_project.algorithms.MyQLearning"  # a user's own algorithm: refused before it is imported


def job(index: int, **overrides) -> Job:
    config = OmegaConf.create({"hydra": {"job": {"num": index}}, "seed": 0, "algo": {"learning_rate": 1e-3,
                               "batch_size": 32, "tau": 0.005}, "env": {"id": "Pendulum-v1"}} | overrides)  # fmt: skip
    return Job(index, [], config)


def test_jobs_that_differ_beyond_seed_and_scalar_settings_go_to_separate_packs():
    jobs = [job(0, seed=0), job(1, seed=1, algo={"learning_rate": 3e-4, "batch_size": 32, "tau": 0.01}),
            job(2, algo={"learning_rate": 1e-3, "batch_size": 64, "tau": 0.005}), job(3, seed=2),
            job(4, env={"id": "Hopper-v4"})]  # fmt: skip
    packs = group_jobs(jobs, pack_size=2)
    assert [[j.index for j in pack] for pack in packs] == [[0, 1], [3], [2], [4]]


def test_entropy_coefficients_and_target_smoothing_pack_by_kind():
    """Fixed coefficients of any value pack together, learned ones apart from them; smoothing on or off likewise."""
    base = {"learning_rate": 1e-3, "batch_size": 32, "tau": 0.005}
    jobs = [job(0, algo=base | {"ent_coef": 0.1, "target_entropy": -1.0}), job(1, algo=base | {"ent_coef": 0.2}),
            job(2, algo=base | {"ent_coef": "auto"}), job(3, algo=base | {"ent_coef": "auto_0.5"}),
            job(4, algo=base | {"target_policy_noise": 0.2, "target_noise_clip": 0.5}),
            job(5, algo=base | {"target_policy_noise": 0.1, "target_noise_clip": 0.3}),
            job(6, algo=base | {"target_policy_noise": 0.0, "target_noise_clip": 0.5})]  # fmt: skip
    packs = group_jobs(jobs, pack_size=8)
    assert [[j.index for j in pack] for pack in packs] == [[0, 1], [2, 3], [4, 5], [6]]


@pytest.mark.parametrize(
    ("launcher", "overrides", "message"),
    [
        ("packed", ["hydra.launcher.pack_size=0"], "hydra.launcher.pack_size=0: allowed: an integer >= 1"),
        (
            "packed",
            [f"algo._target_={CUSTOM}"],
            "has no packed update; allowed with hydra/launcher=packed: SAC, TD3",
        ),
        (
            "packed",
            ["algo=sac", "trainer.compile=true"],
            "allowed with hydra/launcher=packed: trainer.compile=false, and hydra",
        ),
        ("packed_slurm", ["hydra.launcher.pack_size=0"], "hydra.launcher.pack_size=0: allowed: an integer >= 1"),
        ("packed_slurm", [f"algo._target_={CUSTOM}"], "has no packed update; allowed with hydra/launcher=packed"),
    ],
    ids=["pack_size", "algorithm", "compile", "slurm-pack_size", "slurm-algorithm"],
)
def test_bad_packed_sweeps_are_refused_before_any_job_folder_exists(tmp_path, launcher, overrides, message):
    sweep = [f"hydra/launcher={launcher}", "trainer=smoke", "seed=0,1", *overrides]
    proc = run_multirun(tmp_path / "sweep", *sweep)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "sweep" / "0").exists() and not (tmp_path / "sweep" / ".submitit").exists()


@pytest.mark.slow  # CI packs DQN in the resume test below; learn_packed's equality is tested in CI
def test_a_dqn_sweep_packs_and_equals_its_runs_by_the_basic_launcher(tmp_path):
    sweep = ["algo=dqn", "env=CartPole-v1", "trainer=smoke", "total_timesteps=400", "seed=0,1",
             "algo.learning_rate=1e-3,3e-3", "algo.train_freq=1", "algo.target_update_interval=50"]  # fmt: skip
    packed = run_multirun(tmp_path / "packed", *sweep, *PACKED)
    assert packed.returncode == 0, packed.stderr[-3000:]
    alone = run_multirun(tmp_path / "alone", *sweep)
    assert alone.returncode == 0, alone.stderr[-3000:]
    for j in range(4):
        got, want = (weights(folder / str(j) / "checkpoints" / "last.ckpt", DQN)
                     for folder in (tmp_path / "packed", tmp_path / "alone"))  # fmt: skip
        assert largest_difference(got, want) < 1e-3, f"job {j}"
        assert read_summary(tmp_path / "packed" / str(j))["status"] == "completed"
    other = weights(tmp_path / "alone" / "1" / "checkpoints" / "last.ckpt", DQN)
    assert largest_difference(weights(tmp_path / "packed" / "0" / "checkpoints" / "last.ckpt", DQN), other) > 0.1


RESUMED_ALGOS = {
    "td3": (TD3, ["algo=td3", "env=Pendulum-v1"]),
    # epsilon-greedy actions drawn from each member's generator, target copies every 50 env steps
    "dqn": (DQN, ["algo=dqn", "env=CartPole-v1", "algo.train_freq=1", "algo.target_update_interval=50"]),
}
RESUMED = [*PACKED, "trainer=smoke", "total_timesteps=1200", "seed=0,1", "algo.learning_rate=1e-3,3e-3", "resume=auto"]


@pytest.fixture(scope="module")
def uncut(tmp_path_factory):
    """The uncut sweep of each algorithm, run once when first asked for."""
    sweeps: dict[str, Path] = {}

    def get(algo: str) -> Path:
        if algo not in sweeps:
            sweep = tmp_path_factory.mktemp(f"uncut_{algo}") / "sweep"
            proc = run_multirun(sweep, *RESUMED, *RESUMED_ALGOS[algo][1])
            assert proc.returncode == 0, proc.stderr[-3000:]
            sweeps[algo] = sweep
        return sweeps[algo]

    return get


@pytest.mark.parametrize(
    ("algo", "signum"),
    [("td3", signal.SIGKILL), ("td3", signal.SIGTERM), pytest.param("dqn", signal.SIGKILL, marks=pytest.mark.slow)],
    ids=["td3-SIGKILL", "td3-SIGTERM", "dqn-SIGKILL"],
)
def test_a_stopped_pack_resumes_every_member_exactly(tmp_path, uncut, algo, signum):
    cls, overrides = RESUMED_ALGOS[algo]
    cut = tmp_path / "cut"
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    cmd = [sys.executable, "-m", "lit_rl.train", "-m", *RESUMED, *overrides, f"hydra.sweep.dir={cut}",
           "trainer.enable_progress_bar=false"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    checkpoints = [cut / str(j) / "checkpoints" / "last.ckpt" for j in range(4)]
    deadline = time.monotonic() + 300
    while not all(c.exists() for c in checkpoints) or saved_steps(checkpoints, cls) < 400:  # 2 evaluations each
        assert proc.poll() is None and time.monotonic() < deadline, "the sweep ended before it could be stopped"
        time.sleep(0.1)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)
    if signum == signal.SIGTERM:  # every member checkpoints after the same round, and the sweep says how to go on
        assert proc.returncode == 128 + signum, stderr[-3000:]
        assert "Received SIGTERM: each job of the pack saved its checkpoint" in stderr and "resume=auto" in stderr
    steps = [cls.load(c, device="cpu").num_timesteps for c in checkpoints]
    assert min(steps) < 1200, steps  # stopped mid-run
    rerun = run_multirun(cut, *RESUMED, *overrides)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    for j in range(4):
        summary = read_summary(cut / str(j))
        assert summary["status"] == "completed" and summary["resumes"], summary
        got, want = (weights(folder / str(j) / "checkpoints" / "last.ckpt", cls) for folder in (cut, uncut(algo)))
        for name, value in want.items():
            assert torch.equal(got[name], value), f"job {j}: {name}"


def saved_steps(checkpoints: list[Path], cls) -> int:
    """The fewest env steps any job's last checkpoint holds (each is replaced whole, never written in place)."""
    return min(cls.load(c, device="cpu").num_timesteps for c in checkpoints)


def test_a_member_that_diverges_fails_alone_and_the_others_go_on_as_if_it_were_not_there(tmp_path):
    sweep = [*PACKED, "algo=td3", "env=Pendulum-v1", "trainer=smoke", "total_timesteps=400", "seed=0"]
    diverging = run_multirun(tmp_path / "diverging", *sweep, "algo.learning_rate=1e-3,1e30,3e-3")
    assert diverging.returncode == 1  # the sweep reports its failed job
    failed = read_summary(tmp_path / "diverging" / "1")
    assert failed["status"] == "failed" and "non-finite" in failed["error"], failed
    healthy = run_multirun(tmp_path / "healthy", *sweep, "algo.learning_rate=1e-3,1e-4,3e-3")
    assert healthy.returncode == 0, healthy.stderr[-3000:]
    for job in (0, 2):
        assert read_summary(tmp_path / "diverging" / str(job))["status"] == "completed"
        got, want = (
            weights(tmp_path / s / str(job) / "checkpoints" / "last.ckpt", TD3) for s in ("diverging", "healthy")
        )
        for name, value in want.items():
            assert torch.equal(got[name], value), f"job {job}: {name}"


def test_a_packed_job_resumes_alone_with_the_basic_launcher(sweeps, tmp_path):
    run = tmp_path / "member"
    shutil.copytree(sweeps[0] / "0", run)
    proc = run_launcher(run, f"resume={run}", "algo=sac", "env=Pendulum-v1", "trainer=smoke", "total_timesteps=500",
                        "seed=0", "algo.learning_rate=1e-3")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Be aware" not in proc.stderr and "PackMember" not in proc.stderr, proc.stderr  # no pack notice
    summary = read_summary(run)
    assert summary["status"] == "completed" and summary["env_steps"] == 500 and summary["resumes"]
