"""Where a pack's member threads meet: a barrier whose parties may leave (a member whose run ended or failed)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Rendezvous:
    """``parties`` threads, each by its index, meet at :meth:`wait`; the last of those still in the pack to arrive runs
    ``action`` (with the indices that arrived) while the others wait, then all go on.

    A party that :meth:`leave`\\ s is no longer waited for; if it was the last one awaited, the others are released at
    once. An ``action`` that raises, or :meth:`abort`, releases everyone with ``threading.BrokenBarrierError``.
    """

    def __init__(
        self, parties: int, action: Callable[[list[int]], None], condition: threading.Condition | None = None
    ) -> None:
        self.action = action
        self.active = set(range(parties))
        self.waiting: set[int] = set()
        self.generation = 0
        self.broken = False
        self._condition = condition or threading.Condition()  # rendezvous given one share its lock

    def wait(self, index: int) -> None:
        with self._condition:
            if self.broken:
                raise threading.BrokenBarrierError
            self.waiting.add(index)
            if self.waiting >= self.active:
                self._release()
                return
            generation = self.generation
            while generation == self.generation and not self.broken:
                self._condition.wait()
            if self.broken:
                raise threading.BrokenBarrierError

    def leave(self, index: int) -> None:
        """Party ``index`` is not waited for any more."""
        with self._condition:
            self.active.discard(index)
            self.waiting.discard(index)
            if self.waiting and self.waiting >= self.active and not self.broken:
                self._release()

    def hold(self) -> threading.Condition:
        """The rendezvous's lock, as a context manager: while held, no party arrives and no ``action`` runs."""
        return self._condition

    def abort(self) -> None:
        with self._condition:
            self.broken = True
            self._condition.notify_all()

    def _release(self) -> None:
        try:
            self.action(sorted(self.waiting))
        except BaseException:
            self.broken = True
            raise
        finally:
            self.waiting = set()
            self.generation += 1
            self._condition.notify_all()
