"""The collector: steps the vector env with a given action function and writes the transitions to the buffer.

Warm-up random actions, exploration noise, episode statistics and SB3's step
callback order (the callback sees a step before it is stored; False stops
without storing it) live here once, for every algorithm.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from lit_rl.collect.noise import ActionNoise, VectorizedActionNoise
from lit_rl.envs.actions import flat_actions, scale_action, unscale_action
from lit_rl.envs.sb3_view import sb3_infos
from lit_rl.utils.checks import NonFiniteError


class NonFiniteEnvOutput(ValueError):
    """An env returned NaN or inf in an observation or a reward; raised before the step reaches the buffer."""


def all_finite(value: Any) -> bool:
    """True when a float array (or every float array of a dict observation) holds no NaN or inf.

    Integer and bool arrays (images, discrete observations) are finite by type and cost nothing.
    """
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    value = np.asarray(value)
    return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())


def non_finite_entries(value: Any, env_indices: Any, key: str | None = None) -> list[tuple[int, str]]:
    """Where a batch holds NaN or inf: ``(i, "env index i[, key 'k'] (n of m values: nan, ...)")`` (slow path only).

    Row ``r`` of ``value`` (an array or a dict of arrays) is env ``env_indices[r]``'s.
    """
    if isinstance(value, dict):
        return [entry for k, v in value.items() for entry in non_finite_entries(v, env_indices, k)]
    array = np.asarray(value)
    if array.dtype.kind not in "fc":
        return []
    where = "" if key is None else f", key {key!r}"
    found = []
    for row, i in zip(array, env_indices, strict=True):
        bad = np.asarray(row)[~np.isfinite(row)]
        if bad.size:
            values = ", ".join(map(str, bad[:3]))
            found.append((int(i), f"env index {i}{where} ({bad.size} of {np.size(row)} values: {values})"))
    return found


def one_row(value: Any) -> Any:
    """One env's observation as a batch of one (dicts key by key)."""
    if isinstance(value, dict):
        return {key: np.asarray(v)[None] for key, v in value.items()}
    return np.asarray(value)[None]


@dataclass
class RunClock:
    """The run's counters, a part of the algorithm (``model.num_timesteps`` and ``model._n_updates`` read them).

    The collector advances ``num_timesteps`` (env steps, ``n_envs`` per vector step); the updates count
    ``n_updates``; ``configure_run`` sets ``total_timesteps``, the fit's start ``n_envs``. The training loop
    keeps the step of the next log row, the index of the running update within its collection round
    (SAC's target updates read it) and whether an SB3 callback asked to stop.
    """

    num_timesteps: int = 0
    total_timesteps: int = 0
    n_updates: int = 0
    n_envs: int = 1
    next_log: int = 0
    round_gradient_step: int = 0
    continue_training: bool = True


class RolloutReturn(NamedTuple):
    """What one ``collect`` call did (SB3's name and fields)."""

    episode_timesteps: int
    n_episodes: int
    continue_training: bool


def with_final_obs(next_obs: Any, final_obs: np.ndarray, dones: np.ndarray) -> Any:
    """``next_obs`` with the true last observations of the finished envs (arrays or dicts of arrays)."""
    ended = np.flatnonzero(dones)
    if isinstance(next_obs, dict):
        real = {key: value.copy() for key, value in next_obs.items()}
        for i in ended:
            for key in real:
                real[key][i] = final_obs[i][key]
        return real
    real = next_obs.copy()
    for i in ended:
        real[i] = final_obs[i]
    return real


