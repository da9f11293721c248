"""Checkpoint contents for an exact resume: what ``OffPolicyAlgorithm`` adds to Lightning's checkpoints.

Weights and optimizer states are Lightning's; this mixin adds the RL state
(class, spaces, counters) and, for launcher checkpoints, RNG states, the env's
mid-episode state, action noise, episode statistics and the replay buffer.
Restored pieces that need the env, the buffer or the optimizers wait in
``_pending`` until ``on_fit_start`` applies them.
"""

from __future__ import annotations

import copy
import random
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from lit_rl.core.host import AlgorithmHost
from lit_rl.core.persistence import CHECKPOINT_FORMAT, class_path
from lit_rl.envs.state import capture_vector_env_state, restore_vector_env_state

LEGACY_NETWORK_PREFIXES = ("actor.", "critic.", "actor_target.", "critic_target.", "q_net.", "q_net_target.")


def upgrade_state_dict(state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """A format-1 state dict (lit_rl before the policy modules) with its network keys moved under ``policy.``;
    keys of a ``torch.compile``-wrapped policy (``policy._orig_mod.``) as the plain module's."""
    state_dict = {k.replace("._orig_mod.", "."): v for k, v in state_dict.items()}
    if not any(k.startswith(LEGACY_NETWORK_PREFIXES) for k in state_dict):
        return state_dict
    return {("policy." + k if k.startswith(LEGACY_NETWORK_PREFIXES) else k): v for k, v in state_dict.items()}


class ExactResume(AlgorithmHost):
    """Mixin of :class:`~lit_rl.core.off_policy.OffPolicyAlgorithm` (uses its attributes)."""

    def rl_state(self, with_training_state: bool) -> dict[str, Any]:
        """What a checkpoint holds besides weights and optimizers.

        ``with_training_state`` adds what an exact resume needs: RNG states,
        the current observations, episode statistics, action noise, the env's
        mid-episode state and (if ``checkpoint_replay_buffer``) the replay buffer.
        """
        state: dict[str, Any] = {
            "algorithm": class_path(type(self)),
            "format": CHECKPOINT_FORMAT,
            "replay_buffer_class": class_path(self.replay_buffer_class),
            "num_timesteps": self.num_timesteps,
            "total_timesteps": self.total_timesteps,
            "n_updates": self._n_updates,
            "episode_num": self.collector.episode_num,
            "observation_space": self.observation_space,
            "action_space": self.action_space,
        }
        if not with_training_state:
            return state
        env_state = None
        if self._trainer is not None and self.collector.last_obs is not None:
            env_state = capture_vector_env_state(self.train_env)
        state["training"] = {
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()},
            "last_obs": None if env_state is None else copy.deepcopy(self.collector.last_obs),
            "env": env_state,
            "ep_returns": list(self.ep_returns),
            "ep_lengths": list(self.ep_lengths),
            "ep_info_buffer": list(self.collector.ep_info_buffer),  # SB3's names, read by users' callbacks
            "ep_success_buffer": list(self.collector.ep_success_buffer),
            "action_noise": copy.deepcopy(self.action_noise),
            "replay_buffer": (
                self.replay_buffer.state_dict()
                if self.checkpoint_replay_buffer and self.replay_buffer is not None
                else None
            ),
        }
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """``nn.Module.load_state_dict``, also for checkpoints of format 1 (see :func:`upgrade_state_dict`)."""
        return super().load_state_dict(upgrade_state_dict(state_dict), strict, assign=assign)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["rl_state"] = self.rl_state(with_training_state=True)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint.get("rl_state", {})
        saved = state.get("algorithm")
        if saved is not None and saved != class_path(type(self)):
            raise ValueError(
                f"the checkpoint holds a {saved.rpartition('.')[2]} model; this run builds {type(self).__name__}; "
                f"allowed: a checkpoint of {type(self).__name__}"
            )
        saved_spaces = (state.get("observation_space"), state.get("action_space"))
        if saved_spaces[0] is not None and saved_spaces != (self.observation_space, self.action_space):
            raise ValueError(
                f"the checkpoint was trained on observation space {saved_spaces[0]} and action space "
                f"{saved_spaces[1]}; this env has {self.observation_space} and {self.action_space}"
            )
        self.num_timesteps = state.get("num_timesteps", 0)
        self._n_updates = state.get("n_updates", 0)
        self.collector.episode_num = state.get("episode_num", 0)
        training = state.get("training")
        if training is not None:
            self._pending.update({k: v for k, v in training.items() if v is not None})

    def _apply_pending_state(self) -> None:
        """Apply restored state that needs the env, buffer and optimizers (end of ``on_fit_start``)."""
        pending, self._pending = self._pending, {}
        if "replay_buffer" in pending:
            assert self.replay_buffer is not None  # on_fit_start built it before this
            self.replay_buffer.load_state_dict(pending["replay_buffer"])
            # The buffer's unfinished episodes end here unless the env continues them: load_replay_buffer's
            # truncate_last_traj, else whether the env's mid-episode state is restored below.
            if pending.get("truncate_last_traj", "env" not in pending) and hasattr(
                self.replay_buffer, "truncate_last_trajectory"
            ):
                self.replay_buffer.truncate_last_trajectory()
        if "optimizer_states" in pending:
            for opt, opt_state in zip(self.trainer.optimizers, pending["optimizer_states"], strict=True):
                opt.load_state_dict(opt_state)
        if "env" in pending:
            restore_vector_env_state(self.train_env, pending["env"])
            self.collector.last_obs = pending["last_obs"]
        elif "rng" in pending and self._trainer is not None:
            warnings.warn(
                f"{type(self.train_env.unwrapped).__name__} state cannot be checkpointed (async workers or an env that does "
                "not pickle): the resumed run starts new episodes",
                stacklevel=2,
            )
        if "ep_returns" in pending:
            self.ep_returns.extend(pending["ep_returns"])
            self.ep_lengths.extend(pending["ep_lengths"])
            self.collector.ep_info_buffer.extend(pending.get("ep_info_buffer", []))  # absent in older checkpoints
            self.collector.ep_success_buffer.extend(pending.get("ep_success_buffer", []))
        if "action_noise" in pending:
            self.action_noise = pending["action_noise"]
        if "rng" in pending:  # last, so nothing above consumes the restored streams
            torch.set_rng_state(pending["rng"]["torch"])
            np.random.set_state(pending["rng"]["numpy"])
            random.setstate(pending["rng"]["python"])
