"""A pack member's place in a run built by the launcher: a Lightning callback of the member's own Trainer."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import lightning as L
import torch

from lit_rl.callbacks.preemption import PreemptionCheckpoint
from lit_rl.core.network_setup import global_rng_lock
from lit_rl.nets.noise_source import thread_generator
from lit_rl.packed.run import PackRun


class PackMember(L.Callback):
    """Member ``index`` of ``run``: at the start of training it joins the pack (waiting for the others), and its
    gradient steps are taken in the pack's rounds; its noise comes from its own generator.

    Its checkpoints hold what is the pack's: the member's slice of the pack's Adam moments (written into the
    member's optimizers before Lightning reads them) and its generator's state, so a resume continues exactly.
    """

    def __init__(self, run: PackRun, index: int) -> None:
        super().__init__()
        self.run, self.index = run, index
        self.generator_state: torch.Tensor | None = None  # restored from a checkpoint
        self._noise = contextlib.ExitStack()
        self._setup_lock: threading.RLock | None = None

    @contextlib.contextmanager
    def set_up_alone(self) -> Iterator[None]:
        """Run the member's run inside: until it joins the pack, it holds the lock of torch's, numpy's and Python's
        global generators, so members set up one at a time. Lightning restores those generators after its sanity
        check (``isolate_rng``); in another member's network initialisation, that would change its weights."""
        self._setup_lock = global_rng_lock()
        self._setup_lock.acquire()
        try:
            yield
        finally:
            self._setup_done()

    def _setup_done(self) -> None:
        if self._setup_lock is not None:
            self._setup_lock.release()
            self._setup_lock = None

    def setup(self, trainer: L.Trainer, pl_module: Any, stage: str) -> None:
        # Signal handlers live in the main thread only: the launcher hands a stop signal to the member's own.
        self.run.preemptions += [c for c in trainer.callbacks if isinstance(c, PreemptionCheckpoint)]  # type: ignore[attr-defined]

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self._setup_done()  # the next member sets up while this one waits for the others
        if self.generator_state is not None:  # a resumed member: its stream where its checkpoint left it
            generator = torch.Generator()
            generator.set_state(self.generator_state)
            pl_module.__dict__["packed_generator"] = generator
        generator = self.run.join(self.index, pl_module)
        self._noise.enter_context(thread_generator(generator))

    def on_exception(self, trainer: L.Trainer, pl_module: Any, exception: BaseException) -> None:
        self.run.leave(self.index)  # a diverged member fails alone: the others are not kept waiting for it

    def teardown(self, trainer: L.Trainer, pl_module: Any, stage: str) -> None:
        self._noise.close()
        self.run.leave(self.index)

    def state_dict(self) -> dict[str, Any]:
        # Lightning reads callbacks' states just before the optimizers' (checkpoint_connector.dump_checkpoint).
        self.run.write_optimizer_states(self.index)
        generator = self.run.generators[self.index]
        return {"generator": None if generator is None else generator.get_state(), "pack_size": self.run.size}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.generator_state = state_dict.get("generator")
