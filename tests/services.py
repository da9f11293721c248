"""The servers the tests start, and their stop when the test run ends (a pytest plugin: ``tests/conftest.py``).

Fixtures start a real PostgreSQL (``scripts/postgres.sh``) and a real single-node SLURM (``scripts/slurm.sh``) on
demand, once per xdist worker that asks, and skip, saying why, where that cannot be done. The daemons detach from
the worker that started them; the run's main process is made their *subreaper* (Linux ``prctl``), so that they
become its children. When the run ends it stops them: PostgreSQL and SLURM through their scripts (SLURM's jobs
cancelled first), anything else (a browser driver, a job process) with SIGTERM, then SIGKILL. Servers that were
running before the tests are not its descendants and are left alone. Whatever could not be stopped is named and
fails the run.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit_rl.launcher.doctor import postgres_server as postgres_server_binary

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_SCRIPT = ROOT / "scripts" / "postgres.sh"
SLURM_SCRIPT = ROOT / "scripts" / "slurm.sh"
SLURM_DAEMONS = ("slurmctld", "slurmd")
_PR_SET_CHILD_SUBREAPER = 36
_SESSION = pytest.StashKey[pytest.Session]()


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The SQLAlchemy URL of a running PostgreSQL (``scripts/postgres.sh start``); skips, saying why, without one."""
    if postgres_server_binary() is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            pytest.skip("PostgreSQL is not installed and installing it needs root and apt-get (scripts/postgres.sh)")
    pytest.importorskip("psycopg", reason="the PostgreSQL driver is the postgres extra: pip install -e '.[postgres]'")
    started = subprocess.run(["bash", str(POSTGRES_SCRIPT), "start"], capture_output=True, text=True, timeout=600)
    if started.returncode != 0:
        pytest.skip(f"scripts/postgres.sh start failed: {started.stderr.strip() or started.stdout.strip()}")
    return subprocess.run(["bash", str(POSTGRES_SCRIPT), "url"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="session")
def slurm_cluster() -> str:
    """The partition to submit to (``debug``) of a running single-node SLURM (``scripts/slurm.sh start``)."""
    if os.geteuid() != 0:
        pytest.skip("SLURM tests need root (scripts/slurm.sh starts slurmctld/slurmd and installs them with apt)")
    if shutil.which("slurmctld") is None and shutil.which("apt-get") is None:
        pytest.skip("SLURM is not installed and there is no apt-get to install slurm-wlm and munge")
    result = subprocess.run(["bash", str(SLURM_SCRIPT), "start"], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.skip(f"scripts/slurm.sh start failed: {result.stderr.strip() or result.stdout.strip()}")
    return "debug"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and sys.platform.startswith("linux"):  # the run's main process
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


def pytest_unconfigure(config: pytest.Config) -> None:
    """After the last worker is gone: stop what the tests left running; fail the run if anything survives."""
    if hasattr(config, "workerinput") or not sys.platform.startswith("linux"):
        return
    stopped, left = stop_descendants()
    if stopped:
        sys.stderr.write(f"stopped what the tests started: {describe(stopped)}\n")
    session = config.stash.get(_SESSION, None)
    if left:
        sys.stderr.write(f"ERROR: still running after the tests, could not be stopped: {describe(left)}\n")
        if session is not None:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def descendants(root: int | None = None) -> dict[int, str]:
    """Live (not zombie) descendants of ``root`` (this process): pid -> command name."""
    root = os.getpid() if root is None else root
    parents, names = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited meanwhile
            continue
        name, _, rest = stat[stat.index("(") + 1 :].rpartition(")")
        state, ppid = rest.split()[:2]
        if state != "Z":
            parents[int(entry.name)], names[int(entry.name)] = int(ppid), name
    found: dict[int, str] = {}
    for pid in parents:
        ancestor = parents[pid]
        while ancestor in parents and ancestor != root:
            ancestor = parents[ancestor]
        if ancestor == root:
            found[pid] = names[pid]
    return found


def stop_descendants(grace_s: float = 10.0) -> tuple[dict[int, str], dict[int, str]]:
    """Stop this process's descendants, servers through their own scripts; (what was running, what survived)."""
    running = descendants()
    if not running:
        return {}, {}
    names = set(running.values())
    if names & set(SLURM_DAEMONS):
        _run_reaping(["scancel", "--full", f"--user={os.getuid()}"])
        _run_reaping(["bash", str(SLURM_SCRIPT), "stop"])
    if "postgres" in names:
        _run_reaping(["bash", str(POSTGRES_SCRIPT), "stop"])
    _wait_gone(grace_s, only=("postgres", *SLURM_DAEMONS, "slurmstepd"))
    for pid in descendants():
        _signal(pid, signal.SIGTERM)
    for pid in _wait_gone(grace_s):
        _signal(pid, signal.SIGKILL)
    return running, _wait_gone(grace_s)


def _wait_gone(timeout_s: float, only: tuple[str, ...] | None = None) -> dict[int, str]:
    """Descendants still running after up to ``timeout_s`` (those named in ``only``, when given)."""
    deadline = time.monotonic() + timeout_s
    while True:
        _reap()
        left = {pid: name for pid, name in descendants().items() if only is None or name in only}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _run_reaping(command: list[str], timeout_s: float = 120.0) -> None:
    """Run a stop command; meanwhile collect the daemons that exit (as zombies they would still look alive to it)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        _reap(keep=process.pid)
        time.sleep(0.1)
    if process.poll() is None:
        process.kill()
        process.wait()


def _reap(keep: int | None = None) -> None:
    """Collect the exit status of adopted children that ended (they would stay zombies of this process)."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rpartition(")")[2].split()[:2]
        except OSError:
            continue
        pid = int(stat.parent.name)
        if state == "Z" and int(ppid) == me and pid != keep:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def describe(processes: dict[int, str]) -> str:
    by_name: dict[str, list[int]] = {}
    for pid, name in sorted(processes.items()):
        by_name.setdefault(name, []).append(pid)
    return ", ".join(f"{name} (pid {' '.join(map(str, pids))})" for name, pids in sorted(by_name.items()))
