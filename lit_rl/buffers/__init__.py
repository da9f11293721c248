"""Replay buffers."""

from lit_rl.buffers.frames import FrameReplayBuffer, NStepFrameReplayBuffer
from lit_rl.buffers.her import GoalSelectionStrategy, HerReplayBuffer
from lit_rl.buffers.nstep import NStepReplayBuffer
from lit_rl.buffers.observations import DictObservationFlattener
from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer


class DictReplayBuffer(ReplayBuffer):
    """SB3's name for the buffer of Dict observations: lit_rl's :class:`ReplayBuffer` stores every observation space."""


__all__ = [
    "DictObservationFlattener",
    "DictReplayBuffer",
    "FrameReplayBuffer",
    "GoalSelectionStrategy",
    "HerReplayBuffer",
    "NStepFrameReplayBuffer",
    "NStepReplayBuffer",
    "ReplayBatch",
    "ReplayBuffer",
]
