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
from tests.services import POSTGRES_SCRIPT, SLURM_DAEMONS, SLURM_SCRIPT


def make_test_command() -> list[str]:
    """``make test``'s pytest command with its flags (``-n``, ``--dist``, worker restarts), without its ``-m``."""
    printed = subprocess.run(["make", "-s", "-n", "test", "JOBS=2"], cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(line for line in printed.stdout.splitlines() if "/pytest " in line)
    words = [w for w in shlex.split(line) if "=" not in w or w.startswith("-")]  # drop VAR=value prefixes
    assert words[0].endswith("/pytest") and "-m" in words, line
    flags = words[1 : words.index("-m")]
    assert {"-n", "--dist", "loadgroup"} <= set(flags) and any(f.startswith("--max-worker-restart=") for f in flags), line
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


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    """The SLURM and browser tests rely on it (one worker per 2-CPU test cluster)."""
    folder = write_tests(tmp_path / "suite", f"""
        import os
        from pathlib import Path

        import pytest

        @pytest.mark.parametrize("i", range(6))
        @pytest.mark.xdist_group("one")
        def test_grouped(i):
            (Path({str(tmp_path)!r}) / f"grouped{{i}}").write_text(os.environ["PYTEST_XDIST_WORKER"])

        @pytest.mark.parametrize("i", range(6))
        def test_free(i):
            pass
    """)  # fmt: skip
    code, out = run_inner(folder, timeout=60)
    assert code == 0, out
    workers = {(tmp_path / f"grouped{i}").read_text() for i in range(6)}
    assert len(workers) == 1, (workers, out)


def test_a_crashing_test_fails_once_and_the_run_goes_on_to_its_end(tmp_path):
    """Workers killed by ``os.abort()``, two in the middle of an xdist group: each crashed test is reported failed
    once, replacement workers run every other test (the rest of its group too), and the run ends non-zero within
    a minute."""
    folder = write_tests(tmp_path / "suite", """
        import os
        import time

        import pytest

        @pytest.mark.parametrize("i", range(4))
        def test_alone(i):
            time.sleep(0.2)

        @pytest.mark.xdist_group("g")
        def test_before_crash():
            time.sleep(0.5)

        @pytest.mark.xdist_group("g")
        def test_crash():
            os.abort()

        @pytest.mark.xdist_group("g")
        def test_after_crash():
            pass

        @pytest.mark.xdist_group("h")
        def test_crash_too():
            os.abort()

        @pytest.mark.xdist_group("h")
        def test_after_crash_too():
            pass
    """)  # fmt: skip
    code, out = run_inner(folder, timeout=60, report="A")
    assert code == 1, out
    for crashed in ("test_crash@g", "test_crash_too@h"):
        assert out.count(f"FAILED suite/test_cases.py::{crashed} - worker 'gw") == 1, out
    passed = ["test_before_crash@g", "test_after_crash@g", "test_after_crash_too@h", *(f"test_alone[{i}]" for i in range(4))]
    assert all(f"PASSED suite/test_cases.py::{name}" in out for name in passed), out
    assert "2 failed, 7 passed" in out, out


def test_past_the_restart_limit_the_run_stops_naming_what_did_not_run(tmp_path):
    """Every test crashes its worker: once the replacements are used up the run stops, and the tests it never
    reached are listed by name."""
    folder = write_tests(tmp_path / "suite", """
        import os

        import pytest

        @pytest.mark.parametrize("i", range(12))
        def test_crash(i):
            os.abort()
    """)  # fmt: skip
    code, out = run_inner(folder, timeout=60)
    assert code == 1, out
    crashed = out.count("\nFAILED suite/test_cases.py::test_crash[")
    section = out.partition("not run: a worker crashed and the run stopped")[2].partition(" tests did not run")[0]
    not_run = [line for line in section.splitlines() if line.startswith("suite/test_cases.py::test_crash[")]
    assert 0 < crashed < 12 and len(not_run) == 12 - crashed, out
    assert section.endswith(f"\n{12 - crashed} of 12"), out


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

        def started_again(script):  # the running server holds no start lock: a second start returns at once
            again = subprocess.run(["bash", script, "start"], capture_output=True, text=True, timeout=30)
            assert again.returncode == 0 and "already running" in again.stdout, again.stdout + again.stderr

        def test_postgres(postgres_server):
            started_again({str(POSTGRES_SCRIPT)!r})
            (MARKS / "postgres").write_text(postgres_server)

        def test_slurm(slurm_cluster):
            started_again({str(SLURM_SCRIPT)!r})
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
