"""DQN (Mnih et al., 2015) with Stable-Baselines3 2.x's defaults and update rule."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces

from lit_rl.algorithms.gsde import reject_sde_arguments
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.checks import check_float, check_int
from lit_rl.nets.mlp import activation_class, build_mlp
from lit_rl.nets.target import make_target, update_target

DEFAULT_NET_ARCH = [64, 64]


def dqn_net_arch(net_arch: Any) -> list[int]:
    """The Q-network's hidden sizes from ``net_arch``: a list, or a dict whose ``qf`` entry is used.

    The dict form lets one config (``net_arch.pi`` / ``net_arch.qf``) serve every
    algorithm; DQN has no actor and ignores ``pi``.
    """
    if net_arch is None:
        return list(DEFAULT_NET_ARCH)
    if isinstance(net_arch, (list, tuple)):
        return [int(n) for n in net_arch]
    if isinstance(net_arch, dict) and set(net_arch) <= {"pi", "qf"}:
        return [int(n) for n in net_arch.get("qf", DEFAULT_NET_ARCH)]
    raise ValueError(
        f"policy_kwargs.net_arch={net_arch!r} must be a list of layer sizes or a dict with keys 'pi' and 'qf' "
        "(DQN uses 'qf')"
    )


def linear_schedule(start: float, end: float, end_fraction: float, progress_remaining: float) -> float:
    """``start`` -> ``end`` linearly over the first ``end_fraction`` of training, then ``end`` (SB3's get_linear_fn)."""
    elapsed = 1.0 - progress_remaining
    if elapsed >= end_fraction:  # SB3 tests '>', which gives the same value at equality; '>=' also allows 0
        return end
    return start + elapsed * (end - start) / end_fraction


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

    def __init__(
        self,
        policy: str = "MlpPolicy",
        learning_rate: float = 1e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 32,
        tau: float = 1.0,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 4,
        gradient_steps: int = 1,
        target_update_interval: int = 10_000,
        exploration_fraction: float = 0.1,
        exploration_initial_eps: float = 1.0,
        exploration_final_eps: float = 0.05,
        max_grad_norm: float = 10.0,
        **kwargs: Any,
    ) -> None:
        reject_sde_arguments(type(self).__name__, kwargs)
        super().__init__(
            policy=policy,
            learning_rate=learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            **kwargs,
        )
        self.target_update_interval = check_int("target_update_interval", target_update_interval, minimum=1)
        self.exploration_fraction = check_float("exploration_fraction", exploration_fraction, 0.0, 1.0, low_open=False)
        self.exploration_initial_eps = check_float(
            "exploration_initial_eps", exploration_initial_eps, 0.0, 1.0, low_open=False
        )
        self.exploration_final_eps = check_float(
            "exploration_final_eps", exploration_final_eps, 0.0, 1.0, low_open=False
        )
        self.max_grad_norm = check_float("max_grad_norm", max_grad_norm, 0.0, math.inf)
        known = {"net_arch", "activation_fn"}
        unknown = set(self.policy_kwargs) - known
        if unknown:
            raise ValueError(f"policy_kwargs has unknown keys {sorted(unknown)}; allowed: {sorted(known)}")
        self.net_arch = dqn_net_arch(self.policy_kwargs.get("net_arch"))
        # SB3 starts at 0.0 and sets the rate after the first env step; starting at the
        # schedule's first value also makes an untrained model's stochastic predict explore.
        self.exploration_rate = self.exploration_initial_eps
        self._n_calls = 0  # on_env_step calls (vector-env steps), never reset: SB3's _n_calls
        self._n_envs = 1  # replaced by the env's count in on_fit_start
        self.save_hyperparameters(ignore=["replay_buffer_class"])

    # ------------------------------------------------------------------ networks
    def build_networks(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        obs_dim = int(np.prod(observation_space.shape))
        self.n_actions = int(action_space.n)
        self.action_start = int(action_space.start)  # Discrete(n, start=k): env actions are k .. k+n-1
        activation = activation_class(self.policy_kwargs.get("activation_fn", "relu"))
        self.q_net = build_mlp(obs_dim, self.net_arch, self.n_actions, activation, batch_norm=None)
        self.q_net_target = make_target(self.q_net)

    def configure_optimizers(self):
        return torch.optim.Adam(self.q_net.parameters(), lr=self.initial_learning_rate())

    # ------------------------------------------------------------------ acting
    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Greedy actions, or epsilon-greedy ones when not deterministic.

        One coin for the whole batch (all envs act randomly together), as SB3's ``DQN.predict``.
        """
        greedy = self.q_net(obs).argmax(dim=1)
        if not deterministic and self.exploration_rate > 0.0:
            n = greedy.shape[0]
            explore = torch.rand((), device=greedy.device) < self.exploration_rate
            random = torch.randint(0, self.n_actions, (n,), device=greedy.device)
            greedy = torch.where(explore, random, greedy)
        return greedy + self.action_start

    # ------------------------------------------------------------------ per-step schedule
    def on_fit_start(self) -> None:
        super().on_fit_start()
        if self._n_envs > self.target_update_interval:
            warnings.warn(
                f"target_update_interval={self.target_update_interval} is smaller than n_envs={self._n_envs}: "
                "the target network is updated after every vector-env step, i.e. every "
                f"{self._n_envs} env steps",
                stacklevel=2,
            )

    def on_env_step(self) -> None:
        """Target-network update every ``target_update_interval // n_envs`` calls; exploration schedule."""
        self._n_calls += 1
        if self._n_calls % max(self.target_update_interval // self._n_envs, 1) == 0:
            update_target(self.q_net, self.q_net_target, self.tau)  # tau = 1: an exact copy
        self.exploration_rate = linear_schedule(
            self.exploration_initial_eps,
            self.exploration_final_eps,
            self.exploration_fraction,
            self.progress_remaining(),
        )

    # ------------------------------------------------------------------ learning
    def update(self, batch: ReplayBatch) -> None:
        optimizer = self.optimizers()
        self._n_updates += 1
        with torch.no_grad():
            next_q = self.q_net_target(batch.next_observations).max(dim=1).values
            target = batch.rewards + (1.0 - batch.terminated) * self.discounts(batch) * next_q
        action_index = (batch.actions.reshape(-1, 1) - self.action_start).long()
        q = self.q_net(batch.observations).gather(1, action_index).squeeze(1)
        loss = F.smooth_l1_loss(q, target)
        optimizer.zero_grad(set_to_none=True)
        self.manual_backward(loss)
        # Plain torch clipping: correct for 32-bit and bf16 runs; a GradScaler (16-mixed) would need unscaling first.
        torch.nn.utils.clip_grad_norm_(self.q_net.parameters(), self.max_grad_norm)
        optimizer.step()
        self.record("train/loss", loss)

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
        self._n_calls = state.get("n_calls", 0)
        self.exploration_rate = state.get("exploration_rate", self.exploration_rate)
