"""Env construction with gymnasium's vector envs and wrappers."""

from __future__ import annotations

import difflib
import importlib
import inspect
import logging
import warnings
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from lit_rl.envs.atari import ATARI_ID, AtariGameStatistics, atari_family
from lit_rl.envs.sb3_vec_env import SB3VecEnvAdapter, is_sb3_vec_env

log = logging.getLogger(__name__)
_MUJOCO_ROUTED = False

VECTORIZATION_MODES = ("sync", "async")

# Packages that provide env families, for a helpful message when one is missing.
ENV_PACKAGES = {
    "mujoco": "gymnasium[mujoco]",
    "box2d": "gymnasium[box2d]",
    "ale_py": "ale-py (gymnasium[atari])",
}


# Env id prefixes registered by other packages: (module that registers them on import, pip package).
# gymnasium-robotics is imported through lit_rl.envs.robotics (quiet, and working with MuJoCo 4).
ROBOTICS = ("lit_rl.envs.robotics", "gymnasium-robotics")
ENV_PLUGINS = {
    "ALE/": ("ale_py", "ale-py"),
    "dm_control/": ("shimmy", "shimmy[dm-control]"),
    "Fetch": ROBOTICS,
    "HandManipulate": ROBOTICS,
    "HandReach": ROBOTICS,
    "AntMaze": ROBOTICS,
    "PointMaze": ROBOTICS,
    "Adroit": ROBOTICS,
    "FrankaKitchen": ROBOTICS,
}
# Env id suffixes registered by other packages: ale-py's ids without a prefix (SB3's BreakoutNoFrameskip-v4).
ENV_PLUGIN_SUFFIXES = {suffix: ("ale_py", "ale-py") for suffix in ("NoFrameskip-v4", "NoFrameskip-v0")}
# Packages imported in lit_rl's own way, wherever an env id names them ("gymnasium_robotics:FetchReach-v4", or ids
# registered before lit_rl saw them): {package: module that imports it}.
PLUGIN_IMPORTS = {"gymnasium_robotics": "lit_rl.envs.robotics"}
# Packages in lit_rl's `envs` extra (pip install 'lit_rl[envs]' installs them all).
ENVS_EXTRA = ("gymnasium-robotics", "shimmy[dm-control]", "ale-py", "opencv-python-headless")


def check_env_id(env_id: str) -> None:
    """Raise a ValueError naming the env id, and the package to install or close matches, when it is not registered.

    Ids of plugin families (gymnasium-robotics, ale-py, shimmy) are registered by importing their package first;
    gymnasium's ``"module:EnvId-v0"`` imports ``module`` (which registers ``EnvId-v0``), as ``gymnasium.make`` does.
    gymnasium-robotics is always imported through :mod:`lit_rl.envs.robotics` (:data:`PLUGIN_IMPORTS`).
    """
    module_name, _, bare_id = env_id.rpartition(":")
    if module_name:
        try:
            importlib.import_module(PLUGIN_IMPORTS.get(module_name, module_name))
        except ModuleNotFoundError as err:
            own = err.name is not None and (module_name + ".").startswith(err.name + ".")  # not one it imports
            hint = "put its folder on PYTHONPATH" if own else f"install {err.name!r}, which it imports"
            raise ValueError(
                f"env.id={env_id!r}: the module {module_name!r} that should register {bare_id!r} cannot be imported "
                f"({err}); {hint}"
            ) from None
        if bare_id in gym.registry:
            return
        raise ValueError(f"env.id={env_id!r}: importing {module_name!r} did not register {bare_id!r}")
    if env_id in gym.registry:
        import_plugin_of(env_id)
        return
    plugin = next((p for prefix, p in ENV_PLUGINS.items() if env_id.startswith(prefix)), None) or next(
        (p for suffix, p in ENV_PLUGIN_SUFFIXES.items() if env_id.endswith(suffix)), None
    )
    if plugin is not None:
        module, package = plugin
        try:
            gym.register_envs(importlib.import_module(module))
        except ImportError as err:
            command = f"pip install '{package}'" if "[" in package else f"pip install {package}"  # quoted for shells
            extra = " (or pip install 'lit_rl[envs]')" if package in ENVS_EXTRA else ""
            raise ValueError(
                f"env.id={env_id!r} needs the package {package!r}, which is not installed or cannot be imported "
                f"({err}): {command}{extra}"
            ) from None
        if env_id in gym.registry:
            return
    close = difflib.get_close_matches(env_id, list(gym.registry), n=5)
    hint = f"; did you mean one of {close}?" if close else ""
    raise ValueError(f"env.id={env_id!r} is not a registered gymnasium environment{hint}")


