"""FrameReplayBuffer: the stacked buffer's batches bit for bit from one stored frame per transition.

Streams come from gymnasium's FrameStackObservation over a small synthetic image env (random frames, episodes
that end terminated or truncated), stepped as a same-step-autoreset vector env, the collector's way.
"""

from __future__ import annotations

import copy
import io

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import FrameStackObservation, TimeLimit, TransformObservation

from lit_rl.buffers import FrameReplayBuffer, NStepFrameReplayBuffer, NStepReplayBuffer, ReplayBuffer
from lit_rl.buffers.frames import frame_buffer_choice
from lit_rl.collect.collector import with_final_obs
from lit_rl.core.buffer_setup import ReplayBufferSetup

N_ENVS = 3


class RandomFrames(gym.Env):
    """Random uint8 frames of ``shape``; each step terminates with probability ``p_terminate``."""

    def __init__(self, shape: tuple[int, ...], p_terminate: float = 0.12) -> None:
        self.observation_space = spaces.Box(0, 255, shape, np.uint8)
        self.action_space = spaces.Discrete(3)
        self.p_terminate = p_terminate

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.frame(), {}

    def step(self, action):
        terminated = bool(self.np_random.random() < self.p_terminate)
        return self.frame(), float(self.np_random.normal()), terminated, False, {}

    def frame(self) -> np.ndarray:
        # Few values, so that padded stacks and repeated frames also occur by chance.
        return self.np_random.integers(0, 3, self.observation_space.shape, dtype=np.uint8)


def atari_like(stack: int = 4, padding: str = "reset") -> gym.Env:
    """(stack, 5, 5) from grayscale (5, 5) frames: Atari's layout."""
    return FrameStackObservation(TimeLimit(RandomFrames((5, 5)), 6), stack, padding_type=padding)


def dmc_like(stack: int = 3, padding: str = "reset") -> gym.Env:
    """(3 * stack, 4, 4) from RGB (4, 4, 3) frames, channels first: lit_rl's DMC pixels layout."""
    frames = FrameStackObservation(TimeLimit(RandomFrames((4, 4, 3)), 5), stack, padding_type=padding)
    space = spaces.Box(0, 255, (3 * stack, 4, 4), np.uint8)
    channels_first = lambda o: np.ascontiguousarray(o.transpose(0, 3, 1, 2)).reshape(space.shape)  # noqa: E731
    return TransformObservation(frames, channels_first, space)


LAYOUTS = {"atari": (atari_like, 1), "dmc": (dmc_like, 3)}


def vector_env(make, n_envs: int = N_ENVS, **kwargs) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: make(**kwargs)] * n_envs, autoreset_mode=AutoresetMode.SAME_STEP)


def feed(env, buffers, steps: int, seed: int = 0, obs=None, skip_every: int = 0):
    """``steps`` vector steps of random actions into every buffer, with the true final observations
    (``skip_every``: every so many steps one is not stored, as when a callback stops ``learn`` and it goes on)."""
    rng = np.random.default_rng(seed)
    if obs is None:
        obs, _ = env.reset(seed=seed)
    ends = np.zeros(2, int)
    for step in range(1, steps + 1):
        action = rng.integers(0, 3, env.num_envs)
        next_obs, reward, terminated, truncated, infos = env.step(action)
        dones = terminated | truncated
        real_next = with_final_obs(next_obs, infos["final_obs"], dones) if dones.any() else next_obs
        for buffer in buffers if not skip_every or step % skip_every else ():
            buffer.add(obs, real_next, action, reward, terminated, truncated)
        ends += (terminated.sum(), (truncated & ~terminated).sum())
        obs = next_obs
    return obs, ends


