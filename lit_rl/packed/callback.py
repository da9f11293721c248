"""A pack member's place in a run built by the launcher: a Lightning callback of the member's own Trainer."""

from __future__ import annotations

import contextlib
from typing import Any

import lightning as L
import torch

from lit_rl.callbacks.preemption import PreemptionCheckpoint
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

    def setup(self, trainer: L.Trainer, pl_module: Any, stage: str) -> None:
        # Signal handlers live in the main thread only: the launcher hands a stop signal to the member's own.
        self.run.preemptions += [c for c in trainer.callbacks if isinstance(c, PreemptionCheckpoint)]  # type: ignore[attr-defined]

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
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
