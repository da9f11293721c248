"""Lightning callbacks: evaluation and checkpoints, preemption, progress, run summary."""

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