def pair(make, channels, size, n_steps=1, seed=0, **kwargs):
    """The stacked buffer and the frame buffer for ``make``'s env, same settings."""
    env = vector_env(make, **kwargs)
    args = (size, env.single_observation_space, env.single_action_space, N_ENVS)
    if n_steps > 1:
        stacked = NStepReplayBuffer(*args, seed=seed, n_steps=n_steps, gamma=0.9)
        frames = NStepFrameReplayBuffer(*args, seed=seed, n_steps=n_steps, gamma=0.9, frame_channels=channels)
    else:
        stacked, frames = ReplayBuffer(*args, seed=seed), FrameReplayBuffer(*args, seed=seed, frame_channels=channels)
    return env, stacked, frames


def sampleable(buffer: FrameReplayBuffer) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (row, env) the frame buffer samples: all stored rows, or all but the k oldest once full."""
    if buffer.full:
        rows = (buffer.pos + torch.arange(buffer.frame_stack, buffer.buffer_size)) % buffer.buffer_size
    else:
        rows = torch.arange(buffer.pos)
    return rows.repeat_interleave(buffer.n_envs), torch.arange(buffer.n_envs).repeat(len(rows))


def assert_batches_equal(stacked, frames, rows, envs, monkeypatch):
    """Both buffers' batches at the same (row, env) indices, bit for bit, and their stored flags."""
    for buffer in (stacked, frames):
        monkeypatch.setattr(buffer, "sample_indices", lambda batch_size: (rows, envs))
    expected, got = stacked.sample(len(rows)), frames.sample(len(rows))
    for name, value in expected._asdict().items():
        other = getattr(got, name)
        assert (value is None and other is None) or torch.equal(value, other), name
    assert torch.equal(stacked.truncated[rows, envs], frames.truncated[rows, envs])  # timeouts
    assert torch.equal(stacked.terminated[rows, envs], frames.terminated[rows, envs])


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("n_steps", [1, 3])
@pytest.mark.parametrize("steps", [7, 10, 95], ids=["partly-filled", "just-full", "many-laps"])
def test_batches_equal_the_stacked_buffers(monkeypatch, layout, n_steps, steps):
    make, channels = LAYOUTS[layout]
    env, stacked, frames = pair(make, channels, 10 * N_ENVS, n_steps)  # 10 rows
    _, ends = feed(env, [stacked, frames], steps)
    if steps > 10:
        assert frames.full and ends.min() > 0  # wrapped several times, across terminations and truncations
    rows, envs = sampleable(frames)
    assert_batches_equal(stacked, frames, rows, envs, monkeypatch)


@pytest.mark.parametrize("padding", ["zero", "reset"])
def test_zero_padding_rebuilds_exactly_from_first_frames_kept_aside(monkeypatch, padding):
    """Zero padding keeps the padding frames aside once, for every episode."""
    env, stacked, frames = pair(atari_like, 1, 12 * N_ENVS, padding=padding)
    feed(env, [stacked, frames], 150)
    assert len(frames._prefix_written_at) == (8 if padding == "zero" else 0)  # one slot in use, none grown
    assert (frames.prefix_slot <= 0).all()
    rows, envs = sampleable(frames)
    assert_batches_equal(stacked, frames, rows, envs, monkeypatch)


def test_a_skipped_step_ends_the_episode_there_and_its_stack_is_kept_aside(monkeypatch):
    """After a step that was not stored, an env's next stack is not the last one moved by a frame: the last row
    ends truncated and the new row's older frames go aside (slots reused as the ring wraps)."""
    env, stacked, frames = pair(atari_like, 1, 12 * N_ENVS)
    stores = []
    monkeypatch.setattr(frames, "_store_prefix", lambda f, store=frames._store_prefix: stores.append(1) or store(f))
    feed(env, [stacked, frames], 300, skip_every=7)
    assert len(stores) > 2 * len(frames._prefix_written_at) > 0  # slots were reused
    cut = frames.truncated & ~stacked.truncated
    assert cut.any()
    stacked.truncated |= cut  # the one difference: the stacked buffer's n-step windows ran across the gap
    rows, envs = sampleable(frames)
    assert_batches_equal(stacked, frames, rows, envs, monkeypatch)


