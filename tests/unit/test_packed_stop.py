"""A stop signal reaches every member of a pack after the same round, so that the pack resumes together: members
that stopped rounds apart would hold Adam states of different step counts, which no pack can continue."""

from __future__ import annotations

import signal
import threading
import time

import pytest

import lit_rl.packed.run as packed_run
from lit_rl.callbacks.preemption import PreemptionCheckpoint
from lit_rl.packed.run import PackRun


@pytest.fixture
def run(monkeypatch, tmp_path) -> PackRun:
    """A pack of two whose rounds step nothing (the stepping is not what is tested here)."""
    monkeypatch.setattr(packed_run, "packed_round", lambda pack, requested: None)
    pack = PackRun(2)
    pack.pack = object()  # type: ignore[assignment]
    pack.preemptions = [PreemptionCheckpoint(tmp_path / f"{i}.ckpt") for i in range(2)]
    return pack


def received(run: PackRun) -> list[int | None]:
    return [p.received for p in run.preemptions]


def test_before_any_round_every_member_stops_at_once(run):
    run.stop(signal.SIGTERM)
    assert received(run) == [signal.SIGTERM, signal.SIGTERM]


def test_once_rounds_are_taken_the_stop_reaches_all_members_in_the_next_round(run):
    run.round([0, 1])
    run.stop(signal.SIGTERM)
    assert received(run) == [None, None]  # a member between rounds would stop one round before the others
    run.round([0, 1])
    assert received(run) == [signal.SIGTERM, signal.SIGTERM]


def test_a_member_waiting_for_the_first_round_defers_the_stop_to_that_round(run):
    waiter = threading.Thread(target=run.rounds.wait, args=(0,))
    waiter.start()
    deadline = time.monotonic() + 10
    while 0 not in run.rounds.waiting:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    run.stop(signal.SIGUSR2, requeue=lambda signum, frame: None)
    assert received(run) == [None, None]
    run.rounds.wait(1)  # the last member arrives: the round runs, and the stop with it
    waiter.join(timeout=10)
    assert received(run) == [signal.SIGUSR2, signal.SIGUSR2]
    assert all(p._requeue.get(signal.SIGUSR2) is not None for p in run.preemptions)  # ends as requeued


def test_a_second_signal_changes_nothing(run):
    run.stop(signal.SIGTERM)
    run.stop(signal.SIGINT)
    assert run.stop_signal == signal.SIGTERM and received(run) == [signal.SIGTERM, signal.SIGTERM]
