"""What every policy module shares: the spaces, train/eval modes and the checks of ``policy_kwargs``."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.extractors import CombinedExtractor, FeaturesExtractorError, FlattenExtractor, NatureCNN
from lit_rl.nets.preprocessing import channels_first_space
from lit_rl.nets.target import ModuleT, make_target
from lit_rl.policies.features import check_observation_space, extractor_name, observation_dim, resolve_extractor_class
from lit_rl.policies.sb3_methods import SB3PolicyMethods
from lit_rl.utils.declared import REQUIRED, Hyperparameters


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


def check_policy_kwargs(policy_class: type[BasePolicy], policy_kwargs: dict[str, Any]) -> None:
    """Raise a ValueError naming unknown ``policy_kwargs`` keys (the policy's signature lists the allowed ones)."""
    allowed = set(inspect.signature(policy_class).parameters) - {"observation_space", "action_space", "lr_schedule"}
    unknown = set(policy_kwargs) - allowed
    if unknown:
        raise ValueError(f"policy_kwargs has unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")
    policy_class.check_kwargs(policy_kwargs)


def frozen_copy(module: ModuleT) -> ModuleT:
    """A target network: :func:`make_target`, every parameter frozen (a copied shared extractor included)."""
    target = make_target(module)
    for param in target.parameters():
        param.requires_grad_(False)
    return target


def set_bn_training_mode(module: nn.Module, mode: bool) -> None:
    """Train (update running statistics) or evaluate the BatchRenorm layers of ``module`` only."""
    # The layers are found once: Dynamo breaks the whole-step graph at a walk over modules (modules(), train())
    # whose mode it has just set, and an attribute set is all that layer.train(mode) does to these leaves.
    layers = module.__dict__.get("_batch_renorm_layers")
    if layers is None:
        layers = module.__dict__["_batch_renorm_layers"] = tuple(m for m in module.modules() if isinstance(m, BatchRenorm))
    for layer in layers:
        layer.training = mode


class BasePolicy(SB3PolicyMethods, Hyperparameters, nn.Module):
    """The networks of one algorithm: forward passes, sampling, train/eval modes.

    Subclasses declare their arguments in ``hyperparameters`` (the signature) and build the
    networks in :meth:`build`. ``lr_schedule``, ``optimizer_class`` and ``optimizer_kwargs`` are
    kept for the algorithm, which builds the optimizers (Lightning's ``configure_optimizers``).

    Observations: Box (images too), Discrete, MultiDiscrete, MultiBinary, and Dict of these
    (as the buffer stores them: one float vector of the keys). Each network preprocesses them
    as SB3 does and runs its own ``features_extractor``, built as
    ``features_extractor_class(channels-first observation space, **features_extractor_kwargs)``
    (None: ``FlattenExtractor``, ``CombinedExtractor`` for Dict spaces; SB3's classes work too).
    """

    hyperparameters = {
        "observation_space": REQUIRED,
        "action_space": REQUIRED,
        "lr_schedule": None,
        "features_extractor_class": None,  # None: FlattenExtractor (CombinedExtractor for Dict spaces)
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
        observation_space, action_space = hp["observation_space"], hp["action_space"]
        check_observation_space(observation_space, type(self).__name__)
        self.observation_space, self.action_space = observation_space, action_space
        self.lr_schedule, self.normalize_images = hp["lr_schedule"], hp["normalize_images"]
        self.optimizer_class, self.optimizer_kwargs = hp["optimizer_class"], dict(hp["optimizer_kwargs"] or {})
        self.share_features_extractor = hp["share_features_extractor"]
        self.features_space = channels_first_space(observation_space)  # what the extractors see
        extractor_class = resolve_extractor_class(hp["features_extractor_class"])
        if extractor_class is None:
            extractor_class = CombinedExtractor if isinstance(observation_space, spaces.Dict) else FlattenExtractor
        self.features_extractor_class = extractor_class
        self.features_extractor_kwargs = dict(hp["features_extractor_kwargs"] or {})
        if not self.normalize_images and extractor_name(extractor_class) in ("NatureCNN", "CombinedExtractor"):
            self.features_extractor_kwargs["normalized_image"] = True  # SB3: no uint8/bounds check then
        self.obs_dim = observation_dim(observation_space)
        discrete = isinstance(action_space, spaces.Discrete)
        self.action_dim = int(action_space.n) if discrete else int(np.prod(action_space.shape))
        self.build(hp)

    def build(self, hp: dict[str, Any]) -> None:
        """Create the networks from the bound arguments."""
        raise NotImplementedError

    @property
    def uses_nature_cnn(self) -> bool:
        """Whether the extractor is (lit_rl's or SB3's) NatureCNN: SB3 then changes some default ``net_arch``."""
        return extractor_name(self.features_extractor_class) == "NatureCNN"

    def make_features_extractor(self) -> nn.Module:
        """A new features extractor; a ValueError names ``features_extractor_class`` when it is not one."""
        cls, kwargs = self.features_extractor_class, self.features_extractor_kwargs
        try:
            extractor = cls(self.features_space, **kwargs)
        except (TypeError, ValueError, AssertionError) as err:
            raise FeaturesExtractorError(
                f"policy_kwargs.features_extractor_class={cls.__name__} with features_extractor_kwargs={kwargs} "
                f"cannot be built for observation space {self.features_space}: {err}"
            ) from err
        dim = getattr(extractor, "features_dim", None)
        if not isinstance(extractor, nn.Module) or isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise FeaturesExtractorError(
                f"policy_kwargs.features_extractor_class={cls.__name__} built {type(extractor).__name__} with "
                f"features_dim={dim!r}; allowed: an nn.Module with a positive integer features_dim"
            )
        return extractor

    def with_features_extractor(self, net_kwargs: dict[str, Any], features_extractor: nn.Module | None) -> dict[str, Any]:
        """``net_kwargs`` plus a features extractor: the one given (shared) or a new one (SB3's rule)."""
        extractor = features_extractor if features_extractor is not None else self.make_features_extractor()
        return {**net_kwargs, "features_extractor": extractor, "features_dim": extractor.features_dim,
                "normalize_images": self.normalize_images}  # fmt: skip

    @classmethod
    def check_kwargs(cls, policy_kwargs: dict[str, Any]) -> None:
        """Raise a ValueError for a bad value in ``policy_kwargs`` (before any env exists)."""
        split_net_arch(policy_kwargs.get("net_arch"), cls.default_net_arch)
        check_extractor_kwargs(policy_kwargs)

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Actions for a batch of observations (as the buffer stores them), in the algorithm's scale ([-1, 1] for Box)."""
        return self._predict(obs, deterministic)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        raise NotImplementedError

    def reset_noise(self, batch_size: int = 1) -> None:
        """Sample new gSDE exploration matrices (policies without gSDE raise)."""
        raise ValueError(f"{type(self).__name__}.reset_noise needs a gSDE policy (use_sde=True)")


def check_extractor_kwargs(policy_kwargs: dict[str, Any]) -> None:
    """Types of ``features_extractor_class``, ``features_extractor_kwargs``, ``share_features_extractor``, ``normalize_images``."""
    from lit_rl.utils.checks import check_bool

    resolve_extractor_class(policy_kwargs.get("features_extractor_class"))
    kwargs = policy_kwargs.get("features_extractor_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"policy_kwargs.features_extractor_kwargs={kwargs!r} must be a dict or None")
    for key in ("share_features_extractor", "normalize_images"):
        if key in policy_kwargs:
            check_bool(f"policy_kwargs.{key}", policy_kwargs[key])


_CNN_POLICIES: dict[type, type] = {}


def cnn_policy_class(policy_class: type[BasePolicy]) -> type[BasePolicy]:
    """SB3's ``CnnPolicy`` of an algorithm: its policy class with :class:`NatureCNN` as the default extractor."""
    if policy_class not in _CNN_POLICIES:
        _CNN_POLICIES[policy_class] = type(
            f"Cnn{policy_class.__name__}",
            (policy_class,),
            {
                "__module__": policy_class.__module__,
                "__doc__": f"{policy_class.__name__} with NatureCNN features extractors (SB3's CnnPolicy).",
                "hyperparameters": {"features_extractor_class": NatureCNN},
            },
        )
    return _CNN_POLICIES[policy_class]


def check_counts_and_switches(policy_kwargs: dict[str, Any], counts: tuple[str, ...], switches: tuple[str, ...]) -> None:
    """``policy_kwargs`` keys among ``counts`` must be integers >= 1, those among ``switches`` bools."""
    from lit_rl.utils.checks import check_bool, check_int

    for key in counts:
        if key in policy_kwargs:
            check_int(f"policy_kwargs.{key}", policy_kwargs[key], minimum=1)
    for key in switches:
        if key in policy_kwargs:
            check_bool(f"policy_kwargs.{key}", policy_kwargs[key])


def check_actor_critic_kwargs(policy_kwargs: dict[str, Any]) -> None:
    """Value checks shared by the actor-critic policies: ``n_critics``, the gSDE and extractor options."""
    from lit_rl.utils.checks import check_float

    check_extractor_kwargs(policy_kwargs)
    check_counts_and_switches(policy_kwargs, counts=("n_critics",), switches=("full_std", "use_expln"))
    if "log_std_init" in policy_kwargs:
        check_float("policy_kwargs.log_std_init", policy_kwargs["log_std_init"], -np.inf, np.inf)
    if "clip_mean" in policy_kwargs:
        check_float("policy_kwargs.clip_mean", policy_kwargs["clip_mean"], 0.0, np.inf, low_open=False)
    if "net" in policy_kwargs:
        from lit_rl.nets.net_options import net_options

        net_options(policy_kwargs["net"])
    split_net_arch(policy_kwargs.get("net_arch"), {"pi": [], "qf": []})


def pick(hp: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """The bound arguments among ``names`` (what a policy passes on to one of its networks)."""
    return {k: v for k, v in hp.items() if k in names}
