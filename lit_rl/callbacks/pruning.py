"""Optuna pruning as a Lightning callback: each evaluation is an intermediate value of the trial."""

from __future__ import annotations

from typing import Any

import lightning as L

from lit_rl.callbacks.evaluation import PeriodicEvaluation
from lit_rl.data.trainer_fields import trainer_callbacks


class OptunaPruning(L.Callback):
    """Reports each evaluation's mean return to an Optuna ``trial`` (step = env steps) and stops the run when the
    trial's pruner says so.

    The last evaluation (at ``total_timesteps``) is reported but never prunes.
    A pruned run ends like a finished one (summary, checkpoints); ``pruned``
    tells the caller to raise ``optuna.TrialPruned``. Needs an
    :class:`PeriodicEvaluation` among the trainer's callbacks. ``trial`` only needs
    ``report(value, step)`` and ``should_prune()``, so this module does not
    import Optuna.
    """

    def __init__(self, trial: Any) -> None:
        super().__init__()
        self.trial = trial
        self.pruned = False
        self._reported = 0

    def _evaluation(self, trainer: L.Trainer) -> PeriodicEvaluation:
        evaluation = next((cb for cb in trainer_callbacks(trainer) if isinstance(cb, PeriodicEvaluation)), None)
        if evaluation is None:
            raise RuntimeError("OptunaPruning needs a PeriodicEvaluation in the trainer's callbacks")
        return evaluation

    def on_fit_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        # Evaluations restored from a checkpoint were reported by the run that made them.
        self._reported = len(self._evaluation(trainer).evaluations)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        evaluations = self._evaluation(trainer).evaluations
        while self._reported < len(evaluations) and not self.pruned:
            result = evaluations[self._reported]
            self._reported += 1
            self.trial.report(result["mean_reward"], step=int(result["step"]))
            # The evaluation at total_timesteps ends the run anyway: it completes, with its value, unpruned.
            finished = pl_module.num_timesteps >= pl_module.total_timesteps
            if not finished and self.trial.should_prune():
                self.pruned = True
                trainer.should_stop = True
