"""Test-session hooks: the rendering backend, servers and crashes, the long runs' timeout, and the learning tests'
figures listed at the end of the run."""

from __future__ import annotations

# MuJoCo's offscreen backend (MUJOCO_GL) is chosen before any test module imports MuJoCo or dm_control, in the
# controller and in every xdist worker (each imports this file first); subprocesses inherit the choice.
from lit_rl.utils.rendering import choose_mujoco_gl

choose_mujoco_gl()

import pytest  # noqa: E402

# The servers the tests start (fixtures postgres_server, slurm_cluster) are stopped when the run ends; a crashed
# worker's test runs once, and the tests a stopped run did not reach are named.
pytest_plugins = ("tests.services", "tests.crashes", "tests.launcher_farm")
SLOW_TIMEOUT_S = 1800  # a long run (marked slow) may take 30 minutes; every other test 10 (pyproject's timeout)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))

_LEARNING_LINES: list[str] = []


def pytest_runtest_logreport(report) -> None:
    # Runs in the controller, also with pytest-xdist workers (their reports carry the captured output).
    if report.when == "call" and "tests/learning/" in report.nodeid:
        test = report.nodeid.rpartition("/")[2]  # file::test[param]
        _LEARNING_LINES.extend(f"{test}: {line}" for line in report.capstdout.splitlines() if line.strip())


def pytest_terminal_summary(terminalreporter) -> None:
    if _LEARNING_LINES:
        terminalreporter.section("learning results")
        for line in _LEARNING_LINES:
            terminalreporter.write_line(line)
