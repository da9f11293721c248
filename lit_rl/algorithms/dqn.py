"""DQN (Mnih et al., 2015) with Stable-Baselines3 2.x's defaults and update rule."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.compiled import compiled, run_update
from lit_rl.core.hyperparameters import NO_SDE, NO_SDE_HINT, GymEnv, Schedule
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.core.sb3_api import delegated
from lit_rl.nets.target import update_target
from lit_rl.policies.dqn import DQNPolicy
from lit_rl.utils.checks import check_float, check_int
from lit_rl.utils.declared import bound_arguments


def linear_schedule(start: float, end: float, end_fraction: float, progress_remaining: float) -> float:
    """``start`` -> ``end`` linearly over the first ``end_fraction`` of training, then ``end`` (SB3's get_linear_fn)."""
    elapsed = 1.0 - progress_remaining
    if elapsed >= end_fraction:  # SB3 tests '>', which gives the same value at equality; '>=' also allows 0
        return end
    return start + elapsed * (end - start) / end_fraction


def q_loss(
    policy: DQNPolicy, batch: ReplayBatch, discount: torch.Tensor | float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Huber (smooth L1) loss between ``Q(s, a)`` and ``r + (1 - terminated) * discount * max_a' Q_target(s', a')``."""
    with torch.no_grad():
        next_q = policy.q_net_target(batch.next_observations).max(dim=1).values
        target = batch.rewards + (1.0 - batch.terminated) * discount * next_q
    action_index = (batch.actions.reshape(-1, 1) - policy.action_start).long()
    q = policy.q_net(batch.observations).gather(1, action_index).squeeze(1)
    loss = F.smooth_l1_loss(q, target)
    return loss, {"train/loss": loss.detach()}


@dataclass
class Exploration:
    """DQN's epsilon-greedy state: the rate now and the vector-env steps seen (SB3's ``_n_calls``, never reset)."""

    rate: float
    n_calls: int = 0


class DQN(OffPolicyAlgorithm):
    """Deep Q-Network as in Stable-Baselines3 2.x.

    Q(s, .) is an MLP over flat observations, one output per discrete action.
    The loss is Huber (smooth L1) between Q(s, a) and
    ``r + (1 - terminated) * gamma * max_a' Q_target(s', a')``; gradients are
    clipped to ``max_grad_norm``. The target network is updated with Polyak
    ``tau`` (1.0: a hard copy) every ``target_update_interval`` env steps,
    counted as vector-env steps: every ``max(target_update_interval // n_envs, 1)``
    calls of :meth:`on_env_step`, as SB3 does. Exploration is epsilon-greedy
    with one coin per vector-env step (SB3's), epsilon decaying linearly from ``exploration_initial_eps`` to
    ``exploration_final_eps`` over the first ``exploration_fraction`` of the run.

    ``policy_kwargs``: ``net_arch`` (default [64, 64]; a list, or a dict whose
    ``qf`` entry is used) and ``activation_fn`` ("relu").
    """

    supported_action_spaces = (spaces.Discrete,)
    default_policy_class = DQNPolicy

    def __init__(
        self,
        policy: str | type[DQNPolicy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 1e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 32,
        tau: float = 1.0,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 4,
        gradient_steps: int = 1,
        action_noise: ActionNoise | str | None = None,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        verbose: int = 0,
        tensorboard_log: str | None = None,
        device: torch.device | str = "auto",
        support_multi_env: bool = True,
        monitor_wrapper: bool = True,
        seed: int | None = None,
        supported_action_spaces: tuple[type[spaces.Space], ...] | None = None,
        action_noise_std: float = 0.1,
        normalize_obs: bool = False,
        normalize_reward: bool = False,
        normalize_kwargs: dict[str, Any] | None = None,
        _init_setup_model: bool = True,
        target_update_interval: int = 10_000,  # env steps between target-network updates
        exploration_fraction: float = 0.1,  # fraction of total_timesteps over which epsilon decays ...
        exploration_initial_eps: float = 1.0,  # ... from this ...
        exploration_final_eps: float = 0.05,  # ... to this, then stays there
        max_grad_norm: float = 10.0,  # gradient clipping (global norm)
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """DQN with Stable-Baselines3's arguments and defaults; no gSDE (a greedy policy)."""
        self.init_algorithm(bound_arguments(locals()))

    pinned = NO_SDE
    pinned_hint = NO_SDE_HINT

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.target_update_interval = check_int("target_update_interval", hp["target_update_interval"], minimum=1)
        self.exploration_fraction = check_float("exploration_fraction", hp["exploration_fraction"], 0.0, 1.0,
                                                low_open=False)  # fmt: skip
        self.exploration_initial_eps = check_float("exploration_initial_eps", hp["exploration_initial_eps"], 0.0, 1.0,
                                                   low_open=False)  # fmt: skip
        self.exploration_final_eps = check_float("exploration_final_eps", hp["exploration_final_eps"], 0.0, 1.0,
                                                 low_open=False)  # fmt: skip
        self.max_grad_norm = check_float("max_grad_norm", hp["max_grad_norm"], 0.0, math.inf)
        # SB3 starts at 0.0 and sets the rate after the first env step; starting at the
        # schedule's first value also makes an untrained model's stochastic predict explore.
        self.exploration = Exploration(rate=self.exploration_initial_eps)

    # SB3's names of the exploration state (the schedule changes it every env step) and of the policy's networks.
    exploration_rate = delegated("exploration.rate", "epsilon of the epsilon-greedy policy now")
    _n_calls = delegated("exploration.n_calls", "on_env_step calls (vector-env steps)", writable=False)
    q_net = delegated("policy.q_net", "The policy's Q-network (SB3's alias).", writable=False)
    q_net_target = delegated("policy.q_net_target", "The policy's target Q-network.", writable=False)

    def configure_optimizers(self):
        return self.policy_optimizer(self.q_net.parameters())

    # ------------------------------------------------------------------ acting
    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Greedy actions, or epsilon-greedy ones when not deterministic.

        One coin for the whole batch (all envs act randomly together), as SB3's ``DQN.predict``.
        """
        greedy = compiled(self, self.q_net, key="act", acting=True)(obs).argmax(dim=1)  # epsilon (a float) stays eager
        if not deterministic and self.exploration_rate > 0.0:
            n = greedy.shape[0]
            explore = torch.rand((), device=greedy.device) < self.exploration_rate
            random = torch.randint(0, self.policy.n_actions, (n,), device=greedy.device)
            greedy = torch.where(explore, random, greedy)
        return greedy + self.policy.action_start

    # ------------------------------------------------------------------ per-step schedule
    def setup_networks(self, env: Any) -> None:
        super().setup_networks(env)
        if env.num_envs > self.target_update_interval:  # SB3's warning, in its words, when the env is known
            warnings.warn(
                f"The number of environments used is greater than the target network update interval "
                f"(n_envs={env.num_envs} > target_update_interval={self.target_update_interval}): the target "
                f"network is updated after every vector-env step, i.e. every {env.num_envs} env steps",
                stacklevel=2,
            )

    def on_env_step(self) -> None:
        """Target-network update every ``target_update_interval // n_envs`` calls; exploration schedule."""
        exploration = self.exploration
        exploration.n_calls += 1
        if exploration.n_calls % max(self.target_update_interval // self._n_envs, 1) == 0:
            update_target(self.q_net, self.q_net_target, self.tau)  # tau = 1: an exact copy
        exploration.rate = linear_schedule(
            self.exploration_initial_eps,
            self.exploration_final_eps,
            self.exploration_fraction,
            self.progress_remaining(),
        )

    # ------------------------------------------------------------------ learning
    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """One step on :func:`q_loss` with the gradients' global norm clipped to ``max_grad_norm``."""
        self.clock.n_updates += 1
        return run_update(self, DQN.tensor_step, batch, self.discounts(batch))

    def tensor_step(self, optimizers: list, batch: ReplayBatch, discount: torch.Tensor | float) -> dict[str, torch.Tensor]:
        """The gradient step's tensor work (one compiled graph with ``compile`` on: :func:`run_update`)."""
        loss, metrics = compiled(self, q_loss)(self.policy, batch, discount)
        self.optimizer_step(optimizers[0], loss, max_grad_norm=self.max_grad_norm)
        return metrics

    # ------------------------------------------------------------------ logging and checkpoints
    def dump_logs(self) -> None:
        # float64 so the logged value is the schedule's exact float, as SB3 logs it.
        self.record("rollout/exploration_rate", torch.tensor(self.exploration_rate, dtype=torch.float64))
        super().dump_logs()

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["rl_state"].update({"n_calls": self._n_calls, "exploration_rate": self.exploration_rate})

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        state = checkpoint.get("rl_state", {})
        self.exploration.rate = state.get("exploration_rate", self.exploration.rate)
        self.exploration.n_calls = state.get("n_calls", 0)
