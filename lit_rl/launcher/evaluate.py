"""Evaluate a trained agent: ``python -m lit_rl.evaluate run=<run folder> [episodes=20 video=true env=<env>]``.

Loads ``<run>/checkpoints/best.ckpt`` (or ``checkpoint=last``, or any
``ckpt_path=<file>``), plays ``episodes`` episodes on the run's env (id,
kwargs and episode limit from the run's ``.hydra/config.yaml``; ``env=``
picks another env config), prints the mean and standard deviation of the
returns and writes ``eval_results.json`` beside the checkpoint. With
``video=true`` the first ``video_episodes`` episodes are recorded to mp4
under ``videos/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import hydra
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv
from omegaconf import DictConfig

from lit_rl.callbacks.evaluation import evaluate_episodes
from lit_rl.core.persistence import load_algorithm
from lit_rl.envs import check_env_id, make_vec_env
from lit_rl.envs.atari import atari_family
from lit_rl.envs.make import with_episode_records
from lit_rl.launcher.config import CONF_DIR, register_configs
from lit_rl.launcher.plain import config_dict
from lit_rl.launcher.run_log import route_third_party_logs
from lit_rl.launcher.run_records import read_run_config, run_checkpoint
from lit_rl.utils.io import write_json_atomically
from lit_rl.utils.rendering import check_offscreen_rendering

register_configs()


def make_eval_env(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    video_folder: str | Path | None = None,
    video_episodes: int = 1,
) -> VectorEnv:
    """A one-env same-step-autoreset vector env; with ``video_folder``, its first episodes are recorded to mp4."""
    if video_folder is None:
        return make_vec_env(env_id, 1, env_kwargs=env_kwargs, max_episode_steps=max_episode_steps, record_stats=False)
    check_env_id(env_id)
    env_id, make_kwargs = atari_family(env_id, {**(env_kwargs or {}), "render_mode": "rgb_array"})
    if max_episode_steps is not None:
        make_kwargs["max_episode_steps"] = max_episode_steps

    def make_recorded_env() -> gym.Env:
        env = gym.make(env_id, **make_kwargs)
        if hasattr(env.unwrapped, "mujoco_renderer"):  # gymnasium's MuJoCo envs: a missing backend fails here, with its fix
            check_offscreen_rendering(env, f"video=true ({env_id})")
        # The single-env wrapper (not the vector one) records each episode's last frame too.
        return gym.wrappers.RecordVideo(
            env,
            str(video_folder),
            episode_trigger=lambda episode: episode < video_episodes,
            name_prefix=env_id.replace("/", "-").replace(":", "-"),  # namespaced ids (ALE/..., lit_rl/...): one file
        )

    env = SyncVectorEnv([make_recorded_env], autoreset_mode=AutoresetMode.SAME_STEP)
    return with_episode_records(env, False)


def evaluate_checkpoint(
    ckpt_path: str | Path,
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    episodes: int = 10,
    deterministic: bool = True,
    seed: int | None = 0,
    device: str = "cpu",
    output_dir: str | Path | None = None,
    video: bool = False,
    video_episodes: int = 1,
) -> dict[str, Any]:
    """Evaluate the agent in ``ckpt_path``; write and return the results (``eval_results.json`` in ``output_dir``)."""
    ckpt_path = Path(ckpt_path)
    if not ckpt_path.is_file():
        raise FileNotFoundError(f"ckpt_path={str(ckpt_path)!r} is not a file")
    if not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes={episodes!r} must be a positive integer")
    if video and (not isinstance(video_episodes, int) or not 1 <= video_episodes <= episodes):
        raise ValueError(f"video_episodes={video_episodes!r} must be an integer in [1, episodes={episodes}]")
    output_dir = Path(output_dir) if output_dir is not None else ckpt_path.parent
    video_folder = output_dir / "videos" if video else None
    env = make_eval_env(env_id, env_kwargs, max_episode_steps, video_folder, video_episodes)
    try:
        agent = load_algorithm(ckpt_path, device=device)
        agent.eval()
        returns, lengths = evaluate_episodes(
            lambda obs: agent.predict(obs, deterministic=deterministic)[0], env, episodes, seed
        )
    finally:
        env.close()  # RecordVideo writes the last video on close
    results = {
        "checkpoint": str(ckpt_path),
        "algorithm": type(agent).__name__,
        "num_timesteps": int(agent.num_timesteps),
        "env_id": env_id,
        "env_kwargs": env_kwargs or {},
        "max_episode_steps": max_episode_steps,
        "episodes": episodes,
        "deterministic": deterministic,
        "seed": seed,
        "mean_reward": float(returns.mean()),
        "std_reward": float(returns.std()),
        "mean_ep_length": float(lengths.mean()),
        "returns": returns.tolist(),
        "lengths": lengths.tolist(),
        "videos": sorted(str(p) for p in video_folder.glob("*.mp4")) if video_folder else [],
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomically(output_dir / "eval_results.json", results)
    return results


def evaluation_checkpoint(cfg: DictConfig) -> tuple[Path, Path | None]:
    """``(checkpoint file, run folder or None)`` from ``run``/``checkpoint`` or ``ckpt_path``."""
    if (cfg.run is None) == (cfg.ckpt_path is None):
        raise ValueError(
            f"give exactly one of run=<run folder> or ckpt_path=<file>; got run={cfg.run!r}, "
            f"ckpt_path={cfg.ckpt_path!r}"
        )
    if cfg.run is not None:
        path = run_checkpoint(cfg.run, cfg.checkpoint)
        read_run_config(cfg.run)  # fails early, naming the folder, when it is not a run folder
        return path, Path(cfg.run)
    ckpt = Path(cfg.ckpt_path)
    # <run>/checkpoints/<name>.ckpt: the run's config gives the env.
    run_dir = ckpt.parent.parent
    return ckpt, run_dir if (run_dir / ".hydra" / "config.yaml").is_file() else None


def resolve_env(cfg: DictConfig, run_dir: Path | None) -> tuple[str, dict[str, Any], int | None]:
    """``(env id, env kwargs, max_episode_steps)``: the ``env=`` override, else the run's env."""
    if cfg.get("env") is not None:
        env = config_dict(cfg.env)
    elif run_dir is not None:
        env = read_run_config(run_dir)["env"]
    else:
        raise ValueError(
            f"ckpt_path={cfg.ckpt_path!r} is not inside a run folder (<run>/checkpoints/), so its env is unknown; "
            "add env=<name of a conf/env config>, e.g. env=Pendulum-v1"
        )
    return env["id"], dict(env.get("kwargs") or {}), env.get("max_episode_steps")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="evaluate")
def main(cfg: DictConfig) -> float:
    route_third_party_logs()  # a video's renderer (PyOpenGL) announces itself at info level
    ckpt_path, run_dir = evaluation_checkpoint(cfg)
    env_id, env_kwargs, max_episode_steps = resolve_env(cfg, run_dir)
    results = evaluate_checkpoint(
        ckpt_path,
        env_id,
        env_kwargs,
        max_episode_steps,
        episodes=cfg.episodes,
        deterministic=cfg.deterministic,
        seed=cfg.seed,
        device=cfg.device,
        output_dir=cfg.output_dir,
        video=cfg.video,
        video_episodes=cfg.video_episodes,
    )
    print(
        f"{results['algorithm']} ({results['num_timesteps']} env steps) on {env_id}: "
        f"mean return {results['mean_reward']:.2f} +/- {results['std_reward']:.2f} over {cfg.episodes} episodes "
        f"({'deterministic' if cfg.deterministic else 'stochastic'})"
    )
    out = Path(cfg.output_dir) if cfg.output_dir is not None else ckpt_path.parent
    print(f"wrote {out / 'eval_results.json'}" + "".join(f"\nvideo: {v}" for v in results["videos"]))
    return results["mean_reward"]


if __name__ == "__main__":
    main()
