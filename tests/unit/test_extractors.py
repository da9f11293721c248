"""features_extractor_class / features_extractor_kwargs / share_features_extractor, side by side with SB3."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common import torch_layers as sb3_layers
from stable_baselines3.sac.policies import SACPolicy as SB3SACPolicy
from stable_baselines3.td3.policies import TD3Policy as SB3TD3Policy
from torch import nn

from lit_rl import SAC, TD3, CrossQ
from lit_rl.nets import extractors
from lit_rl.policies import CrossQPolicy, SACPolicy, TD3Policy

OBS = spaces.Box(-1, 1, (6,), np.float32)
ACT = spaces.Box(-1, 1, (2,), np.float32)
IMAGE = spaces.Box(0, 255, (1, 36, 36), np.uint8)


class SB3UserExtractor(sb3_layers.BaseFeaturesExtractor):
    """A user's extractor written against SB3's base class."""

    def __init__(self, observation_space: spaces.Box, features_dim: int = 5) -> None:
        super().__init__(observation_space, features_dim)
        self.net = nn.Sequential(nn.Linear(int(np.prod(observation_space.shape)), features_dim), nn.Tanh())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations.flatten(1))


class LitUserExtractor(extractors.BaseFeaturesExtractor):
    """The same against lit_rl's base class."""

    def __init__(self, observation_space: spaces.Box, features_dim: int = 5) -> None:
        super().__init__(observation_space, features_dim)
        self.net = nn.Sequential(nn.Linear(int(np.prod(observation_space.shape)), features_dim), nn.Tanh())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations.flatten(1))


class NoFeaturesDim(nn.Module):
    def __init__(self, observation_space: spaces.Space) -> None:
        super().__init__()


@pytest.mark.parametrize(
    ("name", "space", "kwargs"),
    [
        ("FlattenExtractor", spaces.Box(-1, 1, (3, 4), np.float32), {}),
        ("NatureCNN", IMAGE, {"features_dim": 32}),
        ("CombinedExtractor", spaces.Dict({"img": IMAGE, "vec": OBS}), {"cnn_output_dim": 16}),
    ],
)
def test_extractors_equal_sb3(name, space, kwargs):
    """Same parameter names and shapes as SB3's class; with SB3's weights, the same features."""
    ours, theirs = getattr(extractors, name)(space, **kwargs), getattr(sb3_layers, name)(space, **kwargs)
    assert ours.features_dim == theirs.features_dim
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in theirs.state_dict().items()}
    ours.load_state_dict(theirs.state_dict())
    space.seed(0)
    raw = [space.sample() for _ in range(4)]
    if isinstance(space, spaces.Dict):
        x = {k: torch.as_tensor(np.stack([r[k] for r in raw])).float() for k in space.spaces}
    else:
        x = torch.as_tensor(np.stack(raw)).float()
    assert torch.allclose(ours(x), theirs(x))


def test_nature_cnn_refuses_vectors_naming_the_fix():
    with pytest.raises(ValueError, match="image space .*normalize_images=False"):
        extractors.NatureCNN(OBS)
    floats = spaces.Box(-10, 10, (1, 36, 36), np.float32)  # e.g. VecNormalize'd frames
    with pytest.raises(AssertionError, match="features_extractor_class=NatureCNN"):  # what SB3 users catch
        SACPolicy(floats, ACT, features_extractor_class="NatureCNN")


@pytest.mark.parametrize(
    "extractor_class", [SB3UserExtractor, LitUserExtractor, sb3_layers.FlattenExtractor, "FlattenExtractor"]
)
def test_extractor_classes_are_accepted(extractor_class, tmp_path):
    env = gym.make("Pendulum-v1")
    kwargs = {"features_dim": 7} if extractor_class in (SB3UserExtractor, LitUserExtractor) else {}
    model = SAC("MlpPolicy", env, learning_starts=50, batch_size=16, seed=0, device="cpu",
                policy_kwargs={"net_arch": [16], "features_extractor_class": extractor_class,
                               "features_extractor_kwargs": kwargs})  # fmt: skip
    actor, critic = model.policy.actor, model.policy.critic
    dim = kwargs.get("features_dim", 3)
    assert actor.features_extractor.features_dim == critic.features_extractor.features_dim == dim
    assert actor.latent_pi[0].in_features == dim
    assert actor.features_extractor is not critic.features_extractor  # SAC's default: one per network
    model.learn(80)
    obs = np.random.default_rng(0).uniform(-1, 1, (4, 3)).astype(np.float32)
    model.save(tmp_path / "m")
    loaded = SAC.load(tmp_path / "m", device="cpu")
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])


def test_flat_observations_pass_through_the_flatten():
    """MlpPolicy on a flat Box: the observation tensor itself reaches the MLP (no copy, no extractor call)."""
    policy = CrossQPolicy(OBS, ACT, net_arch=[8])
    obs = torch.randn(4, 6)
    for net in (policy.actor, policy.critic):
        assert isinstance(net.features_extractor, extractors.FlattenExtractor) and net.features_are_observations
        assert net.extract_features(obs) is obs


def _build(policy_class, share: bool):
    return policy_class(OBS, ACT, lambda _: 1e-3, net_arch=[8], features_extractor_class=LitUserExtractor,
                        share_features_extractor=share)  # fmt: skip


