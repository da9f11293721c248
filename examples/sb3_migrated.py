"""A Stable-Baselines3 script moved to lit_rl: SAC on Pendulum-v1 with evaluation and checkpoint callbacks,
then save, load, evaluate and predict.

Only the imports changed. The original Stable-Baselines3 imports were:

    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
    from stable_baselines3.common.evaluation import evaluate_policy

Run:  python examples/sb3_migrated.py [--timesteps 20000] [--out sac_pendulum]
"""

import argparse
from pathlib import Path

import gymnasium as gym

from lit_rl import SAC
from lit_rl.callbacks.sb3 import CheckpointCallback, EvalCallback
from lit_rl.evaluation import evaluate_policy


def main(timesteps: int, out: Path, net_arch: list[int], eval_episodes: int) -> None:
    eval_callback = EvalCallback(
        gym.make("Pendulum-v1"),
        best_model_save_path=out / "best_model",
        log_path=out / "eval",
        eval_freq=max(timesteps // 10, 1),
        n_eval_episodes=eval_episodes,
        verbose=0,
    )
    checkpoint_callback = CheckpointCallback(save_freq=max(timesteps // 4, 1), save_path=out / "checkpoints")
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": net_arch}, seed=0, verbose=0)
    model.learn(total_timesteps=timesteps, callback=[eval_callback, checkpoint_callback])
    print(f"best mean eval return during training: {eval_callback.best_mean_reward:.1f}")

    model.save(out / "sac_pendulum")
    del model
    model = SAC.load(out / "sac_pendulum")

    env = gym.wrappers.RecordEpisodeStatistics(gym.make("Pendulum-v1"))  # each episode's return, as Monitor's
    mean_reward, std_reward = evaluate_policy(model, env, n_eval_episodes=eval_episodes)
    print(f"loaded model: mean return {mean_reward:.1f} +/- {std_reward:.1f} over {eval_episodes} episodes")

    obs, _ = gym.make("Pendulum-v1").reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    print(f"action for observation {obs.round(3)}: {action.round(3)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=20_000, help="env steps to train")
    parser.add_argument("--out", type=Path, default=Path("sac_pendulum"), help="folder for models and checkpoints")
    parser.add_argument("--net-arch", type=int, nargs="+", default=[256, 256], help="hidden layer sizes")
    parser.add_argument("--eval-episodes", type=int, default=10)
    args = parser.parse_args()
    main(args.timesteps, args.out, args.net_arch, args.eval_episodes)
