"""A crashed xdist worker: its test runs once, and the tests a stopped run did not reach are named (a pytest
plugin: ``tests/conftest.py``).

pytest-xdist's group scheduler (``--dist loadgroup``) puts a crashed worker's whole group back in the queue, the
crashed test with it: the test then crashes the next worker too, and the run can end up waiting forever for a
group no worker will finish. Here the crashed test counts as done: it is reported failed once, and a replacement
worker runs the rest of its group. ``make test`` replaces a few crashed workers (``--max-worker-restart``); past
that xdist stops the run, and the tests it had not reached are listed at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

SHOWN = 20  # not-run tests listed by name; the rest are counted


class _Tally:
    def __init__(self) -> None:
        self.collected: list[str] = []
        self.reported: set[str] = set()
        self.crashed: list[str] = []


_TALLY = pytest.StashKey[_Tally]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TALLY] = _Tally()


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: Any) -> None:
    for work_unit in getattr(sched, "workqueue", {}).values():  # the group scheduler's queue: scope -> {test: done}
        if crashitem in work_unit:
            work_unit[crashitem] = True


@pytest.hookimpl(optionalhook=True)  # xdist's hooks: unknown where it is not loaded (-p no:xdist)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    tally = node.config.stash[_TALLY]
    if not tally.collected:
        tally.collected = list(ids)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    if error:
        node.config.stash[_TALLY].crashed.append(node.gateway.id)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = getattr(report, "node", None)
    if config is not None:  # in the controller, reports from workers carry their node
        config.config.stash[_TALLY].reported.add(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    tally = config.stash[_TALLY]
    if not tally.crashed:
        return
    not_run = [nodeid for nodeid in tally.collected if nodeid not in tally.reported]
    if not not_run:
        return
    terminalreporter.section("not run: a worker crashed and the run stopped", sep="=", red=True)
    for nodeid in not_run[:SHOWN]:
        terminalreporter.write_line(nodeid)
    if len(not_run) > SHOWN:
        terminalreporter.write_line(f"... and {len(not_run) - SHOWN} more")
    terminalreporter.write_line(f"{len(not_run)} of {len(tally.collected)} tests did not run")
