"""What DQN and QR-DQN share besides their loss: epsilon-greedy acting with SB3's linear schedule, target-network
updates counted in env steps, one clipped optimizer step per gradient step, and the exploration state in model
files and checkpoints."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.compiled import compiled, run_update
from lit_rl.core.hyperparameters import NO_SDE, NO_SDE_HINT
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.core.sb3_api import delegated
from lit_rl.nets.noise_source import this_threads_generator
from lit_rl.nets.target import update_target
from lit_rl.utils.checks import check_float, check_int


def linear_schedule(start: float, end: float, end_fraction: float, progress_remaining: float) -> float:
    """``start`` -> ``end`` linearly over the first ``end_fraction`` of training, then ``end`` (SB3's get_linear_fn)."""
    elapsed = 1.0 - progress_remaining
    if elapsed >= end_fraction:  # SB3 tests '>', which gives the same value at equality; '>=' also allows 0
        return end
    return start + elapsed * (end - start) / end_fraction


@dataclass
class Exploration:
    """The epsilon-greedy state: the rate now and the vector-env steps seen (SB3's ``_n_calls``, never reset)."""

    rate: float
    n_calls: int = 0


class QLearning(OffPolicyAlgorithm):
    """Base of the Q-learning algorithms over discrete actions (DQN, QR-DQN), as Stable-Baselines3 runs them.

    The policy holds ``q_net`` and its frozen copy ``q_net_target``, and gives ``q_values(obs)``
    (batch, n_actions) for the greedy action. A subclass declares its hyperparameters (``__init__``),
    its policy class and its :meth:`loss`. The target network follows ``q_net`` by Polyak ``tau``
    every ``max(target_update_interval // n_envs, 1)`` calls of :meth:`on_env_step` (vector-env steps),
    as SB3 counts them; epsilon decays linearly from ``exploration_initial_eps`` to
    ``exploration_final_eps`` over the first ``exploration_fraction`` of the run; gradients are clipped
    to a global norm of ``max_grad_norm`` (None: not clipped).
    """

    supported_action_spaces = (spaces.Discrete,)
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
        max_grad_norm = hp["max_grad_norm"]
        self.max_grad_norm = (
            None if max_grad_norm is None else check_float("max_grad_norm", max_grad_norm, 0.0, math.inf)
        )
        # SB3 starts at 0.0 and sets the rate after the first env step; starting at the
        # schedule's first value also makes an untrained model's stochastic predict explore.
        self.exploration = Exploration(rate=self.exploration_initial_eps)

    # SB3's names of the exploration state (the schedule changes it every env step) and of the policy's networks.
    exploration_rate = delegated("exploration.rate", "epsilon of the epsilon-greedy policy now")
    _n_calls = delegated("exploration.n_calls", "on_env_step calls (vector-env steps)", writable=False)
    q_net = delegated("policy.q_net", "The policy's Q-network (SB3's alias).", writable=False)
    q_net_target = delegated("policy.q_net_target", "The policy's target Q-network.", writable=False)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.policy_optimizer(self.q_net.parameters())

    # ------------------------------------------------------------------ acting
    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Greedy actions, or epsilon-greedy ones when not deterministic.

        One coin for the whole batch (all envs act randomly together), as SB3's ``DQN.predict``.
        """
        q_values = compiled(self, self.policy.q_values, key="act", acting=True)(obs)
        # epsilon (a float) stays eager; a packed member draws from its own stream
        return self.epsilon_greedy(q_values.argmax(dim=1), deterministic, this_threads_generator())

    def epsilon_greedy(
        self, greedy: torch.Tensor, deterministic: bool, generator: torch.Generator | None
    ) -> torch.Tensor:
        """Env actions from greedy action indices: with probability ``exploration_rate`` (not ``deterministic``)
        uniform random ones instead, drawn from ``generator`` (None: torch's global one)."""
        if not deterministic and self.exploration_rate > 0.0:
            n = greedy.shape[0]
            explore = torch.rand((), device=greedy.device, generator=generator) < self.exploration_rate
            random = torch.randint(0, self.policy.n_actions, (n,), device=greedy.device, generator=generator)
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
    @staticmethod
    def loss(
        policy: Any, batch: ReplayBatch, discount: torch.Tensor | float
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The algorithm's loss of ``policy.q_net`` on ``batch`` and its metrics (a pure function)."""
        raise NotImplementedError

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """One step on :meth:`loss` with the gradients' global norm clipped to ``max_grad_norm``."""
        self.clock.n_updates += 1
        return run_update(self, QLearning.tensor_step, batch, self.discounts(batch))

    def tensor_step(
        self, optimizers: list, batch: ReplayBatch, discount: torch.Tensor | float
    ) -> dict[str, torch.Tensor]:
        """The gradient step's tensor work (one compiled graph with ``compile`` on: :func:`run_update`)."""
        loss, metrics = compiled(self, self.loss)(self.policy, batch, discount)
        self.optimizer_step(optimizers[0], loss, max_grad_norm=self.max_grad_norm)
        return metrics

    # ------------------------------------------------------------------ logging and checkpoints
    def dump_logs(self) -> None:
        # float64 so the logged value is the schedule's exact float, as SB3 logs it.
        self.record("rollout/exploration_rate", torch.tensor(self.exploration_rate, dtype=torch.float64))
        super().dump_logs()

    def rl_state(self, with_training_state: bool) -> dict[str, Any]:
        # SB3 saves the exploration state with the model: a loaded model goes on where it stopped.
        return {
            **super().rl_state(with_training_state),
            "n_calls": self._n_calls,
            "exploration_rate": self.exploration_rate,
        }

    def restore_counters(self, state: dict[str, Any]) -> None:
        super().restore_counters(state)
        self.exploration.rate = state.get("exploration_rate", self.exploration.rate)
        self.exploration.n_calls = state.get("n_calls", 0)
