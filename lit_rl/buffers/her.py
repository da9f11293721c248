"""Hindsight Experience Replay (Andrychowicz et al., 2017) with Stable-Baselines3's sampling."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from enum import Enum
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer, normalize_obs, normalize_reward
from lit_rl.utils.checks import check_bool, check_int

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


class GoalSelectionStrategy(Enum):
    """Where relabelled goals come from (SB3's enum, same values): a later step, the last step, any step."""

    FUTURE = 0
    FINAL = 1
    EPISODE = 2


KEY_TO_GOAL_STRATEGY = {strategy.name.lower(): strategy for strategy in GoalSelectionStrategy}  # SB3's name
GOAL_SELECTION_STRATEGIES = tuple(KEY_TO_GOAL_STRATEGY)


def as_goal_selection_strategy(value: Any) -> GoalSelectionStrategy:
    """A strategy from its name (any case) or an enum member (this one or Stable-Baselines3's)."""
    if isinstance(value, GoalSelectionStrategy):
        return value
    name = value.name if isinstance(value, Enum) else value
    if isinstance(name, str) and name.lower() in KEY_TO_GOAL_STRATEGY:
        return KEY_TO_GOAL_STRATEGY[name.lower()]
    raise ValueError(
        f"goal_selection_strategy={value!r} is not allowed; allowed: {list(GOAL_SELECTION_STRATEGIES)} "
        "or a GoalSelectionStrategy member"
    )


class HerReplayBuffer(ReplayBuffer):
    """Replay buffer that relabels goals at sample time, as Stable-Baselines3's ``HerReplayBuffer``.

    Observations are Dicts with ``observation``, ``achieved_goal`` and
    ``desired_goal`` (stored flattened). Only transitions of finished episodes
    are sampled. In a batch, a fraction ``1 - 1 / (n_sampled_goal + 1)`` of
    the transitions get a new desired goal (in the observation and the next
    observation): the achieved goal of a later step of the same episode
    (``future``), of its last step (``final``) or of any step (``episode``);
    their reward is recomputed with ``compute_reward(achieved_goal,
    desired_goal, infos)`` of the env, which the algorithm passes in; with
    ``copy_info_dict=True`` ``infos`` are (copies of) the stored infos of those
    transitions, otherwise empty dicts (SB3's option and default).
    ``goal_selection_strategy``: a name or a :class:`GoalSelectionStrategy`.
    ``terminated`` stays the stored one, as in SB3.

    When the ring buffer overwrites the first row of an old episode, the whole
    old episode stops being sampled. Transitions are drawn uniformly over those
    of finished episodes (SB3: ``np.random.choice(flatnonzero(ep_length > 0))``)
    by inverting a cumulative count, which has no size limit and no host sync.
    """

    algorithm_kwargs = ("compute_reward",)
    next_observations: torch.Tensor  # always stored: optimize_memory_usage is refused below

    def __init__(
        self,
        *args: Any,
        compute_reward: Callable[[np.ndarray, np.ndarray, Any], np.ndarray] | None = None,
        n_sampled_goal: int = 4,
        goal_selection_strategy: str | GoalSelectionStrategy = "future",
        copy_info_dict: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("optimize_memory_usage"):
            raise ValueError("HerReplayBuffer does not support optimize_memory_usage=True; allowed: False")
        super().__init__(*args, **kwargs)
        flattener, obs_space = self.flattener, self.observation_space
        if flattener is None or not isinstance(obs_space, spaces.Dict) or not set(GOAL_KEYS) <= set(flattener.slices):
            raise ValueError(
                f"HerReplayBuffer needs a Dict observation space with keys {list(GOAL_KEYS)}; "
                f"got {self.observation_space}"
            )
        if not callable(compute_reward):
            raise TypeError(
                f"compute_reward={compute_reward!r} must be the env's compute_reward(achieved_goal, desired_goal, info); "
                "the algorithm passes it when the env is goal-conditioned"
            )
        self.goal_selection_strategy = as_goal_selection_strategy(goal_selection_strategy)
        self.copy_info_dict = check_bool("copy_info_dict", copy_info_dict)
        self.compute_reward = compute_reward
        self.n_sampled_goal = check_int("n_sampled_goal", n_sampled_goal, minimum=0)
        self.her_ratio = 1.0 - 1.0 / (self.n_sampled_goal + 1)
        self.achieved_slice = flattener.slices["achieved_goal"]
        self.desired_slice = flattener.slices["desired_goal"]
        goal_shape = obs_space["desired_goal"].shape
        if goal_shape is None:
            raise ValueError(
                f"observation_space['desired_goal']={obs_space['desired_goal']} has no shape; allowed: a Box"
            )
        self.goal_shape = goal_shape
        rows = (self.buffer_size, self.n_envs)
        # Episode bookkeeping on the host (add reads it) mirrored on the device (sample reads it).
        self.ep_start = np.zeros(rows, dtype=np.int64)
        self.ep_length = np.zeros(rows, dtype=np.int64)
        self.ep_start_t = torch.zeros(rows, dtype=torch.long, device=self.device)
        self.ep_length_t = torch.zeros(rows, dtype=torch.long, device=self.device)
        self._current_ep_start = np.zeros(self.n_envs, dtype=np.int64)
        self._current_ep_steps = np.zeros(self.n_envs, dtype=np.int64)
        self.n_sampleable = 0  # transitions of complete episodes in the buffer
        # The step infos of every transition, on the host (only with copy_info_dict: they can be large).
        self.infos = None
        if copy_info_dict:
            self.infos = np.array([[{} for _ in range(self.n_envs)] for _ in range(self.buffer_size)])
        self._valid_count: torch.Tensor | None = None  # cumulative count of sampleable entries; None: stale

    def add(self, obs, next_obs, action, reward, terminated, truncated, infos: list[dict] | None = None) -> None:
        """Store one vector-env step; ``infos``: one dict per env (SB3's layout), kept with ``copy_info_dict``."""
        p = self.pos
        if self.infos is not None:
            self.infos[p] = list(infos) if infos is not None else [{} for _ in range(self.n_envs)]
        for env in np.flatnonzero(self.ep_length[p] > 0).tolist():
            self._set_episode_length(self.ep_start[p, env], self.ep_length[p, env], env, 0)
        super().add(obs, next_obs, action, reward, terminated, truncated)
        self.ep_start[p] = self._current_ep_start
        self.ep_start_t[p] = torch.as_tensor(self._current_ep_start, device=self.device)
        self._current_ep_steps += 1
        for env in np.flatnonzero(np.asarray(terminated) | np.asarray(truncated)).tolist():
            self._end_episode(env)

    def _end_episode(self, env: int) -> None:
        """Make env ``env``'s running episode, which ended at the newest row, sampleable; the next add starts one."""
        length = self._current_ep_steps[env]
        if length > self.buffer_size:
            warnings.warn(
                f"HerReplayBuffer: an episode of {length} steps does not fit in the buffer's {self.buffer_size} rows "
                f"(buffer_size // n_envs); it is not sampled",
                stacklevel=3,
            )
        else:
            self._set_episode_length(self._current_ep_start[env], length, env, length)
        self._current_ep_start[env] = self.pos
        self._current_ep_steps[env] = 0

    def _set_episode_length(self, start: int, length: int, env: int, value: int) -> None:
        rows = (start + np.arange(length)) % self.buffer_size
        self.n_sampleable += length if value else -length
        self.ep_length[rows, env] = value
        self.ep_length_t[torch.as_tensor(rows, device=self.device), env] = value
        self._valid_count = None

    def truncate_last_trajectory(self) -> None:
        """End every env's unfinished episode at the newest row, as a truncation, so it is sampled (SB3's).

        For a buffer loaded into a run whose env starts new episodes; without
        it the next steps would extend the old episodes.
        """
        open_envs = np.flatnonzero(self._current_ep_steps > 0)
        if len(open_envs) == 0:
            return
        warnings.warn(  # SB3's words
            "The last trajectory in the replay buffer will be truncated.\n"
            "If you are in the same episode as when the replay buffer was saved,\n"
            "you should use `truncate_last_trajectory=False` to avoid that issue.",
            stacklevel=2,
        )
        last = (self.pos - 1) % self.buffer_size
        # Truncated, not terminated: not an actual time limit, but it keeps bootstrapping (SB3's timeouts=True).
        self.truncated[last, torch.as_tensor(open_envs, device=self.device)] = True
        for env in open_envs:
            self._end_episode(int(env))

    def _row_fields(self) -> list[str]:
        return super()._row_fields() + ["ep_start", "ep_length"] + (["infos"] if self.copy_info_dict else [])

    def _extra_fields(self) -> list[str]:
        return super()._extra_fields() + ["_current_ep_start", "_current_ep_steps", "n_sampleable"]

    def _device_fields(self) -> list[str]:
        return [n for n in super()._device_fields() if n not in ("ep_start", "ep_length", "infos")] + [
            "ep_start_t",
            "ep_length_t",
        ]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`, episode bookkeeping included (mirrored to the device)."""
        self.ep_start[:], self.ep_length[:] = 0, 0  # rows past the saved ones hold no episode
        super().load_state_dict(state)
        self.ep_start_t.copy_(torch.from_numpy(self.ep_start))
        self.ep_length_t.copy_(torch.from_numpy(self.ep_length))
        self._valid_count = None

    def sample_indices(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Uniform (row, env) indices of ``batch_size`` transitions of finished episodes (with replacement)."""
        if self.n_sampleable == 0:
            raise RuntimeError(
                "HerReplayBuffer.sample: no finished episode is stored yet; raise learning_starts above the "
                "longest episode"
            )
        if self._valid_count is None:
            self._valid_count = (self.ep_length_t.reshape(-1) > 0).cumsum(0)
        # The k-th sampleable entry is the first whose cumulative count exceeds k.
        k = torch.randint(0, self.n_sampleable, (batch_size,), device=self.device, generator=self.generator)
        flat = torch.searchsorted(self._valid_count, k, right=True)
        return flat // self.n_envs, flat % self.n_envs

    def sample(self, batch_size: int, env: Any = None) -> ReplayBatch:
        """``batch_size`` transitions of finished episodes, the first ``her_ratio`` of them relabelled.

        ``env`` normalises after relabelling: goals and rewards are computed from raw stored values.
        """
        normalizer = env
        row, env = self.sample_indices(batch_size)
        obs, next_obs = self.observations[row, env], self.next_observations[row, env]
        rewards = self.rewards[row, env]
        n_virtual = int(self.her_ratio * batch_size)
        if n_virtual > 0:
            goals = self.sample_goals(row[:n_virtual], env[:n_virtual])
            obs[:n_virtual, self.desired_slice] = goals
            next_obs[:n_virtual, self.desired_slice] = goals
            achieved = next_obs[:n_virtual, self.achieved_slice]
            new_rewards = self.compute_reward(
                achieved.reshape((n_virtual,) + self.goal_shape).cpu().numpy(),
                goals.reshape((n_virtual,) + self.goal_shape).cpu().numpy(),
                self.infos_at(row[:n_virtual], env[:n_virtual]),
            )
            rewards[:n_virtual] = torch.as_tensor(np.asarray(new_rewards), dtype=torch.float32, device=self.device)
        return ReplayBatch(
            observations=normalize_obs(obs, normalizer),
            actions=self.actions[row, env],
            next_observations=normalize_obs(next_obs, normalizer),
            rewards=normalize_reward(rewards, normalizer),
            terminated=self.terminated[row, env],
        )

    def infos_at(self, row: torch.Tensor, env: torch.Tensor) -> Any:
        """Copies of the stored infos at (``row``, ``env``) (an object array, as SB3's), or empty dicts."""
        if self.infos is None:
            return [{} for _ in range(len(row))]
        return copy.deepcopy(self.infos[row.cpu().numpy(), env.cpu().numpy()])  # a copy: compute_reward may edit them

    def sample_goals(self, row: torch.Tensor, env: torch.Tensor) -> torch.Tensor:
        """New desired goals for the transitions at (``row``, ``env``): achieved goals of their episodes."""
        start, length = self.ep_start_t[row, env], self.ep_length_t[row, env]
        if self.goal_selection_strategy == GoalSelectionStrategy.FINAL:
            step = length - 1
        else:
            future = self.goal_selection_strategy == GoalSelectionStrategy.FUTURE
            first = (row - start) % self.buffer_size if future else 0
            u = torch.rand(row.shape, device=self.device, generator=self.generator)
            step = first + (u * (length - first)).long().clamp(max=length - 1 - first)
        goal_row = (start + step) % self.buffer_size
        return self.next_observations[goal_row, env][:, self.achieved_slice]
