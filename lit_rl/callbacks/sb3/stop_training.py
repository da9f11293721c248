"""Callbacks that stop training: after n episodes, at a reward threshold, without improvement."""

from __future__ import annotations

import numpy as np

from lit_rl.callbacks.sb3.base import BaseCallback
from lit_rl.callbacks.sb3.evaluation import EvalCallback


class StopTrainingOnMaxEpisodes(BaseCallback):
    """Stop once every env has played ``max_episodes`` episodes on average (``max_episodes * n_envs`` in all)."""

    def __init__(self, max_episodes: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.max_episodes, self._total_max_episodes, self.n_episodes = max_episodes, max_episodes, 0

    def _init_callback(self) -> None:
        self._total_max_episodes = self.max_episodes * self.training_env.num_envs

    def _on_step(self) -> bool:
        self.n_episodes += int(np.sum(self.locals["dones"]))
        continue_training = self.n_episodes < self._total_max_episodes
        if self.verbose and not continue_training:
            print(f"Stopping training at {self.num_timesteps} steps: {self.n_episodes} episodes played "
                  f"(max_episodes={self.max_episodes} per env)")  # fmt: skip
        return continue_training


class StopTrainingOnRewardThreshold(BaseCallback):
    """Use as ``callback_on_new_best``: stop once the best mean return reaches ``reward_threshold``."""

    def __init__(self, reward_threshold: float, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.reward_threshold = reward_threshold

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise TypeError("StopTrainingOnRewardThreshold must be used as EvalCallback(callback_on_new_best=...)")
        return not self.parent.best_mean_reward >= self.reward_threshold


class StopTrainingOnNoModelImprovement(BaseCallback):
    """Use as ``callback_after_eval``: stop after ``max_no_improvement_evals`` evaluations without a new best.

    The first ``min_evals`` evaluations never stop training.
    """

    def __init__(self, max_no_improvement_evals: int, min_evals: int = 0, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.max_no_improvement_evals, self.min_evals = max_no_improvement_evals, min_evals
        self.last_best_mean_reward, self.no_improvement_evals = -np.inf, 0

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise TypeError("StopTrainingOnNoModelImprovement must be used as EvalCallback(callback_after_eval=...)")
        if self.n_calls > self.min_evals:
            if self.parent.best_mean_reward > self.last_best_mean_reward:
                self.no_improvement_evals = 0
            else:
                self.no_improvement_evals += 1
        self.last_best_mean_reward = self.parent.best_mean_reward
        return self.no_improvement_evals <= self.max_no_improvement_evals