def test_samples_equal_the_stacked_buffers_before_it_is_full():
    env, stacked, frames = pair(dmc_like, 3, 100 * N_ENVS, seed=4)
    feed(env, [stacked, frames], 40)
    for a, b in zip(stacked.sample(128), frames.sample(128), strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def test_a_full_buffer_never_samples_rows_whose_frames_were_overwritten():
    env, _, frames = pair(atari_like, 1, 6 * N_ENVS)
    feed(env, [frames], 40)
    row, _ = frames.sample_indices(4000)
    offset = (row - frames.pos) % frames.buffer_size
    assert set(offset.tolist()) == set(range(frames.frame_stack, frames.buffer_size))


def test_a_reset_outside_the_buffers_view_ends_the_last_transition_with_its_next_observation(monkeypatch):
    env, stacked, frames = pair(atari_like, 1, 40 * N_ENVS)
    feed(env, [stacked, frames], 5)
    last = torch.full((N_ENVS,), frames.pos - 1)
    next_obs = stacked.next_observations[last, torch.arange(N_ENVS)].clone()
    feed(env, [stacked, frames], 5, seed=1)  # a new learn(): env.reset() without an episode end
    envs = torch.arange(N_ENVS)
    assert torch.equal(frames.next_observations_at(last, envs), next_obs)
    assert frames.truncated[last, envs].all()  # its episode ends there, bootstrapping from the kept observation
    stacked.truncated[last, envs] = True
    rows, envs = sampleable(frames)
    assert_batches_equal(stacked, frames, rows, envs, monkeypatch)


@pytest.mark.parametrize("n_steps", [1, 3])
@pytest.mark.parametrize("steps", [5, 23], ids=["partly-filled", "wrapped"])
def test_state_round_trip_resumes_exactly(n_steps, steps, tmp_path):
    env, _, frames = pair(atari_like, 1, 9 * N_ENVS, n_steps, seed=2)
    obs, _ = feed(env, [frames], steps)
    state = frames.state_dict()
    # Frames are not copied: the state's storage is the buffer's, its filled rows and the newest next frame.
    saved = state["storage"]["observations"]
    assert saved.data_ptr() == frames.observations.data_ptr()
    assert saved.untyped_storage().nbytes() == frames.observations[: min(steps + 1, 9)].nbytes
    torch.save(state, tmp_path / "buffer.pt")
    restored = type(frames)(*(9 * N_ENVS, frames.observation_space, frames.action_space, N_ENVS), seed=99,
                            frame_channels=1, **({"n_steps": n_steps, "gamma": 0.9} if n_steps > 1 else {}))  # fmt: skip
    restored.load_state_dict(torch.load(tmp_path / "buffer.pt", weights_only=False))
    rows, envs = sampleable(frames)
    assert torch.equal(restored.observations_at(rows, envs), frames.observations_at(rows, envs))
    assert torch.equal(restored.next_observations_at(rows, envs), frames.next_observations_at(rows, envs))
    # The same stream goes on into the original and the restored buffer: same samples, same generator.
    twin = copy.deepcopy(env)
    feed(env, [frames], 17, seed=5, obs=obs)
    feed(twin, [restored], 17, seed=5, obs=obs)
    for a, b in zip(frames.sample(256), restored.sample(256), strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def test_state_of_a_partly_filled_buffer_holds_only_its_rows():
    env, _, frames = pair(dmc_like, 3, 50 * N_ENVS)
    feed(env, [frames], 4)
    buffer = io.BytesIO()
    torch.save(frames.state_dict(), buffer)
    assert len(buffer.getvalue()) < 5 * N_ENVS * 3 * 16 + 50_000  # the filled rows, not all 50


def test_bytes_per_transition_are_about_one_frame():
    space = spaces.Box(0, 255, (4, 84, 84), np.uint8)
    frames = FrameReplayBuffer(100_000, space, spaces.Discrete(6), frame_channels=1)  # storage untouched: lazy
    stacked_bytes = 2 * space.shape[0] * 84 * 84
    assert frames.nbytes() / 100_000 <= 1.1 * 84 * 84
    assert frames.transition_nbytes() <= 1.01 * 84 * 84 < stacked_bytes / 7


def test_add_refuses_observations_that_are_not_frame_stacks():
    space = spaces.Box(0, 255, (4, 5, 5), np.uint8)
    frames = FrameReplayBuffer(20, space, spaces.Discrete(3), frame_channels=1)
    rng = np.random.default_rng(0)
    obs, next_obs = rng.integers(0, 255, (2, 1, 4, 5, 5), dtype=np.uint8)  # independent images
    with pytest.raises(ValueError, match="frame_dedup=false"):
        frames.add(obs, next_obs, np.zeros(1), np.zeros(1), np.zeros(1, bool), np.zeros(1, bool))
    with pytest.raises(ValueError, match="buffer_size >= 10"):
        FrameReplayBuffer(8, space, spaces.Discrete(3), n_envs=2, frame_channels=1)


def test_frame_dedup_is_chosen_for_frame_stacks_and_refused_elsewhere():
    atari, dmc = vector_env(atari_like), vector_env(dmc_like)
    for env, channels in ((atari, 1), (dmc, 3)):
        space = env.single_observation_space
        auto = frame_buffer_choice(ReplayBuffer, None, space, env, {})
        assert auto == (FrameReplayBuffer, {"frame_channels": channels})
        assert frame_buffer_choice(NStepReplayBuffer, True, space, env, {})[0] is NStepFrameReplayBuffer
        assert frame_buffer_choice(ReplayBuffer, False, space, env, {}) == (ReplayBuffer, {})
    vector = spaces.Box(-1, 1, (4, 3), np.float32)
    assert frame_buffer_choice(ReplayBuffer, None, vector, atari, {}) == (ReplayBuffer, {})  # auto: images only
    with pytest.raises(ValueError, match=r"frame_dedup=true .* allowed: a uint8 Box"):
        frame_buffer_choice(ReplayBuffer, True, vector, atari, {})
    unstacked = SyncVectorEnv([lambda: RandomFrames((3, 8, 8))], autoreset_mode=AutoresetMode.SAME_STEP)
    image = unstacked.single_observation_space
    assert frame_buffer_choice(ReplayBuffer, None, image, unstacked, {}) == (ReplayBuffer, {})
    with pytest.raises(ValueError, match="FrameStackObservation"):
        frame_buffer_choice(ReplayBuffer, True, image, unstacked, {})
    with pytest.raises(TypeError, match="frame_dedup='yes'"):
        frame_buffer_choice(ReplayBuffer, "yes", image, unstacked, {})


class Model:
    """What ReplayBufferSetup reads of an algorithm."""

    buffer_size, batch_size, seed, gamma = 60, 8, 0, 0.9
    observation_space, action_space = atari_like().observation_space, spaces.Discrete(3)


def test_buffer_setup_builds_the_frame_buffer_from_the_key():
    env = vector_env(atari_like)
    setup = ReplayBufferSetup(ReplayBuffer, {"optimize_memory_usage": False}, n_steps=1, optimize_memory_usage=False)
    assert type(setup.make(Model(), env, torch.device("cpu"))) is FrameReplayBuffer  # auto
    nstep = ReplayBufferSetup(None, {"frame_dedup": True}, n_steps=3, optimize_memory_usage=False)
    assert type(nstep.make(Model(), env, torch.device("cpu"))) is NStepFrameReplayBuffer
    plain = ReplayBufferSetup(None, {"frame_dedup": False}, n_steps=1, optimize_memory_usage=False)
    assert type(plain.make(Model(), env, torch.device("cpu"))) is ReplayBuffer
