"""pytest plugin for scripts/sb3_suite.py: selects the SB3 tests that exercise lit_rl's algorithms and records outcomes.

Loaded with ``-p sb3_suite_plugin`` (``scripts/`` on PYTHONPATH). ``SB3_SUITE_OUT`` names the JSON file the
controller process writes: ``{"tests": {nodeid: {"outcome", "message"}}, "collect_errors": {file: message}}``.

Selection (documented here once; the script only counts):

1. A test parametrised with an algorithm (a class such as ``SAC`` or a name such as ``"sac"``) is selected when
   that algorithm is one of lit_rl's (``OURS``) and dropped when it is another (``FOREIGN``: A2C, PPO, QRDQN, ...).
2. Any other test is selected when its body names something lit_rl provides (an algorithm, ``HerReplayBuffer``,
   a callback, an action noise, ``GoalSelectionStrategy``) and no foreign algorithm.
"""

from __future__ import annotations

import ast
import inspect
import json
import linecache
import os
import signal
import textwrap
from functools import cache

import pytest

OURS = {"SAC", "TD3", "DDPG", "DQN", "CrossQ"}
FOREIGN = {"A2C", "PPO", "QRDQN", "TQC", "ARS", "TRPO", "MaskablePPO", "RecurrentPPO"}
# Names whose use makes a test about lit_rl (besides OURS); the import table in sb3_suite_rewrite.py is a superset.
PROVIDED = OURS | {
    "HerReplayBuffer",
    "GoalSelectionStrategy",
    "NormalActionNoise",
    "OrnsteinUhlenbeckActionNoise",
    "VectorizedActionNoise",
    "BaseCallback",
    "CallbackList",
    "CheckpointCallback",
    "EvalCallback",
    "EventCallback",
    "EveryNTimesteps",
    "StopTrainingOnRewardThreshold",
    "StopTrainingOnNoModelImprovement",
    "StopTrainingOnMaxEpisodes",
    "LogEveryNTimesteps",
}


def _algorithm_name(value: object) -> str | None:
    name = getattr(value, "__name__", value) if isinstance(value, type) else value
    if not isinstance(name, str):
        return None
    for known in OURS | FOREIGN:
        if name.lower() == known.lower():
            return known
    return None


@cache
def _names_in_body(function) -> frozenset[str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))


def is_selected(item) -> bool:
    callspec = getattr(item, "callspec", None)
    algorithms = {_algorithm_name(v) for v in (callspec.params.values() if callspec else ())} - {None}
    if algorithms:
        return algorithms <= OURS
    names = _names_in_body(getattr(item, "function", None))
    return bool(names & PROVIDED) and not names & FOREIGN


def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if is_selected(item)]
    dropped = [item for item in items if not is_selected(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def first_line(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.strip().split("\n")[0]
    # a collection error is plain text: its "E   ..." lines hold the exception (an ImportError for a missing name)
    lines = [line[1:].strip() for line in str(longrepr or "").splitlines() if line.startswith("E ")]
    return lines[0] if lines else str(longrepr or "").strip().split("\n")[0]


def failing_line(report) -> str:
    """The source line of a failed assertion ("assert False" alone says little), else ""."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is None or not crash.message.startswith(("assert", "AssertionError")):
        return ""
    return linecache.getline(str(crash.path), crash.lineno).strip()


class Recorder:
    def __init__(self, path: str):
        self.path = path
        self.tests: dict[str, dict] = {}
        self.collect_errors: dict[str, str] = {}

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors[report.nodeid] = first_line(report)

    def pytest_runtest_logreport(self, report):
        entry = self.tests.setdefault(report.nodeid, {"outcome": "passed", "message": ""})
        if report.when == "call" and report.failed:
            entry.update(outcome="failed", message=first_line(report), source=failing_line(report))
        elif report.failed and entry["outcome"] == "passed":  # setup or teardown
            entry.update(outcome="error", message=first_line(report))
        elif report.skipped and entry["outcome"] == "passed":
            entry.update(outcome="skipped", message=first_line(report))

    def pytest_sessionfinish(self):
        with open(self.path, "w") as f:
            json.dump({"tests": self.tests, "collect_errors": self.collect_errors}, f, indent=1, sort_keys=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """``SB3_SUITE_TIMEOUT`` seconds per test (pytest-timeout is not a dependency); SIGALRM, so POSIX only."""
    seconds = int(os.environ.get("SB3_SUITE_TIMEOUT") or 0)
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _expire(signum, frame):
        raise TimeoutError(f"test ran longer than {seconds} s (--timeout)")

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    path = os.environ.get("SB3_SUITE_OUT")
    if path and not hasattr(config, "workerinput"):  # only the controller writes (xdist forwards worker reports)
        config.pluginmanager.register(Recorder(path), "sb3_suite_recorder")
