"""Stable-Baselines3-style callbacks for ``learn(callback=...)``, fired after every vector-env step.

Same API as ``stable_baselines3.common.callbacks``: ``_on_step`` returning
False stops training at that step (before any further gradient step).
:class:`SB3CallbackAdapter` runs them inside a Lightning fit, alongside
ordinary Lightning callbacks.
"""

from lit_rl.callbacks.sb3.adapter import SB3CallbackAdapter
from lit_rl.callbacks.sb3.base import BaseCallback, CallbackList, ConvertCallback, EventCallback, as_sb3_callback
from lit_rl.callbacks.sb3.checkpoint import CheckpointCallback
from lit_rl.callbacks.sb3.evaluation import EpisodeSuccesses, EvalCallback
from lit_rl.callbacks.sb3.events import EveryNTimesteps, LogEveryNTimesteps
from lit_rl.callbacks.sb3.stop_training import (
    StopTrainingOnMaxEpisodes,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
)

__all__ = [
    "BaseCallback",
    "CallbackList",
    "CheckpointCallback",
    "ConvertCallback",
    "EpisodeSuccesses",
    "EvalCallback",
    "EventCallback",
    "EveryNTimesteps",
    "LogEveryNTimesteps",
    "SB3CallbackAdapter",
    "StopTrainingOnMaxEpisodes",
    "StopTrainingOnNoModelImprovement",
    "StopTrainingOnRewardThreshold",
    "as_sb3_callback",
]
