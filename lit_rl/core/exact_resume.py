"""Checkpoint contents for an exact resume: what ``OffPolicyAlgorithm`` adds to Lightning's checkpoints.

Weights and optimizer states are Lightning's; :func:`rl_state` adds the RL state
(class, spaces, counters) and, for launcher checkpoints, RNG states, the env's
mid-episode state, action noise, episode statistics and the replay buffer.
Restored pieces that need the env, the buffer or the optimizers wait in
:class:`ResumeState` until ``on_fit_start`` applies them.
"""

from __future__ import annotations

import copy
import random
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from lit_rl.core.network_setup import global_rng_lock
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


class ResumeState:
    """What an exact resume carries between a checkpoint and the next fit.

    ``pending``: restored pieces that need the env, the buffer or the optimizers, applied at the end of
    ``on_fit_start`` (:func:`apply_pending_state`). ``include_replay_buffer``: launcher checkpoints carry
    the buffer; ``best.ckpt`` and ``save()`` do not (the evaluation callback switches it around its save).
    """

    def __init__(self) -> None:
        self.pending: dict[str, Any] = {}
        self.include_replay_buffer = True


def rl_state(algo: Any, with_training_state: bool) -> dict[str, Any]:
    """What a checkpoint holds besides weights and optimizers.

    ``with_training_state`` adds what an exact resume needs: RNG states,
    the current observations, episode statistics, action noise, the env's
    mid-episode state and (if ``algo.resume.include_replay_buffer``) the replay buffer.
    """
    collector = algo.collector
    state: dict[str, Any] = {
        "algorithm": class_path(type(algo)),
        "format": CHECKPOINT_FORMAT,
        "replay_buffer_class": class_path(algo.replay_buffer_class),
        "num_timesteps": algo.num_timesteps,
        "total_timesteps": algo.total_timesteps,
        "n_updates": algo._n_updates,
        "episode_num": collector.episode_num,
        "observation_space": algo.observation_space,
        "action_space": algo.action_space,
    }
    if not with_training_state:
        return state
    env_state = None
    if algo._trainer is not None and collector.last_obs is not None:
        env_state = capture_vector_env_state(algo.train_env)
    buffer = algo.replay_buffer
    state["training"] = {
        "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()},
        "last_obs": None if env_state is None else copy.deepcopy(collector.last_obs),
        "env": env_state,
        "ep_returns": list(collector.ep_returns),
        "ep_lengths": list(collector.ep_lengths),
        "ep_info_buffer": list(collector.ep_info_buffer),  # SB3's names, read by users' callbacks
        "ep_success_buffer": list(collector.ep_success_buffer),
        "action_noise": copy.deepcopy(algo.action_noise),
        "loss_scaling": algo.loss_scaling.state_dict(),  # 16-mixed's gradient scales ({} otherwise)
        "replay_buffer": buffer.state_dict() if algo.resume.include_replay_buffer and buffer is not None else None,
    }
    return state


def check_checkpoint_fits(algo: Any, state: dict[str, Any]) -> None:
    """A checkpoint's ``rl_state`` is of this algorithm's class and of its spaces; else a ValueError saying which."""
    saved = state.get("algorithm")
    if saved is not None and saved != class_path(type(algo)):
        raise ValueError(
            f"the checkpoint holds a {saved.rpartition('.')[2]} model; this run builds {type(algo).__name__}; "
            f"allowed: a checkpoint of {type(algo).__name__}"
        )
    saved_spaces = (state.get("observation_space"), state.get("action_space"))
    if saved_spaces[0] is not None and saved_spaces != (algo.observation_space, algo.action_space):
        raise ValueError(
            f"the checkpoint was trained on observation space {saved_spaces[0]} and action space "
            f"{saved_spaces[1]}; this env has {algo.observation_space} and {algo.action_space}"
        )


def apply_pending_state(algo: Any, pending: dict[str, Any]) -> Any:
    """Put restored state that needs the env, buffer and optimizers in place (end of ``on_fit_start``).

    Returns the restored action noise (None: keep the model's).
    """
    buffer, collector = algo.replay_buffer, algo.collector
    if "replay_buffer" in pending:
        assert buffer is not None  # on_fit_start built it before this
        buffer.load_state_dict(pending["replay_buffer"])
        # The buffer's unfinished episodes end here unless the env continues them: load_replay_buffer's
        # truncate_last_traj, else whether the env's mid-episode state is restored below.
        if pending.get("truncate_last_traj", "env" not in pending) and hasattr(buffer, "truncate_last_trajectory"):
            buffer.truncate_last_trajectory()
    if "optimizer_states" in pending:
        for opt, opt_state in zip(algo.trainer.optimizers, pending["optimizer_states"], strict=True):
            opt.load_state_dict(opt_state)
    if "loss_scaling" in pending:
        algo.loss_scaling.load_state_dict(pending["loss_scaling"])
    if "env" in pending:
        restore_vector_env_state(algo.train_env, pending["env"])
        collector.last_obs = pending["last_obs"]
    elif "rng" in pending and algo._trainer is not None:
        warnings.warn(
            f"{type(algo.train_env.unwrapped).__name__} state cannot be checkpointed (async workers or an env that "
            "does not pickle): the resumed run starts new episodes",
            stacklevel=3,
        )
    if "ep_returns" in pending:
        collector.ep_returns.extend(pending["ep_returns"])
        collector.ep_lengths.extend(pending["ep_lengths"])
        collector.ep_info_buffer.extend(pending.get("ep_info_buffer", []))  # absent in older checkpoints
        collector.ep_success_buffer.extend(pending.get("ep_success_buffer", []))
    if "rng" in pending:  # last, so nothing above consumes the restored streams
        with global_rng_lock():
            torch.set_rng_state(pending["rng"]["torch"])
            np.random.set_state(pending["rng"]["numpy"])
            random.setstate(pending["rng"]["python"])
    return pending.get("action_noise")
