"""Every ``python -m lit_rl.train`` command of the README's and the documentation's ```bash blocks runs, smoke-sized.

Each command runs as written (in a fork of the test worker's :mod:`tests.launcher_farm`), plus
``trainer=smoke total_timesteps=<small> eval.episodes=1`` and an output folder under the test's tmp dir
(``hydra.sweep.dir`` for ``-m`` sweeps, cut to two jobs: the first swept key keeps two values, the others one).
Placeholders are filled from the commands before it in the same block: ``resume=outputs/...`` and ``<run>`` name
the run folder written before, ``...`` stands for the block's first command. A command that cannot run on a CPU-only machine without a cluster is listed in
``NOT_RUN`` with the reason.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import ROOT, read_csv_rows, read_summary
from tests.launcher_farm import launch

PREFIX = "python -m lit_rl.train"
SMOKE_STEPS = 200  # the k-th command of a chain gets SMOKE_STEPS + 100 * k, so each resume has steps left
# Keys the smoke run sets itself: a command's own value is replaced, not repeated.
REPLACED = ("trainer", "total_timesteps", "eval.episodes", "trainer.enable_progress_bar")
NOT_RUN = {
    "hydra/launcher=slurm": "needs a SLURM cluster (sbatch) and, with trainer=gpu, a GPU on each node",
    "hydra/launcher=packed_slurm": "needs a SLURM cluster (sbatch); tests/slurm/test_packed_slurm.py runs its packs there",
}
# Commands whose parts a faster test, or another documented command, runs in make test; make test-all runs them.
_SWEEPS = "tests/integration/test_sweeps.py runs a sweep with each parallel launcher"
SLOW = {
    "algo=crossq env=Hopper-v4 trainer.precision=bf16-mixed trainer.compile=true": (
        "the compiled bf16 CrossQ step runs in the Pendulum-v1 command"
    ),
    "algo=sac algo.policy=CnnPolicy env=dmc env.kwargs.task=walker-walk env.kwargs.pixels=true "
    "env.kwargs.action_repeat=2 buffer.buffer_size=100000 buffer.optimize_memory_usage=true": (
        "tests/integration/test_dmc_launcher.py trains SAC's CNN on DMC pixels"
    ),
    "-m seed=0,1,2,3 hydra/launcher=joblib hydra.launcher.n_jobs=4 algo=sac env=Pendulum-v1": _SWEEPS,
    "-m seed=0,1,2,3 hydra/launcher=joblib hydra.launcher.n_jobs=4": _SWEEPS,
    "-m seed=0,1,2 hydra/launcher=submitit_local": _SWEEPS,
    "experiment=crossq_mujoco env=Walker2d-v4": "the preset runs on Ant-v4",
    "experiment=sac_mujoco env=Humanoid-v5": "the preset runs on Humanoid-v4",
    "experiment=her_fetchpush env=FetchPickAndPlace-v4": "the preset runs on FetchPush-v4",
}
RESUME_PLACEHOLDER = re.compile(r"resume=outputs/\S+")


def documented_pages() -> list[Path]:
    """The README and every page of the documentation site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def documented_commands() -> list[str]:
    """The ``python -m lit_rl.train`` lines of the README's and docs' ```bash blocks, ``\\`` continuations joined,
    comments cut; blocks are separated by an empty string."""
    text = "\n".join(page.read_text() for page in documented_pages())
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        commands.append("")
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith(PREFIX):
                commands.append(" ".join(line.split()))
    return commands


@dataclass
class Chain:
    """Commands of one block that must run in order: each after the first uses the run before it."""

    commands: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.commands[0][len(PREFIX) :].strip() or "(no overrides)"


def uses_previous_run(command: str) -> bool:
    return bool(RESUME_PLACEHOLDER.search(command)) or "<run>" in command or f"{PREFIX} ..." in command


def chains() -> list[Chain]:
    result: list[Chain] = []
    first_in_block = True
    for command in documented_commands():
        if not command:
            first_in_block = True
            continue
        if uses_previous_run(command) and not first_in_block:
            result[-1].commands.append(command)
        else:
            result.append(Chain([command]))
        first_in_block = False
    return result


def unique(items: list[Chain]) -> list[Chain]:
    """Each chain once: the README and the guides show some commands in both places."""
    seen: set[tuple[str, ...]] = set()
    result = []
    for chain in items:
        if tuple(chain.commands) not in seen:
            seen.add(tuple(chain.commands))
            result.append(chain)
    return result


