"""Memory of the frame-once replay buffer at Atari scale: ``python scripts/bench_frame_buffer.py``.

Fills a :class:`~lit_rl.buffers.FrameReplayBuffer` of ``--transitions`` (default 1M) transitions of
``(4, 84, 84)`` uint8 stacks, one env, through its ``add`` with a FrameStackObservation-shaped stream
(random frames, episodes ending terminated or truncated), and reports the process's peak RSS
(``ru_maxrss``), the buffer's bytes per transition (from its tensors' ``nbytes``), the stacked
:class:`~lit_rl.buffers.ReplayBuffer`'s size for the same transitions (computed, not allocated) and the
time of a batch of 32. ``--checkpoint DIR`` also writes the full buffer's state with ``torch.save`` (as a
launcher checkpoint does) and reports the peak RSS after it: the frames stream to the file, not copied.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces

from lit_rl.buffers import FrameReplayBuffer
from lit_rl.utils.machine import cpu_model_and_flags

STACK, SIZE = 4, 84


def peak_rss_gib() -> float:
    """The process's peak resident memory so far (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def first_stack(frame: np.ndarray, padding: str) -> np.ndarray:
    """An episode's first stack, ``(1, STACK, SIZE, SIZE)``: padded as FrameStackObservation's ``padding_type``."""
    pad = frame if padding == "reset" else np.zeros_like(frame)
    return np.stack([pad] * (STACK - 1) + [frame])[None]


def fill(buffer: FrameReplayBuffer, transitions: int, episode: int, padding: str, seed: int = 0) -> float:
    """``transitions`` steps of a frame-stack stream into ``buffer``; returns the seconds per ``add``."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 256, (251, SIZE, SIZE), dtype=np.uint8)  # frames cycled: content does not matter
    action, reward = np.zeros(1, np.int64), np.zeros(1, np.float32)
    obs = first_stack(pool[0], padding)
    length = 0
    start = time.perf_counter()
    for t in range(transitions):
        next_obs = np.concatenate([obs[:, 1:], pool[(t + 1) % len(pool)][None, None]], axis=1)
        length += 1
        ended = length == episode
        terminated, truncated = np.array([ended and t % 2 == 0]), np.array([ended and t % 2 == 1])
        buffer.add(obs, next_obs, action, reward, terminated, truncated)
        obs = first_stack(pool[(t + 7) % len(pool)], padding) if ended else next_obs
        length = 0 if ended else length
    return (time.perf_counter() - start) / transitions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--episode", type=int, default=2_000, help="steps per episode (Atari: a few thousand)")
    parser.add_argument("--padding", choices=["reset", "zero"], default="reset", help="FrameStackObservation's")
    parser.add_argument("--checkpoint", type=Path, default=None, help="folder to write the buffer's state to")
    args = parser.parse_args()
    torch.set_num_threads(1)

    model, _ = cpu_model_and_flags()
    system = f"{platform.system()} {platform.machine()}, torch {torch.__version__}"
    print(f"date {datetime.date.today()}, CPU {model}, {system}")
    baseline = peak_rss_gib()
    space = spaces.Box(0, 255, (STACK, SIZE, SIZE), np.uint8)
    buffer = FrameReplayBuffer(args.transitions, space, spaces.Discrete(6), frame_channels=1, seed=0)
    seconds = fill(buffer, args.transitions, args.episode, args.padding)
    filled = peak_rss_gib()

    frame = SIZE * SIZE
    # The stacked buffer's rows: observation and next observation, int64 action, reward, terminated, truncated.
    stacked = 2 * STACK * frame + 8 + 4 + 4 + 1
    per_transition = buffer.nbytes() / args.transitions
    print(f"{args.transitions:,} transitions of {tuple(space.shape)} uint8, 1 env, {args.padding} padding, "
          f"episodes of {args.episode} steps, {seconds * 1e6:.0f} us per add")  # fmt: skip
    print(f"peak RSS: {filled:.2f} GiB ({baseline:.2f} GiB before the buffer)")
    print(f"frame buffer: {per_transition:,.0f} bytes per transition ({per_transition / frame:.4f} frames), "
          f"{buffer.nbytes() / 2**30:.2f} GiB in all")  # fmt: skip
    print(f"stacked ReplayBuffer (computed, not allocated): {stacked:,} bytes per transition, "
          f"{stacked * args.transitions / 2**30:.1f} GiB ({stacked / per_transition:.1f}x)")  # fmt: skip

    start, batches = time.perf_counter(), 200
    for _ in range(batches):
        buffer.sample(32)
    print(f"sample(32): {(time.perf_counter() - start) / batches * 1e3:.2f} ms")

    if args.checkpoint is not None:
        with tempfile.TemporaryDirectory(dir=args.checkpoint) as folder:
            path = Path(folder) / "buffer.pt"
            start = time.perf_counter()
            torch.save({"replay_buffer": buffer.state_dict()}, path)
            print(f"state written: {path.stat().st_size / 2**30:.2f} GiB in {time.perf_counter() - start:.0f} s; "
                  f"peak RSS after it {peak_rss_gib():.2f} GiB")  # fmt: skip


if __name__ == "__main__":
    main()
