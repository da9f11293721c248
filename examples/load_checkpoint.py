"""Load a launcher run's checkpoint in Python, evaluate it and predict with it.

``python -m lit_rl.train`` writes ``<run>/checkpoints/best.ckpt`` (best evaluation) and ``last.ckpt``;
``load_algorithm`` reads either (the algorithm class is stored in the file) into a model with the
Stable-Baselines3 API. The env to evaluate on is read from the run's ``.hydra/config.yaml``.

Run:  python examples/load_checkpoint.py [--run outputs/<date>/<run>] [--checkpoint best|last] [--episodes 10]
      (without --run: the newest run folder under outputs/)
"""

import argparse
from pathlib import Path

from omegaconf import OmegaConf

from lit_rl.algorithms import load_algorithm
from lit_rl.callbacks import evaluate_episodes
from lit_rl.envs import make_vec_env


def newest_run(root: Path = Path("outputs")) -> Path:
    """The most recently written run folder under ``root`` (one with ``checkpoints/last.ckpt``)."""
    checkpoints = sorted(root.glob("**/checkpoints/last.ckpt"), key=lambda p: p.stat().st_mtime)
    if not checkpoints:
        raise SystemExit(f"no run folder with checkpoints/last.ckpt under {root}/; pass --run <run folder>")
    return checkpoints[-1].parent.parent


def main(run: Path, checkpoint: str, episodes: int, seed: int) -> None:
    path = run / "checkpoints" / f"{checkpoint}.ckpt"
    model = load_algorithm(path, device="cpu")
    print(f"loaded {type(model).__name__} from {path} (trained {model.num_timesteps} env steps)")

    env_cfg = OmegaConf.load(run / ".hydra" / "config.yaml").env  # the env the run trained on
    env = make_vec_env(
        env_cfg.id,
        env_kwargs=OmegaConf.to_container(env_cfg.kwargs),
        max_episode_steps=env_cfg.max_episode_steps,
    )
    returns, lengths = evaluate_episodes(lambda obs: model.predict(obs, deterministic=True)[0], env, episodes, seed)
    print(f"{env_cfg.id}: mean return {returns.mean():.1f} +/- {returns.std():.1f}, "
          f"mean length {lengths.mean():.0f} over {len(returns)} episodes")  # fmt: skip

    obs, _ = env.reset(seed=seed)
    action, _ = model.predict(obs[0], deterministic=True)  # one observation in, one action out
    print(f"action for observation {obs[0].round(3)}: {action.round(3)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a launcher run folder (default: the newest under outputs/)")
    parser.add_argument("--checkpoint", choices=["best", "last"], default="best")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes")
    parser.add_argument("--seed", type=int, default=0, help="seeds the evaluation env's first reset")
    args = parser.parse_args()
    main(args.run or newest_run(), args.checkpoint, args.episodes, args.seed)
