"""How collect/update rounds are packed into Lightning batches (``steps_per_batch``).

Several rounds per batch spread Lightning's per-batch cost (about 0.3-0.6 ms on a CPU: 5-7 % of a default
SAC/TD3 step at one round per batch). A batch ends early where something is due, so logs, evaluations, the
budget and a preemption signal happen at the same env steps whatever ``steps_per_batch`` is.
"""

from __future__ import annotations

from typing import Any

DEFAULT_STEPS_PER_BATCH = 16


def batch_end_step(algo: Any) -> int:
    """The env step by which ``algo``'s running Lightning batch ends, asked after every round.

    The budget, the next log, or the earliest ``next_batch_end(module)`` of the Trainer's callbacks (e.g.
    :class:`~lit_rl.callbacks.PeriodicEvaluation`'s next evaluation; ``None``: no event due). A callback's step
    must stay put until its event is handled in ``on_train_batch_end``.
    """
    end = min(algo.total_timesteps, algo.clock.next_log)
    trainer = algo._trainer
    for callback in trainer.callbacks if trainer is not None else ():
        due = getattr(callback, "next_batch_end", None)
        step = due(algo) if due is not None else None
        if step is not None and step < end:
            end = step
    return end
