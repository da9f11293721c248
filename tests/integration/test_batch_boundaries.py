"""Several collect/update rounds per Lightning batch (``steps_per_batch``), with events at exact env steps."""

from __future__ import annotations

import signal

import lightning as L
import pytest
import torch

from lit_rl import SAC
from lit_rl.core.batching import DEFAULT_STEPS_PER_BATCH

TINY = {"net_arch": [16]}


class BatchEnds(L.Callback):
    """Records the env step at each batch end; asks for a batch end at every multiple of ``every``."""

    def __init__(self, every: int) -> None:
        self.every, self.steps, self.next_event = every, [], every

    def next_batch_end(self, pl_module) -> int:
        return self.next_event  # moves on only once the event is handled at a batch end (as PeriodicEvaluation)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.steps.append(pl_module.num_timesteps)
        if pl_module.num_timesteps >= self.next_event:
            self.next_event = (pl_module.num_timesteps // self.every + 1) * self.every


def run(steps_per_batch: int | None, every: int, total: int = 200) -> tuple[SAC, BatchEnds]:
    kwargs = {} if steps_per_batch is None else {"steps_per_batch": steps_per_batch}
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=20, batch_size=8, policy_kwargs=TINY, seed=0,
                train_freq=2, **kwargs)  # fmt: skip
    ends = BatchEnds(every)
    model.learn(total, callback=ends, log_interval=None)
    return model, ends


def test_default_packs_several_rounds_per_batch_and_ends_batches_where_callbacks_ask():
    model, ends = run(None, every=30)
    assert model.steps_per_batch is None and model.rounds_per_batch == DEFAULT_STEPS_PER_BATCH > 1  # learn()
    # Every requested step is a batch end (train_freq=2 rounds reach each even multiple of 30 exactly).
    assert {30, 60, 90, 120, 150, 180} <= set(ends.steps)
    assert ends.steps[-1] == 200
    # Otherwise batches hold up to steps_per_batch rounds of 2 env steps: far fewer batches than rounds.
    assert len(ends.steps) < 200 // 2 // 4
    assert max(b - a for a, b in zip(ends.steps, ends.steps[1:], strict=False)) <= 2 * DEFAULT_STEPS_PER_BATCH


@pytest.mark.parametrize("steps_per_batch", [1, 5])
def test_batching_does_not_change_the_run(steps_per_batch):
    """Same rounds in the same order: the parameters after training equal the default batching's."""
    reference, _ = run(None, every=1000)
    model, ends = run(steps_per_batch, every=1000)
    if steps_per_batch == 1:
        assert len(ends.steps) == 100  # one round of train_freq=2 env steps per batch
    for a, b in zip(reference.policy.parameters(), model.policy.parameters(), strict=True):
        assert (a == b).all()


def test_a_signal_ends_the_batch_after_the_running_round(tmp_path):
    """PreemptionCheckpoint asks for the batch to end at once: the checkpoint is one round past the signal."""
    from lit_rl.callbacks import Preempted, PreemptionCheckpoint
    from lit_rl.callbacks.sb3 import BaseCallback

    handler = PreemptionCheckpoint(tmp_path / "preempted.ckpt")

    class SignalAt(BaseCallback):  # SB3-style: called after every env step, mid-batch
        def _on_step(self) -> bool:
            if self.num_timesteps == 37:
                handler.received = signal.SIGTERM
            return True

    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=20, batch_size=8, policy_kwargs=TINY, seed=0)
    with pytest.raises(Preempted):
        model.learn(200, callback=[handler, SignalAt()])
    assert model.num_timesteps == 37  # not the end of a 16-round batch
    saved = torch.load(tmp_path / "preempted.ckpt", map_location="cpu", weights_only=False)
    assert saved["rl_state"]["num_timesteps"] == 37
