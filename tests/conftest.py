"""Test-session hooks: the rendering backend, and the learning tests' figures listed at the end of the run."""

from __future__ import annotations

# MuJoCo's offscreen backend (MUJOCO_GL) is chosen before any test module imports MuJoCo or dm_control, in the
# controller and in every xdist worker (each imports this file first); subprocesses inherit the choice.
from lit_rl.utils.rendering import choose_mujoco_gl

choose_mujoco_gl()

# The servers the tests start (fixtures postgres_server, slurm_cluster) are stopped when the run ends; a crashed
# worker's unrun tests are named.
pytest_plugins = ("tests.services", "tests.crashes")

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
