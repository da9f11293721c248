"""Replay buffers."""

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer

__all__ = ["ReplayBatch", "ReplayBuffer"]