def _sb3(sb3_class, share: bool):
    return sb3_class(OBS, ACT, lambda _: 1e-3, net_arch=[8], features_extractor_class=SB3UserExtractor,
                     share_features_extractor=share)  # fmt: skip


@pytest.mark.parametrize(
    ("ours", "theirs"), [(SACPolicy, SB3SACPolicy), (TD3Policy, SB3TD3Policy), (CrossQPolicy, None)]
)
@pytest.mark.parametrize("share", [True, False])
def test_share_features_extractor_as_sb3(ours, theirs, share):
    """Shared: one extractor, the critic's optimizer and losses leave it to the actor; else one per network."""
    policy = _build(ours, share)
    actor, critic = policy.actor, policy.critic
    assert (critic.features_extractor is actor.features_extractor) == share
    extractor_params = {id(p) for p in critic.features_extractor.parameters()}
    critic_ids = {id(p) for p in policy.critic_parameters()}
    # SAC and CrossQ leave a shared extractor out of the critic's optimizer; SB3's TD3 keeps it in (it gets no
    # gradient from the critic loss, so the optimizer skips it).
    assert (extractor_params <= critic_ids) == (not share or ours is TD3Policy)
    assert {id(p) for p in actor.features_extractor.parameters()} <= {id(p) for p in policy.actor_parameters()}
    if theirs is not None:  # SB3's optimizers: the actor's holds the same tensors, the critic's the extractor alike
        ref = _sb3(theirs, share)
        sb3_actor = ref.actor.optimizer.param_groups[0]["params"]
        assert [p.shape for p in policy.actor_parameters()] == [p.shape for p in sb3_actor]
        sb3_critic = {id(p) for p in ref.critic.optimizer.param_groups[0]["params"]}
        sb3_extractor = {id(p) for p in ref.critic.features_extractor.parameters()}
        assert (sb3_extractor <= sb3_critic) == (extractor_params <= critic_ids)

    obs, actions = torch.randn(5, 6), torch.rand(5, 2) * 2 - 1
    critic.q_values(obs, actions).sum().backward()
    got_grad = [p.grad is not None for p in critic.features_extractor.parameters()]
    assert all(got_grad) == (not share) and any(got_grad) == (not share)
    policy.zero_grad(set_to_none=True)
    critic.requires_grad_(False)  # the actor losses freeze the critic: a shared extractor stays trainable
    assert all(p.requires_grad for p in actor.features_extractor.parameters())
    assert not any(p.requires_grad for p in critic.own_parameters())
    critic.requires_grad_(True)
    targets = [getattr(policy, name) for name in ("critic_target", "actor_target") if hasattr(policy, name)]
    assert all(not p.requires_grad for t in targets for p in t.parameters())
    if ours is TD3Policy and share:  # SB3: the target critic uses the target actor's extractor
        assert policy.critic_target.features_extractor is policy.actor_target.features_extractor


@pytest.mark.parametrize("algo", [SAC, TD3, CrossQ])
def test_shared_extractor_is_trained_by_the_actor_loss(algo):
    model = algo("MlpPolicy", "Pendulum-v1", learning_starts=20, batch_size=8, seed=0, device="cpu",
                 policy_kwargs={"net_arch": [8], "features_extractor_class": LitUserExtractor,
                                "share_features_extractor": True})  # fmt: skip
    extractor = model.policy.actor.features_extractor
    before = [p.detach().clone() for p in extractor.parameters()]
    model.learn(40)
    assert all(not torch.equal(a, b) for a, b in zip(before, extractor.parameters(), strict=True))


@pytest.mark.parametrize(
    ("policy_kwargs", "match"),
    [
        (
            {"features_extractor_class": "NoSuchExtractor"},
            r"features_extractor_class='NoSuchExtractor' cannot be found",
        ),
        ({"features_extractor_class": 3}, r"features_extractor_class=3 is not a features extractor; allowed"),
        ({"features_extractor_kwargs": [1]}, r"features_extractor_kwargs=\[1\] must be a dict"),
        ({"share_features_extractor": "yes"}, r"share_features_extractor"),
    ],
)
def test_bad_extractor_settings_fail_before_any_env(policy_kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        SAC("MlpPolicy", policy_kwargs=policy_kwargs)


def test_extractor_without_features_dim_is_named():
    with pytest.raises(
        ValueError, match=r"features_extractor_class=NoFeaturesDim built NoFeaturesDim with features_dim=None"
    ):
        SACPolicy(OBS, ACT, features_extractor_class=NoFeaturesDim)
    with pytest.raises(
        ValueError, match=r"features_extractor_class=NatureCNN .* cannot be built for observation space"
    ):
        SACPolicy(OBS, ACT, features_extractor_class="NatureCNN")


def test_normalize_images_false_disables_the_image_checks():
    """SB3's rule: normalize_images=False passes normalized_image=True to NatureCNN / CombinedExtractor."""
    floats = spaces.Box(0, 1, (1, 36, 36), np.float32)
    policy = SACPolicy(floats, ACT, net_arch=[8], features_extractor_class=extractors.NatureCNN, normalize_images=False)
    obs = torch.rand(2, 1, 36, 36)
    assert torch.equal(policy.actor.extract_features(obs), policy.actor.features_extractor(obs))