def import_plugin_of(env_id: str) -> None:
    """Import, in lit_rl's way (:data:`PLUGIN_IMPORTS`), the package of a registered env id whose entry point is in one
    (e.g. a Fetch id registered by the user's own ``import gymnasium_robotics``)."""
    entry_point = gym.spec(env_id).entry_point
    package = entry_point.split(".")[0].split(":")[0] if isinstance(entry_point, str) else None
    if package in PLUGIN_IMPORTS:
        importlib.import_module(PLUGIN_IMPORTS[package])


def route_mujoco_warnings(env_id: str) -> None:
    """MuJoCo's C-level warnings into lit_rl's log instead of raw lines on the terminal (once per process).

    Loading a ``-v4`` model prints "WARNING: compiler attribute 'settotalmass' is deprecated ..." from
    MuJoCo >= 3.3 on every env made: a notice about gymnasium's XML, not the user's run, so it goes to the
    debug log. Any other MuJoCo warning (e.g. an unstable simulation) stays a warning, in lit_rl's words.
    """
    global _MUJOCO_ROUTED
    entry_point = str(getattr(gym.spec(env_id.rpartition(":")[2]), "entry_point", ""))  # "module:Id": the Id
    if _MUJOCO_ROUTED or "mujoco" not in entry_point:
        return
    import mujoco

    def warning(message: str) -> None:
        level = logging.DEBUG if "deprecated" in message else logging.WARNING
        log.log(level, "MuJoCo (env %s): %s", env_id, message.strip())

    mujoco.set_mju_user_warning(warning)
    _MUJOCO_ROUTED = True


def make_vec_env(
    env_id: str,
    n_envs: int = 1,
    seed: int | None = None,
    vectorization: str = "sync",
    env_kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    record_stats: bool = True,
) -> VectorEnv:
    """A vector env of ``n_envs`` copies of ``env_id`` with same-step autoreset.

    Same-step autoreset (as Stable-Baselines3): when a sub-env's episode ends,
    ``step`` returns the next episode's first observation and puts the true
    last one in ``info["final_obs"]``, so no transition crosses episodes.
    ``seed`` seeds the action space (for warm-up sampling); the envs are
    seeded by the first ``reset(seed=...)``, which the algorithm does.
    """
    check_env_id(env_id)
    if vectorization not in VECTORIZATION_MODES:
        raise ValueError(f"env.vectorization={vectorization!r} is not allowed; allowed: {list(VECTORIZATION_MODES)}")
    if not isinstance(n_envs, int) or n_envs < 1:
        raise ValueError(f"env.n_envs={n_envs!r} must be a positive integer")
    route_mujoco_warnings(env_id)
    env_id, make_kwargs = atari_family(env_id, dict(env_kwargs or {}))
    if max_episode_steps is not None:
        make_kwargs["max_episode_steps"] = max_episode_steps
    try:
        with warnings.catch_warnings():
            # gymnasium's "HalfCheetah-v4 is out of date" (and the like): its notice, not the user's run's.
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"gymnasium(\.|$)")
            env = gym.make_vec(
                env_id,
                num_envs=n_envs,
                vectorization_mode=vectorization,
                vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
                **make_kwargs,
            )
    except (ImportError, gym.error.DependencyNotInstalled) as err:
        missing = next((pkg for mod, pkg in ENV_PACKAGES.items() if mod in str(err)), None)
        hint = f": pip install {missing}" if missing else ""
        raise ImportError(f"env.id={env_id!r} needs a package that is not installed{hint} ({err})") from err
    env = with_episode_records(env, record_stats)
    env.action_space.seed(seed)
    return env


