"""SB3's ``evaluate_policy`` (``stable_baselines3.common.evaluation``): the documented import path.

``mean_reward, std_reward = evaluate_policy(model, env, n_eval_episodes=10)`` as in SB3. The function lives in
:mod:`lit_rl.collect.evaluation`, next to the collector that steps envs the same way.
"""

from lit_rl.collect.evaluation import evaluate_policy

__all__ = ["evaluate_policy"]
