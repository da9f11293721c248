"""Lightning callbacks: evaluation and checkpoints, preemption, progress, run summary.

The SB3-style callbacks for ``learn(callback=...)`` are in :mod:`lit_rl.callbacks.sb3` (one file per family).
"""

from lit_rl.callbacks.evaluation import EvalCallback, evaluate_policy
from lit_rl.callbacks.preemption import Preempted, PreemptionCheckpoint
from lit_rl.callbacks.progress import EnvStepProgressBar
from lit_rl.callbacks.summary import RunSummary

__all__ = [
    "EnvStepProgressBar",
    "EvalCallback",
    "Preempted",
    "PreemptionCheckpoint",
    "RunSummary",
    "evaluate_policy",
]
