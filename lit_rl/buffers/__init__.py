"""Replay buffers."""

from lit_rl.buffers.her import GoalSelectionStrategy, HerReplayBuffer
from lit_rl.buffers.nstep import NStepReplayBuffer
from lit_rl.buffers.observations import DictObservationFlattener
from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer

__all__ = [
    "DictObservationFlattener",
    "GoalSelectionStrategy",
    "HerReplayBuffer",
    "NStepReplayBuffer",
    "ReplayBatch",
    "ReplayBuffer",
]
