"""How an algorithm acts: numpy observations in, actions in the algorithm's scale out (rollouts, ``predict``,
evaluation); the policy's own part is the algorithm's ``policy_action``."""

from __future__ import annotations

import numpy as np
import torch

from lit_rl.core import precision as mixed_precision
from lit_rl.core.host import AlgorithmHost


class Acting(AlgorithmHost):
    """``act``, ``rollout_act`` and ``acting_input`` of :class:`~lit_rl.core.off_policy.OffPolicyAlgorithm` (the base of
    its SB3 methods, which act through them)."""

    @torch.no_grad()
    def act(self, obs: np.ndarray | dict[str, np.ndarray], deterministic: bool = False) -> np.ndarray:
        """Policy actions in the algorithm's scale for a batch of numpy observations."""
        obs_t = self.acting_input(obs)
        with mixed_precision.matmul_precision(self.precision, self.device):
            actions = self.policy_action(obs_t, deterministic)
        return mixed_precision.float32_actions(actions).cpu().numpy()

    def rollout_act(self, obs: np.ndarray | dict[str, np.ndarray]) -> np.ndarray:
        """The actions a rollout takes (:meth:`act`, exploring); a packed run's members act here together."""
        return self.act(obs)

    @torch.no_grad()
    def acting_input(self, obs: np.ndarray | dict[str, np.ndarray]) -> torch.Tensor:
        """Numpy observations as the policy acts on them (flat, float32, normalized), the policy in eval mode."""
        if self.obs_flattener is not None:
            if not isinstance(obs, dict):
                raise TypeError(f"{type(self).__name__} has a Dict observation space; got {type(obs).__name__} observations")
            obs = self.obs_flattener.flatten(obs)
        self.set_policy_training(False)  # rollouts and predict in eval mode, as SB3 (dropout off, running statistics)
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        if self.normalizer is not None:  # the model's statistics, never updated here (predict, evaluation)
            obs_t = self.normalizer.normalize_obs(obs_t)
        return obs_t