CHAINS = unique(chains())


def shorten_sweep(value: str, n: int) -> str:
    """``0,1,2,3`` -> ``0,1`` (n=2): the first ``n`` values of a sweep (a list in brackets is no sweep)."""
    if "," not in value or value.startswith(("[", "'[", '"[')):
        return value
    return ",".join(value.split(",")[:n])


def shorten_sweeps(args: list[str]) -> list[str]:
    """Few jobs: the first swept key keeps two values, every other swept key its first one."""
    result, n = [], 2
    for arg in args:
        key, _, value = arg.partition("=")
        if arg.startswith("-") or key.startswith("hydra") or "," not in value or value.startswith(("[", "'[")):
            result.append(arg)
            continue
        result.append(f"{key}={shorten_sweep(value, n)}")
        n = 1
    return result


def smoke_args(command: str, k: int, out: Path, first_command: str, previous_dir: Path | None) -> list[str]:
    """The command's overrides, placeholders filled, made smoke-sized and pointed into ``out``.

    ``...`` stands for the overrides of the block's first command; the other placeholders name
    ``previous_dir``, the run folder of the command before.
    """
    if previous_dir is not None:
        command = RESUME_PLACEHOLDER.sub(f"resume={previous_dir}", command)
        command = command.replace("<run>", str(previous_dir))
        command = command.replace(f"{PREFIX} ...", first_command)
    args = shlex.split(command)[3:]
    multirun = "-m" in args
    kept = [a for a in args if a.split("=", 1)[0] not in REPLACED]
    if multirun:
        kept = shorten_sweeps(kept)
    smoke = [
        "trainer=smoke",
        f"total_timesteps={SMOKE_STEPS + 100 * k}",
        "eval.episodes=1",
        "trainer.enable_progress_bar=false",
    ]
    if multirun:
        smoke.append(f"hydra.sweep.dir={out}")
    elif not any(a.startswith("resume=") for a in kept):
        smoke.append(f"hydra.run.dir={out}")  # resume=<run folder> continues in that folder, as the README says
    return kept + smoke


def test_the_docs_have_the_commands_this_test_expects():
    commands = [c for c in documented_commands() if c]
    assert len(commands) >= 12, commands
    for pattern in NOT_RUN:  # no stale entries: each reason names a command the README still has
        assert any(pattern in c for c in commands), f"NOT_RUN entry {pattern!r} matches no documented command"
    assert set(SLOW) <= {chain.id for chain in CHAINS}, "each SLOW entry names a documented command"
    assert any(len(chain.commands) > 1 for chain in CHAINS), "the Resuming block's commands form one chain"


@pytest.mark.parametrize(
    "chain", [pytest.param(c, marks=pytest.mark.slow) if c.id in SLOW else c for c in CHAINS], ids=[c.id for c in CHAINS]
)
def test_documented_command_runs(tmp_path, chain):
    for pattern, reason in NOT_RUN.items():
        if any(pattern in c for c in chain.commands):
            pytest.skip(reason)
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="1")
    previous_dir: Path | None = None
    for k, command in enumerate(chain.commands):
        out = tmp_path / f"cmd{k}"
        args = smoke_args(command, k, out, chain.commands[0], previous_dir)
        proc = launch("lit_rl.train", args, cwd=tmp_path, env=env, timeout=600, logs=tmp_path / f"logs{k}")
        assert proc.returncode == 0, f"{shlex.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        if "--cfg" in args:
            assert "total_timesteps:" in proc.stdout
            continue
        if "-m" in args:
            rows = read_csv_rows(out / "sweep_summary.csv")
            assert rows and all(r["status"] == "completed" for r in rows), rows
            continue
        resume = next((a.split("=", 1)[1] for a in args if a.startswith("resume=")), None)
        run_dir = Path(resume) if resume else out
        summary = read_summary(run_dir)
        assert summary["status"] == "completed" and summary["env_steps"] >= SMOKE_STEPS + 100 * k, summary
        if k > 0:  # a resume continues the run before it: its summary records where it came from
            assert summary["resumed_from"] == str(previous_dir / "checkpoints" / "last.ckpt"), summary
        previous_dir = run_dir
