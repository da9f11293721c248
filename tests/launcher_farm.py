"""``python -m lit_rl.train`` in a fraction of a second: a process that has imported the launcher forks one child
per run (a pytest plugin: ``tests/conftest.py``).

A launcher subprocess spends 3-4 s importing torch, Lightning and gymnasium before it reads its first override,
and the launcher's tests start about a hundred of them. The farm imports those once per test worker; each run is a
``fork`` of it that sets its argv, working directory, environment and standard streams as a new process would have
them, then runs the module as ``__main__`` (``runpy``), exactly what ``python -m`` does. Nothing has run in the farm
but imports, so each child starts from the state a fresh interpreter has after those imports.

What a fresh interpreter does at startup is not repeated: warnings printed while importing, and variables read
only then (``PYTHONWARNINGS``, ``PYTHONHASHSEED``, ...). Tests of those (a quiet terminal, the import-time
environment) start a real subprocess (:func:`tests.helpers.run_launcher` with ``fresh=True``).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The farm imports with the environment the test run started with, whatever a test has changed since: what
# is read at import (MUJOCO_GL binds MuJoCo's renderer) is then what a fresh launcher would read.
START_ENV = dict(os.environ)

# The farm: read one JSON request per line from stdin, fork, answer the child's pid, then its exit status.
SERVER = r"""
import json, os, runpy, sys, traceback

import lit_rl.train  # noqa: F401  torch, Lightning, Hydra, gymnasium and lit_rl's own modules
import lit_rl.launcher.build  # noqa: F401
import gymnasium.envs.mujoco  # noqa: F401

requests, answers = os.fdopen(0, "r"), os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray output of the farm itself cannot corrupt the answers
for line in requests:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()
            os.chdir(job["cwd"])
            os.environ.clear()
            os.environ.update(job["env"])
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            sys.argv = [job["module"], *job["args"]]
            sys.path[0] = job["cwd"]
            sys.modules.pop(job["module"], None)  # run afresh as __main__, as python -m does (runpy warns otherwise)
            runpy.run_module(job["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if stop.code is not None and not isinstance(stop.code, int):
                print(stop.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
    answers.write(f"{pid}\n")
    answers.flush()
    _, status = os.waitpid(pid, 0)
    answers.write(f"{os.waitstatus_to_exitcode(status)}\n")
    answers.flush()
"""


class LauncherFarm:
    """One farm process; :meth:`run` is ``subprocess.run([python, "-m", module, *args], ...)`` without the imports."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            cwd=ROOT,
            env=START_ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._pending = b""  # read past the last answer; select() cannot see what a buffered reader holds
        atexit.register(self.close)

    def run(
        self, module: str, args: list[str], cwd: Path, env: dict[str, str], timeout: float, logs: Path
    ) -> subprocess.CompletedProcess:
        logs.mkdir(parents=True, exist_ok=True)
        out, err = logs / "stdout.txt", logs / "stderr.txt"
        request = {"module": module, "args": args, "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        pid = int(self._answer(60))
        try:
            code = int(self._answer(timeout))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended as the time ran out
                pass
            self._answer(60)
            raise subprocess.TimeoutExpired([module, *args], timeout, out.read_text(), err.read_text()) from None
        return subprocess.CompletedProcess(
            [sys.executable, "-m", module, *args], code, out.read_text(errors="replace"), err.read_text(errors="replace")
        )

    def _answer(self, timeout: float) -> str:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired("launcher farm", timeout)
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"the launcher farm exited with {self.process.wait()}")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


_IDLE: list[LauncherFarm] = []  # this test worker's farms not running a launcher now
_ALL: list[LauncherFarm] = []
_POOL = threading.Lock()


def launch(
    module: str, args: list[str], cwd: Path, env: dict[str, str], timeout: float, logs: Path
) -> subprocess.CompletedProcess:
    """``python -m <module> <args>`` in an idle farm of this test worker; a new farm where all are busy (a test
    that runs launchers side by side in threads)."""
    with _POOL:
        while _IDLE and _IDLE[-1].process.poll() is not None:
            _ALL.remove(_IDLE.pop())
        if _IDLE:
            farm = _IDLE.pop()
        else:
            farm = LauncherFarm()
            _ALL.append(farm)
    try:
        return farm.run(module, args, cwd=cwd, env=env, timeout=timeout, logs=logs)
    finally:
        with _POOL:
            _IDLE.append(farm)


def pytest_sessionfinish() -> None:
    """Closes this worker's farms before the run checks that nothing it started is left (:mod:`tests.services`)."""
    for farm in _ALL:
        farm.close()
