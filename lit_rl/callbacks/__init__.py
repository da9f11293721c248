"""Lightning callbacks: evaluation and checkpoints, preemption, progress, run summary.

The SB3-style callbacks for ``learn(callback=...)`` are in :mod:`lit_rl.callbacks.sb3` (one file per family);
``EvalCallback`` here is SB3's too (one class per public name). The launcher's evaluation is
:class:`PeriodicEvaluation`.
"""

from typing import Any

from lit_rl.callbacks.evaluation import PeriodicEvaluation, evaluate_episodes
from lit_rl.callbacks.preemption import Preempted, PreemptionCheckpoint
from lit_rl.callbacks.progress import EnvStepProgressBar
from lit_rl.callbacks.sb3.evaluation import EvalCallback
from lit_rl.callbacks.summary import RunSummary
from lit_rl.utils.moved import renamed

__all__ = [
    "EnvStepProgressBar",
    "EvalCallback",
    "PeriodicEvaluation",
    "Preempted",
    "PreemptionCheckpoint",
    "RunSummary",
    "evaluate_episodes",
]


def __getattr__(name: str) -> Any:
    """``evaluate_policy``, this module's old name of :func:`evaluate_episodes`, still resolves, with a warning."""
    return renamed(__name__, name, {"evaluate_policy": (evaluate_episodes, (
        "lit_rl.callbacks.evaluate_policy(predict, env, n_episodes) is lit_rl.callbacks.evaluate_episodes; "
        "SB3's evaluate_policy(model, env, n_eval_episodes=...) is lit_rl.evaluation.evaluate_policy"))})
