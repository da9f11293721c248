"""The README's test command (``make test``) on a suite that goes wrong: a crashing or stuck test ends the run
failed, with its name, and the servers tests start are stopped when it ends.

Each case runs ``make test``'s own pytest command (read from ``make -n``) over a tiny test folder.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.services import SLURM_DAEMONS


def make_test_command() -> list[str]:
    """``make test``'s pytest command with its flags (``-n``, ``--dist``, worker restarts), without its ``-m``."""
    printed = subprocess.run(["make", "-s", "-n", "test", "JOBS=2"], cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(line for line in printed.stdout.splitlines() if "/pytest " in line)
    words = [w for w in shlex.split(line) if "=" not in w or w.startswith("-")]  # drop VAR=value prefixes
    assert words[0].endswith("/pytest") and "-m" in words, line
    flags = words[1 : words.index("-m")]
    assert {"-n", "--dist", "--max-worker-restart=0"} <= set(flags), line
    plugins = ["-p", "tests.services", "-p", "tests.crashes"]  # what tests/conftest.py loads
    return [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider", *plugins, *flags]


def run_inner(folder: Path, timeout: float, report: str = "fEs", **env: str) -> tuple[int, str]:
    """``make test``'s command over ``folder``; (exit status, output)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    result = subprocess.run(
        [*make_test_command(), "--rootdir", str(folder.parent), f"-r{report}", str(folder)], cwd=folder.parent, env=full_env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    return result.returncode, result.stdout + result.stderr


def write_tests(folder: Path, code: str) -> Path:
    folder.mkdir()
    (folder / "test_cases.py").write_text(textwrap.dedent(code))
    return folder


def test_a_crashing_test_ends_the_run_within_a_minute_naming_it_and_what_did_not_run(tmp_path):
    """A worker killed by ``os.abort()`` in the middle of an xdist group: the run ends failed, naming the test;
    every other test either ran or is listed as not run."""
    folder = write_tests(tmp_path / "suite", """
        import os
        import time

        import pytest

        @pytest.mark.parametrize("i", range(6))
        def test_alone(i):
            time.sleep(0.2)

        @pytest.mark.xdist_group("g")
        def test_before_crash():
            pass

        @pytest.mark.xdist_group("g")
        def test_crash():
            os.abort()

        @pytest.mark.xdist_group("g")
        def test_after_crash():
            pass
    """)  # fmt: skip
    code, out = run_inner(folder, timeout=60, report="A")
    assert code == 1, out
    assert "FAILED suite/test_cases.py::test_crash - worker 'gw" in out and "crashed while running" in out, out
    others = ["test_before_crash", "test_after_crash", *(f"test_alone[{i}]" for i in range(6))]
    section = out.partition("not run: a worker crashed and the run stopped")[2].partition(" tests did not run")[0]
    not_run = [line.partition("::")[2] for line in section.splitlines() if line.startswith("suite/test_cases.py::")]
    assert not section or section.endswith(f"\n{len(not_run)} of 9"), out
    for name in others:
        assert (f"PASSED suite/test_cases.py::{name}" in out) != (name in not_run), (name, out)  # one or the other


def test_a_stuck_test_fails_at_its_timeout_and_the_others_run(tmp_path):
    folder = write_tests(tmp_path / "suite", """
        import time

        import pytest

        @pytest.mark.timeout(2)
        def test_stuck():
            time.sleep(300)

        def test_other():
            pass
    """)  # fmt: skip
    code, out = run_inner(folder, timeout=60)
    assert code == 1, out
    assert "FAILED suite/test_cases.py::test_stuck - Failed: Timeout (>2.0s)" in out, out
    assert "1 failed, 1 passed" in out, out


def slurm_running() -> bool:
    return all(subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0 for name in SLURM_DAEMONS)


def processes_mentioning(text: str) -> list[str]:
    """Command lines of the live processes whose command line contains ``text``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in words and "pytest" not in words:
            found.append(words)
    return found


@pytest.mark.xdist_group("slurm")  # beside the other SLURM tests: none of them runs while SLURM is stopped here
def test_servers_the_tests_start_are_stopped_when_the_run_ends(tmp_path):
    """An inner run starts a private PostgreSQL, SLURM (when this machine can) and a detached helper process; when
    it ends, none of them runs, and SLURM is left running if it was running before."""
    port, pg_dir, marks = "55433", tmp_path / "postgres", tmp_path / "started"
    marks.mkdir()
    folder = write_tests(tmp_path / "suite", f"""
        import subprocess
        from pathlib import Path

        MARKS = Path({str(marks)!r})

        def test_helper():  # a helper server that outlives its test: detached from the worker
            subprocess.Popen(["sleep", "{port}"], start_new_session=True)

        def test_postgres(postgres_server):
            (MARKS / "postgres").write_text(postgres_server)

        def test_slurm(slurm_cluster):
            (MARKS / "slurm").write_text(slurm_cluster)
    """)  # fmt: skip
    slurm_before = slurm_running()
    code, out = run_inner(folder, timeout=300, LIT_RL_POSTGRES_PORT=port, LIT_RL_POSTGRES_DIR=str(pg_dir))
    assert code == 0, out
    assert "stopped what the tests started:" in out and "sleep (pid" in out, out
    assert not processes_mentioning(f"sleep {port}"), out
    if (marks / "postgres").exists():  # it ran (where PostgreSQL can run here), and runs no more
        assert f":{port}/" in (marks / "postgres").read_text()
        assert not processes_mentioning(str(pg_dir)), out
    # SLURM: stopped if the inner run started it, left running if it ran before.
    assert slurm_running() == slurm_before, out
    if (marks / "slurm").exists() and not slurm_before:
        assert "slurmctld (pid" in out and "slurmd (pid" in out, out