class Collector:
    """Vector-env stepping into a replay buffer, with the state that survives between rollouts.

    ``act`` maps a batch of observations to actions in the algorithm's scale
    ([-1, 1] for Box). Before ``learning_starts`` actions are uniform random
    unless ``policy_acts_at_warmup``. ``on_rollout_step(step)`` runs before each
    vector-env step (gSDE resampling), ``on_env_step()`` after each stored one
    (DQN's schedules).
    """

    def __init__(
        self,
        clock: RunClock,
        stats_window_size: int = 100,
        on_rollout_step: Callable[[int], None] | None = None,
        on_env_step: Callable[[], None] | None = None,
    ) -> None:
        self.clock = clock
        self.on_rollout_step, self.on_env_step = on_rollout_step, on_env_step
        self.env: Any = None
        self.buffer: Any = None
        self.env_name = "env"
        self.action_noise: ActionNoise | None = None
        self.policy_acts_at_warmup = False
        # Sees every step's (obs after autoreset, rewards, dones) first, as a VecNormalize wrapper would: the
        # model's normalisation statistics (lit_rl.nets.normalization); None: no one.
        self.observe: Callable[[Any, np.ndarray, np.ndarray], None] | None = None
        # SB3-style callback (SB3CallbackAdapter sets it for a fit) when collect() is given none; False from it stops.
        self.step_callback: Any = None
        self.last_obs: Any = None
        self.checked_obs: Any = None  # the last observation known to be finite (last_obs after each checked step)
        self.episode_num = 0
        self.ep_returns: deque[float] = deque(maxlen=stats_window_size)
        self.ep_lengths: deque[int] = deque(maxlen=stats_window_size)
        # SB3's buffers of the same window: Monitor-style {"r", "l", "t"} records and info["is_success"] at episode ends
        self.ep_info_buffer: deque[dict[str, float]] = deque(maxlen=stats_window_size)
        self.ep_success_buffer: deque[bool] = deque(maxlen=stats_window_size)

    def attach(self, env: Any, buffer: Any, env_name: str = "env") -> None:
        """Collect from ``env`` into ``buffer`` from now on (a new ``learn`` may bring a new env)."""
        self.env, self.buffer, self.env_name = env, buffer, env_name

    def sample_action(self, act: Callable[[Any], np.ndarray], learning_starts: int) -> tuple[np.ndarray, np.ndarray]:
        """Actions for the env (its own scale and shape) and for the buffer (the algorithm's scale, flat)."""
        action_space = self.env.single_action_space
        if self.clock.num_timesteps < learning_starts and not self.policy_acts_at_warmup:
            env_actions = self.env.action_space.sample()
            return env_actions, flat_actions(action_space, scale_action(action_space, env_actions))
        scaled = act(self.last_obs)
        if self.action_noise is not None:
            scaled = np.clip(scaled + self.action_noise(), -1.0, 1.0).astype(np.float32)
        return unscale_action(action_space, scaled), scaled

    def collect(
        self,
        act: Callable[[Any], np.ndarray],
        frequency: int,
        per_episode: bool = False,
        callback: Any = None,
        learning_starts: int = 0,
    ) -> RolloutReturn:
        """Collect ``frequency`` vector-env steps (or episodes) into the buffer.

        ``callback``: SB3's callback protocol (``on_rollout_start``, ``update_locals``, ``on_step``,
        ``on_rollout_end``; None: :attr:`step_callback`); ``learning_starts`` ends the uniform random warm-up.
        """
        env, buffer, clock, n_envs = self.env, self.buffer, self.clock, self.env.num_envs
        callback = self.step_callback if callback is None else callback
        steps = episodes = 0
        keep_training = True
        if self.last_obs is not self.checked_obs:  # a fresh reset (every later observation is checked at its step)
            if not all_finite(self.last_obs):
                entries = "; ".join(e for _, e in non_finite_entries(self.last_obs, range(self.env.num_envs)))
                raise NonFiniteEnvOutput(
                    f"env {self.env_name} returned a non-finite observation from reset() at env step "
                    f"{clock.num_timesteps}: {entries}; nothing was stored in the replay buffer"
                )
            self.checked_obs = self.last_obs
        if callback is not None:
            callback.on_rollout_start()
        # A started round is finished even past total_timesteps, as SB3's collect_rollouts does (learn stops after).
        while (episodes if per_episode else steps) < frequency:
            if self.on_rollout_step is not None:
                self.on_rollout_step(steps)
            actions, buffer_actions = self.sample_action(act, learning_starts)
            try:
                next_obs, rewards, terminated, truncated, infos = env.step(actions)
            except Exception as err:  # a crashing simulator or a dead async worker: say which env and when
                raise RuntimeError(
                    f"env {self.env_name} raised during step at env step {clock.num_timesteps}: "
                    f"{type(err).__name__}: {err}"
                ) from err
            dones = terminated | truncated
            # Named here, before normalisation statistics, callbacks or the buffer see them: a NaN stored in the
            # buffer would only surface later as a non-finite loss, far from its cause.
            if not (all_finite(rewards) and all_finite(next_obs)) or (
                dones.any() and not self.final_obs_finite(infos, dones)
            ):
                self.raise_non_finite(actions, next_obs, rewards, infos, dones, clock.num_timesteps + n_envs)
            clock.num_timesteps += n_envs
            steps += 1
            if self.observe is not None:
                self.observe(next_obs, rewards, dones)
            step_infos = None  # SB3's list of per-env dicts, built only for those who read it
            if callback is not None:
                step_infos = sb3_infos(infos, terminated, truncated)
                # SB3's order: the callback sees the step before it is stored; False stops without storing it.
                callback.update_locals(
                    {"actions": actions, "new_obs": next_obs, "rewards": rewards, "dones": dones, "infos": step_infos}
                )
                if not callback.on_step():
                    self.last_obs = next_obs  # unlike SB3: a later learn() must not pair this obs with a stale one
                    keep_training = False
                    break
            real_next_obs = next_obs
            if dones.any():
                # Same-step autoreset: next_obs holds the new episode's first observation
                # for finished envs; the transition needs the true last one.
                real_next_obs = with_final_obs(next_obs, infos["final_obs"], dones)
                episodes += int(dones.sum())
                self.record_episodes(infos)
                if self.action_noise is not None:
                    ended = np.flatnonzero(dones)
                    if isinstance(self.action_noise, VectorizedActionNoise):
                        self.action_noise.reset(ended)
                    else:
                        self.action_noise.reset()
            if getattr(buffer, "copy_info_dict", False):  # HER with copy_info_dict: compute_reward reads the infos
                step_infos = step_infos or sb3_infos(infos, terminated, truncated)
                buffer.add(self.last_obs, real_next_obs, buffer_actions, rewards, terminated, truncated, step_infos)
            else:
                buffer.add(self.last_obs, real_next_obs, buffer_actions, rewards, terminated, truncated)
            self.last_obs = self.checked_obs = next_obs
            if self.on_env_step is not None:
                self.on_env_step()
        if callback is not None:
            callback.on_rollout_end()
        return RolloutReturn(steps * n_envs, episodes, keep_training)

    @staticmethod
    def final_obs_finite(infos: dict[str, Any], dones: np.ndarray) -> bool:
        """The true last observations of the ended episodes (the transitions' next observations) are finite."""
        final_obs = infos["final_obs"]
        return all(all_finite(one_row(final_obs[i])) for i in np.flatnonzero(dones))

    def raise_non_finite(
        self, actions: Any, next_obs: Any, rewards: np.ndarray, infos: dict[str, Any], dones: np.ndarray, env_step: int
    ) -> None:
        """Raise :class:`NonFiniteEnvOutput` naming the env, the env step, each field and env index at fault; or
        :class:`NonFiniteError` when the actions the env was given were already non-finite (diverged weights)."""
        everyone, ended = range(len(dones)), np.flatnonzero(dones)
        bad_actions = non_finite_entries(actions, everyone)
        if bad_actions:  # the policy, not the env, is at fault: the env only passed its NaN on
            raise NonFiniteError(
                f"the policy returned non-finite actions at env step {env_step}: "
                f"{'; '.join(e for _, e in bad_actions)}; its parameters diverged (lower the learning rate)"
            )
        problems = [f"reward: {entry}" for _, entry in non_finite_entries(rewards, everyone)]
        for k in ended:
            # the transition's next observation for an ended episode is its true last one (not the reset's)
            last = non_finite_entries(one_row(infos["final_obs"][k]), [k])
            problems += [f"next observation (the episode's last): {entry}" for _, entry in last]
        for i, entry in non_finite_entries(next_obs, everyone):
            field = "observation (first of the next episode, from autoreset)" if dones[i] else "next observation"
            problems.append(f"{field}: {entry}")
        raise NonFiniteEnvOutput(
            f"env {self.env_name} returned non-finite values at env step {env_step}: {'; '.join(problems)}. "
            "The step was not stored in the replay buffer; fix the env (or wrap it to clip or replace NaN/inf)."
        )

    def record_episodes(self, infos: dict[str, Any]) -> None:
        """Add the returns and lengths of the episodes that ended (RecordEpisodeStatistics' ``episode`` info).

        ``is_success`` in an ended episode's last info goes to ``ep_success_buffer``, as SB3's
        ``_update_info_buffer`` does.
        """
        final_info = infos.get("final_info", {})
        if "is_success" in final_info:
            succeeded = final_info["is_success"][np.flatnonzero(final_info["_is_success"])]
            self.ep_success_buffer.extend(bool(s) for s in succeeded)
        if "episode" not in infos:
            return
        ended = np.flatnonzero(infos["_episode"])
        episode = infos["episode"]
        self.ep_returns.extend(float(r) for r in episode["r"][ended])
        self.ep_lengths.extend(int(n) for n in episode["l"][ended])
        times = episode["t"][ended] if "t" in episode else np.zeros(len(ended))
        self.ep_info_buffer.extend(
            {"r": float(episode["r"][i]), "l": int(episode["l"][i]), "t": float(t)}
            for i, t in zip(ended, times, strict=True)
        )
        self.episode_num += len(ended)
