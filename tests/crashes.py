"""A crashed xdist worker: its test runs once, and the tests a stopped run did not reach are named (a pytest
plugin: ``tests/conftest.py``).

pytest-xdist's group scheduler (``--dist loadgroup``) has two faults with a crashed worker, mended here by a
subclass of it that ``make test`` uses:

- it puts the crashed worker's whole group back in the queue, the crashed test with it: the test then crashes the
  next worker too, and the run can end up waiting forever for a group no worker will finish. Here the crashed test
  counts as done: it is reported failed once, and another worker runs the rest of its group;
- it hands work to a replacement worker before that worker has collected the tests, and the run stops with an
  INTERNALERROR (``KeyError: <WorkerController gw4>``). Here a worker gets work once its collection is in.

``make test`` replaces a few crashed workers (``--max-worker-restart``); past that xdist stops the run, and the
tests it had not reached are listed at the end.
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


@pytest.hookimpl(optionalhook=True)  # xdist's hooks: unknown where it is not loaded (-p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class CrashSafeGroupScheduling(LoadGroupScheduling):
        def remove_node(self, node: Any) -> str | None:
            workload = self.assigned_work.pop(node)
            crashitem = next((test for unit in workload.values() for test, done in unit.items() if not done), None)
            if crashitem is None:  # the worker finished its work and shut down
                return None
            for unit in workload.values():
                if crashitem in unit:
                    unit[crashitem] = True
            self.workqueue.update({scope: unit for scope, unit in workload.items() if not all(unit.values())})
            for other in self.assigned_work:
                self._reschedule(other)
            return crashitem

        def _reschedule(self, node: Any) -> None:
            if node in self.registered_collections:  # a new worker gets work once its collection is in
                super()._reschedule(node)

    return CrashSafeGroupScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
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
