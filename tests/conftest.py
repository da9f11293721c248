"""Test-session hooks: the learning tests' figures (what they print) are listed at the end of the run."""

from __future__ import annotations

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
