"""Lightning callbacks: evaluation and checkpoints, progress, run summary."""

from lit_rl.callbacks.evaluation import EvalCallback, evaluate_policy
from lit_rl.callbacks.progress import EnvStepProgressBar
from lit_rl.callbacks.summary import RunSummary

__all__ = ["EnvStepProgressBar", "EvalCallback", "RunSummary", "evaluate_policy"]