def with_episode_records(env: VectorEnv, wanted: bool) -> VectorEnv:
    """``env`` with :func:`record_episodes` where ``wanted``, and always where an episode is more than the env's own
    (an Atari game over its lives: its records hold the score that evaluation reads)."""
    return record_episodes(env) if wanted or vector_env_name(env) == ATARI_ID else env


def record_episodes(env: VectorEnv) -> VectorEnv:
    """``env`` with an ``info["episode"]`` record of each episode: each whole game with its raw score for Atari
    (:class:`~lit_rl.envs.atari.AtariGameStatistics`), else gymnasium's ``RecordEpisodeStatistics``."""
    return AtariGameStatistics(env) if vector_env_name(env) == ATARI_ID else RecordEpisodeStatistics(env)


def as_vector_env(
    env: str | gym.Env | VectorEnv,
    n_envs: int = 1,
    seed: int | None = None,
    vectorization: str = "sync",
    env_kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
) -> VectorEnv:
    """A same-step-autoreset vector env with episode statistics from an env id, an ``Env`` or a ``VectorEnv``.

    Ids are built with :func:`make_vec_env`; a single ``Env`` becomes a
    one-env vector env; a ``VectorEnv`` must already use same-step autoreset;
    a Stable-Baselines3 ``VecEnv`` is adapted (:class:`SB3VecEnvAdapter`).
    A given ``seed`` seeds the action space however the env is given (warm-up
    actions are sampled from it), as SB3's ``set_random_seed`` does.
    """
    if isinstance(env, str):
        return make_vec_env(env, n_envs, seed, vectorization, env_kwargs, max_episode_steps)
    vector_env = _wrap_env_object(env)
    if seed is not None:
        vector_env.action_space.seed(seed)
    return vector_env


def _wrap_env_object(env: gym.Env | VectorEnv) -> VectorEnv:
    """A user's ``Env``, same-step-autoreset ``VectorEnv`` or SB3 ``VecEnv`` as a vector env with episode statistics."""
    if is_sb3_vec_env(env):
        adapter = SB3VecEnvAdapter(env)
        return adapter if adapter.has_monitor else RecordEpisodeStatistics(adapter)
    if isinstance(env, VectorEnv):
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            # Other modes put the next episode's first observation into a transition.
            raise ValueError(
                f"env: a VectorEnv needs autoreset_mode=AutoresetMode.SAME_STEP, got {mode}; "
                "build it with vector_kwargs={'autoreset_mode': AutoresetMode.SAME_STEP} or pass an env id"
            )
        return env if isinstance(env, RecordEpisodeStatistics) else RecordEpisodeStatistics(env)
    if isinstance(env, gym.Env):
        if "options" not in inspect.signature(env.reset).parameters:
            env = ResetWithoutOptions(env)
        return record_episodes(gym.vector.SyncVectorEnv([lambda: env], autoreset_mode=AutoresetMode.SAME_STEP))
    raise TypeError(
        f"env={env!r} is not usable; pass an env id (str), a gymnasium.Env, a gymnasium VectorEnv "
        "or a stable_baselines3 VecEnv"
    )


class ResetWithoutOptions(gym.Wrapper):
    """For an env whose ``reset`` takes no ``options`` (SB3's DummyVecEnv passes them only when set; gymnasium's
    vector envs always do)."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if options is not None:
            raise ValueError(f"reset(options={options!r}): {self.env} takes no options")
        return self.env.reset(seed=seed)


def vector_env_name(env: VectorEnv) -> str:
    """The registered id of a vector env's envs, or the env class name for unregistered ones."""
    base = env.unwrapped
    envs = getattr(base, "envs", None)
    spec = base.spec or (envs[0].spec if envs else None)
    return spec.id if spec is not None else type(base).__name__
