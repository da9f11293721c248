"""Atari 2600 games (ale-py) with Stable-Baselines3's preprocessing, as one gymnasium env (``lit_rl/Atari-v0``).

``gymnasium.make("lit_rl/Atari-v0", game="Breakout")``; the launcher's ``env=atari env.kwargs.game=Breakout``
(or ``env=atari env.id=BreakoutNoFrameskip-v4``). Step for step equal to SB3's ``AtariWrapper`` (no-op reset, frame
skip with max-pooling, a life lost ends the episode, fire on reset, 84 x 84 grayscale, rewards clipped to their
sign) with ``VecFrameStack(n_stack=4)``, but with channels first: ``(4, 84, 84)`` uint8, oldest frame first.
Episode records (``info["episode"]``) hold the game's raw score over all its lives, as SB3's ``Monitor`` does.
Needs ``ale-py`` and OpenCV (``pip install 'lit_rl[envs]'``); ale_py is imported only when a game is made.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import (
    ClipReward,
    FrameStackObservation,
    MaxAndSkipObservation,
    RecordEpisodeStatistics,
    ResizeObservation,
    TransformObservation,
)
from gymnasium.wrappers.vector import RecordEpisodeStatistics as RecordVectorEpisodeStatistics

ATARI_ID = "lit_rl/Atari-v0"
INSTALL_HINT = "pip install 'lit_rl[envs]' (or pip install ale-py opencv-python-headless)"
# make_atari_env's arguments that no ALE env takes: given with an ALE id, they ask for this preprocessing.
PREPROCESSING_KEYS = frozenset(
    {"noop_max", "frame_skip", "screen_size", "terminal_on_life_loss", "clip_reward", "frame_stack"}
)
NOOP, FIRE = 0, 1


def make_atari_env(
    game: str = "Breakout",
    noop_max: int = 30,
    frame_skip: int = 4,
    screen_size: int = 84,
    terminal_on_life_loss: bool = True,
    clip_reward: bool = True,
    frame_stack: int = 4,
    render_mode: str | None = None,
) -> gym.Env:
    """One Atari game with SB3's ``AtariWrapper`` preprocessing and frame stacking (the entry point of ``lit_rl/Atari-v0``).

    Args:
        game: a game name (``Breakout``, ``SpaceInvaders``; or ale-py's ``space_invaders``), played as
            ``<Game>NoFrameskip-v4``, or an ALE env id (``PongNoFrameskip-v4``; ``ALE/Pong-v5`` keeps its sticky
            actions), always made without frame skip: ``frame_skip`` skips frames here.
        noop_max: a real reset is followed by 1 to ``noop_max`` no-ops (0: none).
        terminal_on_life_loss: a life lost ends the episode (``terminated``); the next reset goes on with the game.
        clip_reward: rewards become their sign; episode records keep the raw score.
        frame_stack: observations are the last ``frame_stack`` frames, ``(frame_stack, screen_size, screen_size)``.
    """
    for key, value, least in (("noop_max", noop_max, 0), ("frame_skip", frame_skip, 1), ("screen_size", screen_size, 1),
                              ("frame_stack", frame_stack, 1)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"env.kwargs.{key}={value!r} must be an integer >= {least}")
    ale_py, cv2 = _import_ale_and_cv2()
    env_id, make_kwargs = ale_env_id(game, ale_py)
    env: gym.Env = gym.make(env_id, render_mode=render_mode, **make_kwargs)
    env = RecordEpisodeStatistics(env)  # where SB3's make_atari_env puts its Monitor: raw scores, whole games
    if noop_max > 0:
        env = NoopReset(env, noop_max)
    if frame_skip > 1:
        env = MaxAndSkipObservation(env, skip=frame_skip)  # SB3's MaxAndSkipEnv, line for line
    if terminal_on_life_loss:
        env = EpisodicLife(env)
    if "FIRE" in env.unwrapped.get_action_meanings():  # type: ignore[attr-defined]
        env = FireReset(env)
    height, width = env.observation_space.shape[:2]  # type: ignore[index]
    # OpenCV's RGB -> gray, as SB3's WarpFrame: gymnasium's GrayscaleObservation weighs the channels differently.
    gray = spaces.Box(0, 255, (height, width), np.uint8)
    env = TransformObservation(env, lambda frame: cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY), gray)
    env = ResizeObservation(env, (screen_size, screen_size))  # cv2.INTER_AREA, as WarpFrame
    if clip_reward:
        env = ClipReward(env, -1.0, 1.0)  # = SB3's sign(): ALE rewards are whole numbers
    return FrameStackObservation(env, frame_stack, padding_type="zero")  # VecFrameStack pads with zeros too


def ale_env_id(game: Any, ale_py: Any = None) -> tuple[str, dict[str, Any]]:
    """The ALE env id that plays ``game`` (a name or an ALE id) and the arguments that make it without frame skip."""
    ale_py = ale_py or _import_ale_and_cv2()[0]
    bare = str(game).rpartition(":")[2]
    if isinstance(game, str) and bare in gym.registry and _is_ale(bare):
        return bare, {"frameskip": 1}
    roms = ale_py.roms.get_all_rom_ids()  # snake_case: space_invaders
    names = {_rom_name(rom) for rom in roms}
    name = game if game in names else _rom_name(game) if game in roms else None
    if name is not None:
        legacy = f"{name}NoFrameskip-v4"  # SB3's ids; games added to ale-py later have only ALE/<Game>-v5
        if legacy in gym.registry:
            return legacy, {}
        return f"ALE/{name}-v5", {"frameskip": 1, "repeat_action_probability": 0.0}  # v4's dynamics
    close = difflib.get_close_matches(str(game), sorted(names), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ValueError(
        f"env.kwargs.game={game!r} is not an Atari game of ale-py{hint}; allowed: a game name {sorted(names)} "
        "or an ALE env id (BreakoutNoFrameskip-v4, ALE/Breakout-v5)"
    )


def atari_family(env_id: str, env_kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(ATARI_ID, kwargs with game=env_id)`` for an ALE id given with this preprocessing's arguments (``env=atari
    env.id=BreakoutNoFrameskip-v4``); any other id and kwargs as they are.

    ``env_id`` is registered (``check_env_id`` imported ale_py for it). A ``game`` among the kwargs must name the
    id's game: it names the run (``env.name``), which must not say another game than the one played.
    """
    bare = env_id.rpartition(":")[2]
    if env_id == ATARI_ID or not PREPROCESSING_KEYS & env_kwargs.keys() or not _is_ale(bare):
        return env_id, env_kwargs
    game, played = env_kwargs.get("game"), _game_name(bare)
    if game is not None and _game_name(game) != played:
        raise ValueError(
            f"env.id={env_id!r} plays {played} but env.kwargs.game={game!r} names another game; allowed: "
            f"env.kwargs.game={played} (the same game: env.id is then not needed)"
        )
    return ATARI_ID, {**env_kwargs, "game": bare}


def _is_ale(env_id: str) -> bool:
    spec = gym.registry.get(env_id)
    return spec is not None and str(spec.entry_point).startswith("ale_py")


def _rom_name(rom: str) -> str:
    return rom.title().replace("_", "")  # ale_py.registration's rom_id_to_name: space_invaders -> SpaceInvaders


def _game_name(game: Any) -> str:
    """The game a name, ale-py's rom id or a registered ALE id plays, as a name: ``SpaceInvaders``."""
    game = str(game)
    if _is_ale(game):
        game = str(gym.spec(game).kwargs["game"])
    return _rom_name(game) if game == game.lower() else game


def _import_ale_and_cv2() -> tuple[Any, Any]:
    """ale_py (its ids registered, its start-up banner silenced) and cv2, or an ImportError saying what to install."""
    try:
        ale_py = importlib.import_module("ale_py")
        cv2 = importlib.import_module("cv2")
    except ImportError as err:
        raise ImportError(f"{ATARI_ID} needs ale-py and OpenCV: {INSTALL_HINT} ({err})") from err
    # The first ALEInterface prints "A.L.E: Arcade Learning Environment ... [Powered by Stella]" at Info level; the
    # level is process-wide, so it is set here, in the process (or vector-env worker) that makes the game.
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    gym.register_envs(ale_py)
    return ale_py, cv2


class NoopReset(gym.Wrapper):
    """SB3's ``NoopResetEnv``: after a reset, 1 to ``noop_max`` no-ops, drawn from the ALE env's own ``np_random``
    (so a seed gives SB3's draws); a game that ends during them is reset again with the same arguments."""

    def __init__(self, env: gym.Env, noop_max: int) -> None:
        super().__init__(env)
        self.noop_max = noop_max

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        for _ in range(self.env.unwrapped.np_random.integers(1, self.noop_max + 1)):
            obs, _, terminated, truncated, info = self.env.step(NOOP)
            if terminated or truncated:
                obs, info = self.env.reset(seed=seed, options=options)
        return obs, info


class EpisodicLife(gym.Wrapper):
    """SB3's ``EpisodicLifeEnv``: a life lost is ``terminated``, and the following reset takes one no-op step
    instead of restarting the game; only a real game over (or a no-op step that ends the game) resets it.

    One difference: a reset with a seed always starts a new game (SB3's drops the seed after any step that did not
    end the game), so that each seeded evaluation plays the game of its seed. SB3 seeds only the first reset, where
    both restart. gymnasium's ``AtariPreprocessing(terminal_on_life_loss=True)`` restarts the game on every reset.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.was_real_done = True

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = bool(terminated or truncated)
        lives = self.env.unwrapped.ale.lives()  # type: ignore[attr-defined]
        if 0 < lives < self.lives:  # > 0: some games (Qbert) sit at 0 lives for a few frames before game over
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if self.was_real_done or seed is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, terminated, truncated, info = self.env.step(NOOP)
            if terminated or truncated:
                obs, info = self.env.reset(seed=seed, options=options)
        self.lives = self.env.unwrapped.ale.lives()  # type: ignore[attr-defined]
        return obs, info


class FireReset(gym.Wrapper):
    """SB3's ``FireResetEnv``: every reset presses FIRE, then action 2, for games that wait for FIRE to start;
    the reset's info is empty, as SB3's."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self.env.reset(seed=seed, options=options)
        obs, _, terminated, truncated, _ = self.env.step(FIRE)
        if terminated or truncated:
            self.env.reset(seed=seed, options=options)
        obs, _, terminated, truncated, _ = self.env.step(2)
        if terminated or truncated:
            self.env.reset(seed=seed, options=options)
        return obs, {}


class AtariGameStatistics(RecordVectorEpisodeStatistics):
    """Each whole game's episode record in the vector infos (``episode``/``_episode``), where lit_rl's collector and
    evaluation read records: its raw score and length in frames, as SB3's ``Monitor`` inside ``AtariWrapper``.

    The records come from each game's own ``RecordEpisodeStatistics`` (in ``final_info`` when the game ends); a
    life lost ends an episode of the vector env but writes no record, as with SB3's ``Monitor``.
    """

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        final = infos.get("final_info", {})
        ended = np.asarray(final.get("_episode", np.zeros(self.num_envs, dtype=bool)), dtype=bool)
        if ended.any():
            record = final["episode"]
            infos["episode"] = {key: np.where(ended, record[key], 0) for key in ("r", "l", "t")}
            infos["_episode"] = ended
            self.episode_count += int(ended.sum())
            self.return_queue.extend(record["r"][ended])
            self.length_queue.extend(record["l"][ended])
            self.time_queue.extend(record["t"][ended])
        return obs, rewards, terminations, truncations, infos
