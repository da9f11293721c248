"""Lightning callbacks: evaluation and checkpoints, preemption, progress, run summary.

The SB3-style callbacks for ``learn(callback=...)`` are in :mod:`lit_rl.callbacks.sb3` (one file per family);
``EvalCallback`` here is SB3's too (one class per public name). The launcher's evaluation is
:class:`PeriodicEvaluation`.
"""

from lit_rl.callbacks.evaluation import PeriodicEvaluation, evaluate_policy
from lit_rl.callbacks.preemption import Preempted, PreemptionCheckpoint
from lit_rl.callbacks.progress import EnvStepProgressBar
from lit_rl.callbacks.sb3.evaluation import EvalCallback
from lit_rl.callbacks.summary import RunSummary

__all__ = [
    "EnvStepProgressBar",
    "EvalCallback",
    "PeriodicEvaluation",
    "Preempted",
    "PreemptionCheckpoint",
    "RunSummary",
    "evaluate_policy",
]
