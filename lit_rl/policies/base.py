"""What every policy module shares: the spaces, train/eval modes and the checks of ``policy_kwargs``."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from lit_rl.declared import REQUIRED, Hyperparameters
from lit_rl.nets.batch_renorm import BatchRenorm

# The only feature extractor: observations are flat vectors (Dict spaces are flattened before the policy).
FLATTEN_EXTRACTORS = (None, "FlattenExtractor", nn.Flatten)


def split_net_arch(net_arch: Any, default: dict[str, list[int]]) -> tuple[list[int], list[int]]:
    """``net_arch`` as SB3 takes it (a list for both, or ``{"pi": [...], "qf": [...]}``) -> (pi, qf)."""
    if net_arch is None:
        return list(default["pi"]), list(default["qf"])
    if isinstance(net_arch, (list, tuple)):
        return [int(n) for n in net_arch], [int(n) for n in net_arch]
    if isinstance(net_arch, dict) and set(net_arch) <= {"pi", "qf"}:
        return list(net_arch.get("pi", default["pi"])), list(net_arch.get("qf", default["qf"]))
    raise ValueError(
        f"policy_kwargs.net_arch={net_arch!r} must be a list of layer sizes or a dict with keys 'pi' and 'qf'"
    )


def check_policy_kwargs(policy_class: type, policy_kwargs: dict[str, Any]) -> None:
    """Raise a ValueError naming unknown ``policy_kwargs`` keys (the policy's signature lists the allowed ones)."""
    allowed = set(inspect.signature(policy_class).parameters) - {"observation_space", "action_space", "lr_schedule"}
    unknown = set(policy_kwargs) - allowed
    if unknown:
        raise ValueError(f"policy_kwargs has unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")
    policy_class.check_kwargs(policy_kwargs)


def set_bn_training_mode(module: nn.Module, mode: bool) -> None:
    """Train (update running statistics) or evaluate the BatchRenorm layers of ``module`` only."""
    for layer in module.modules():
        if isinstance(layer, BatchRenorm):
            layer.train(mode)


class BasePolicy(Hyperparameters, nn.Module):
    """The networks of one algorithm for flat Box observations: forward passes, sampling, train/eval modes.

    Subclasses declare their arguments in ``hyperparameters`` (the signature) and build the
    networks in :meth:`build`. ``lr_schedule``, ``optimizer_class`` and ``optimizer_kwargs`` are
    kept for the algorithm, which builds the optimizers (Lightning's ``configure_optimizers``).
    """

    hyperparameters = {
        "observation_space": REQUIRED,
        "action_space": REQUIRED,
        "lr_schedule": None,
        "features_extractor_class": None,  # only a flatten: observations reach the policy flat
        "features_extractor_kwargs": None,
        "normalize_images": True,
        "optimizer_class": torch.optim.Adam,
        "optimizer_kwargs": None,
        "share_features_extractor": False,
    }
    default_net_arch: dict[str, list[int]] = {"pi": [256, 256], "qf": [256, 256]}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        hp = self.bind_hyperparameters(args, kwargs)
        if hp["features_extractor_class"] not in FLATTEN_EXTRACTORS or hp["features_extractor_kwargs"]:
            raise ValueError(
                f"features_extractor_class={hp['features_extractor_class']!r} is not available; allowed: "
                "FlattenExtractor (observations are flat vectors; Dict observations are flattened key by key)"
            )
        observation_space, action_space = hp["observation_space"], hp["action_space"]
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(f"{type(self).__name__} needs a flat Box observation space; got {observation_space}")
        self.observation_space, self.action_space = observation_space, action_space
        self.lr_schedule, self.normalize_images = hp["lr_schedule"], hp["normalize_images"]
        self.optimizer_class, self.optimizer_kwargs = hp["optimizer_class"], dict(hp["optimizer_kwargs"] or {})
        self.share_features_extractor = hp["share_features_extractor"]
        self.obs_dim = int(np.prod(observation_space.shape))
        discrete = isinstance(action_space, spaces.Discrete)
        self.action_dim = int(action_space.n) if discrete else int(np.prod(action_space.shape))
        self.build(hp)

    def build(self, hp: dict[str, Any]) -> None:
        """Create the networks from the bound arguments."""
        raise NotImplementedError

    @classmethod
    def check_kwargs(cls, policy_kwargs: dict[str, Any]) -> None:
        """Raise a ValueError for a bad value in ``policy_kwargs`` (before any env exists)."""
        split_net_arch(policy_kwargs.get("net_arch"), cls.default_net_arch)

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Actions for a batch of flat observations, in the algorithm's scale ([-1, 1] for Box)."""
        return self._predict(obs, deterministic)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        raise NotImplementedError

    def set_training_mode(self, mode: bool) -> None:
        """Put every network in training (True) or evaluation mode (BatchRenorm statistics, dropout)."""
        self.train(mode)

    def reset_noise(self, batch_size: int = 1) -> None:
        """Sample new gSDE exploration matrices (policies without gSDE raise)."""
        raise ValueError(f"{type(self).__name__}.reset_noise needs a gSDE policy (use_sde=True)")


def check_actor_critic_kwargs(policy_kwargs: dict[str, Any]) -> None:
    """Value checks shared by the actor-critic policies: ``n_critics`` and the gSDE options."""
    from lit_rl.checks import check_bool, check_float, check_int

    if "n_critics" in policy_kwargs:
        check_int("policy_kwargs.n_critics", policy_kwargs["n_critics"], minimum=1)
    for key in ("full_std", "use_expln"):
        if key in policy_kwargs:
            check_bool(f"policy_kwargs.{key}", policy_kwargs[key])
    if "log_std_init" in policy_kwargs:
        check_float("policy_kwargs.log_std_init", policy_kwargs["log_std_init"], -np.inf, np.inf)
    if "clip_mean" in policy_kwargs:
        check_float("policy_kwargs.clip_mean", policy_kwargs["clip_mean"], 0.0, np.inf, low_open=False)
    split_net_arch(policy_kwargs.get("net_arch"), {"pi": [], "qf": []})


def pick(hp: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """The bound arguments among ``names`` (what a policy passes on to one of its networks)."""
    return {k: v for k, v in hp.items() if k in names}
