"""Network options (``policy_kwargs.net``): shapes, gradients, what each option changes, bad values, Hydra configs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gymnasium import spaces
from hydra import compose, initialize_config_dir

from lit_rl import SAC, TD3, TQC, CrossQ
from lit_rl.launcher.config import register_configs
from lit_rl.nets.actors import DeterministicActor, SquashedGaussianActor
from lit_rl.nets.categorical import CategoricalHead
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.layer_norm import EnsembleLayerNorm
from lit_rl.nets.mlp import EnsembleLinear, build_mlp
from lit_rl.nets.net_options import NetOptions, net_options
from lit_rl.nets.network import build_network
from lit_rl.nets.simba import ResidualBlock
from lit_rl.nets.weight_norm import WeightNormEnsembleLinear
from tests.helpers import CONF
from tests.unit.test_sac_td3_update import make_batch

OBS_DIM, ACT_DIM, BATCH, N_CRITICS = 3, 2, 32, 2
OPTIONS = {
    "droq": {"dropout": 0.1, "layer_norm": True},
    "simba": {"residual": True},
    "weight_norm": {"weight_norm": True},
    "categorical": {"critic_head": "categorical", "n_bins": 21, "v_min": -10.0, "v_max": 10.0},
    "all": {"residual": True, "dropout": 0.1, "weight_norm": True, "critic_head": "categorical", "n_bins": 5},
}


def make_critic(options: dict, batch_norm: dict | None = None) -> QEnsemble:
    torch.manual_seed(0)
    return QEnsemble(OBS_DIM, ACT_DIM, [16, 16], N_CRITICS, torch.nn.ReLU, batch_norm, net_options(options))


def inputs(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, OBS_DIM, generator=g), torch.randn(BATCH, ACT_DIM, generator=g)


@pytest.mark.parametrize("name", list(OPTIONS))
@pytest.mark.parametrize("batch_norm", [None, {"warmup_steps": 10}], ids=["plain", "batchrenorm"])
def test_critic_shapes_and_per_member_gradients(name, batch_norm):
    critic = make_critic(OPTIONS[name], batch_norm)
    obs, actions = inputs()
    outputs = critic.outputs(obs, actions)
    n_bins = critic.options.n_bins
    assert outputs.shape == ((N_CRITICS, BATCH, n_bins) if critic.options.categorical else (N_CRITICS, BATCH))
    assert critic(obs, actions).shape == (N_CRITICS, BATCH)
    # Loss on member 0 only: every parameter's member-0 slice gets a finite, non-zero gradient, member 1's none.
    critic.td_loss(outputs[:1], torch.randn(BATCH)).backward()
    for pname, p in critic.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname
        assert p.grad[0].abs().sum() > 0, f"{pname}: member 0 got no gradient"
        assert p.grad[1].abs().sum() == 0, f"{pname}: member 1 got a gradient from member 0's loss"


def test_critic_layers_are_what_each_option_says():
    def kinds(name: str) -> list[type]:
        return [type(m) for m in make_critic(OPTIONS[name]).q_net.modules()]

    droq = kinds("droq")
    assert torch.nn.Dropout in droq and EnsembleLayerNorm in droq and ResidualBlock not in droq
    assert droq.count(EnsembleLinear) == 3  # Linear -> Dropout -> LayerNorm -> ReLU, twice, then the output
    assert kinds("simba").count(ResidualBlock) == 2  # one block per net_arch entry
    wn = kinds("weight_norm")
    assert wn.count(WeightNormEnsembleLinear) == 2 and wn.count(EnsembleLinear) == 1  # the output layer stays plain
    assert make_critic(OPTIONS["categorical"]).q_net[-1].weight.shape[-1] == 21


def test_default_options_build_the_default_network():
    torch.manual_seed(0)
    plain = build_mlp(5, [8, 8], 1, ensemble_size=2)
    torch.manual_seed(0)
    with_defaults = build_network(5, [8, 8], 1, ensemble_size=2, options=NetOptions())
    assert str(plain) == str(with_defaults)
    for a, b in zip(plain.state_dict().values(), with_defaults.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_member_forward_with_options_equals_forward():
    critic = make_critic(OPTIONS["simba"]).eval()
    obs, actions = inputs()
    assert torch.equal(critic.member_forward(obs, actions, 1), critic(obs, actions)[1])


def test_droq_dropout_only_in_train_mode_and_layer_norm_normalises():
    critic = make_critic({"dropout": 0.5, "layer_norm": True})
    obs, actions = inputs()
    assert not torch.equal(critic(obs, actions), critic(obs, actions))  # dropout masks differ
    critic.eval()
    assert torch.equal(critic(obs, actions), critic(obs, actions))
    x = torch.randn(N_CRITICS, BATCH, 16)
    normed = EnsembleLayerNorm(N_CRITICS, 16)(x)
    torch.testing.assert_close(normed, F.layer_norm(x, (16,)))  # identity affine at init
    assert normed.mean(-1).abs().max() < 1e-5


def test_weight_norm_starts_as_the_plain_layer_and_ignores_the_direction_scale():
    torch.manual_seed(0)
    plain = EnsembleLinear(2, 4, 3)
    torch.manual_seed(0)
    normed = WeightNormEnsembleLinear(2, 4, 3)
    x = torch.randn(2, 5, 4)
    torch.testing.assert_close(normed(x), plain(x))
    with torch.no_grad():
        normed.weight_v.mul_(7.0)  # only the direction counts
    torch.testing.assert_close(normed(x), plain(x))
    torch.testing.assert_close(normed.weight.norm(dim=1, keepdim=True), normed.weight_g)


def test_two_hot_mean_is_the_clipped_target():
    head = CategoricalHead(11, -5.0, 5.0)
    target = torch.tensor([-7.0, -5.0, -0.3, 0.0, 2.25, 5.0, 9.0])
    probs = head.two_hot(target)
    torch.testing.assert_close(probs.sum(-1), torch.ones(7))
    torch.testing.assert_close((probs * head.support).sum(-1), target.clamp(-5.0, 5.0))
    assert ((probs > 0).sum(-1) <= 2).all()


def test_categorical_loss_is_soft_cross_entropy_and_its_expectation_learns_the_target():
    head = CategoricalHead(21, -10.0, 10.0)
    generator = torch.Generator().manual_seed(0)  # the test's draw, not whatever earlier tests left in the global RNG
    logits = torch.randn(N_CRITICS, BATCH, 21, generator=generator).requires_grad_()
    target = (torch.randn(BATCH, generator=generator) * 3).clamp(-9.0, 9.0)  # inside the support: reachable
    expected = sum(F.cross_entropy(logits[i], head.two_hot(target)) for i in range(N_CRITICS))
    torch.testing.assert_close(head.loss(logits, target), expected)
    opt = torch.optim.Adam([logits], lr=0.1)
    for _ in range(600):
        opt.zero_grad()
        head.loss(logits, target).backward()
        opt.step()
    torch.testing.assert_close(head.expectation(logits.detach()), target.expand(N_CRITICS, -1), atol=0.05, rtol=0)


@pytest.mark.parametrize("kind", ["squashed", "deterministic"])
def test_residual_actor_shapes_and_gradients(kind):
    torch.manual_seed(0)
    options = NetOptions(residual=True)
    if kind == "squashed":
        actor = SquashedGaussianActor(OBS_DIM, ACT_DIM, [16, 16], options=options)
        trunk = actor.latent_pi
        actions, log_prob = actor.action_log_prob(inputs()[0])
        assert actions.shape == (BATCH, ACT_DIM) and log_prob.shape == (BATCH,)
        loss = (actions.sum(-1) + log_prob).mean()
    else:
        actor = DeterministicActor(OBS_DIM, ACT_DIM, [16, 16], options=options)
        trunk = actor.mu
        actions = actor(inputs()[0])
        assert actions.shape == (BATCH, ACT_DIM) and actions.abs().max() <= 1
        loss = actions.sum()
    assert sum(isinstance(m, ResidualBlock) for m in trunk.modules()) == 2
    assert any(isinstance(m, torch.nn.LayerNorm) for m in trunk.modules())
    loss.backward()
    for pname, p in actor.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, pname


def test_policies_pass_critic_options_to_critics_and_the_residual_trunk_to_actors():
    env_kwargs = {"observation_space": spaces.Box(-1, 1, (3,), np.float32)}
    env_kwargs["action_space"] = spaces.Box(-1, 1, (2,), np.float32)
    net = {"residual": True, "dropout": 0.1, "critic_head": "categorical", "n_bins": 7}
    policy = SAC.default_policy_class(**env_kwargs, net_arch=[16], net=net)
    actor_kinds = {type(m) for m in policy.actor.modules()}
    assert ResidualBlock in actor_kinds and torch.nn.Dropout not in actor_kinds  # dropout is a critic option
    for critic in (policy.critic, policy.critic_target):
        assert critic.head is not None and torch.nn.Dropout in {type(m) for m in critic.modules()}
    td3 = TD3.default_policy_class(**env_kwargs, net_arch=[16], net={"weight_norm": True})
    assert any(isinstance(m, WeightNormEnsembleLinear) for m in td3.critic_target.modules())
    assert not any(isinstance(m, WeightNormEnsembleLinear) for m in td3.actor.modules())


def test_tqc_quantile_critics_take_the_layer_options_and_refuse_the_categorical_head():
    net = {"residual": True, "dropout": 0.1, "weight_norm": True}
    model = TQC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [16, 16], "n_quantiles": 5, "net": net})
    kinds = [type(m) for m in model.policy.critic.modules()]
    assert ResidualBlock in kinds and torch.nn.Dropout in kinds and WeightNormEnsembleLinear in kinds
    obs, actions = torch.zeros(BATCH, 3), torch.zeros(BATCH, 1)
    assert model.policy.critic.quantiles(obs, actions).shape == (N_CRITICS, BATCH, 5)
    with pytest.raises(ValueError, match="critic_head='categorical' is not for TQC"):
        TQC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net": {"critic_head": "categorical"}})


@pytest.mark.parametrize("cls", [SAC, CrossQ])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_one_gradient_step_moves_every_critic_parameter(cls, name):
    torch.manual_seed(0)
    algo = cls(policy_kwargs={"net_arch": [16, 16], "net": OPTIONS[name]}, batch_size=BATCH, buffer_size=1000,
               learning_rate=1e-2, policy_delay=1) if cls is CrossQ else cls(  # fmt: skip
        policy_kwargs={"net_arch": [16, 16], "net": OPTIONS[name]}, batch_size=BATCH, buffer_size=1000, learning_rate=1e-2
    )
    algo.build_networks(spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-2, 2, (2,), np.float32))
    opts = algo.configure_optimizers()
    algo.optimizers = lambda: opts
    algo.manual_backward = lambda loss: loss.backward()
    before = {k: v.detach().clone() for k, v in algo.policy.critic.named_parameters()}
    metrics = algo.gradient_step(make_batch())
    assert torch.isfinite(metrics["train/critic_loss"]) and torch.isfinite(metrics["train/actor_loss"])
    for pname, p in algo.policy.critic.named_parameters():
        assert not torch.equal(before[pname], p.detach()), f"{pname} did not move"


BAD = [
    ({"dropuot": 0.1}, "policy_kwargs.net has unknown keys ['dropuot']"),
    ({"dropout": 1.5}, "policy_kwargs.net.dropout=1.5 must be a number in [0, 1)"),
    ({"residual": "yes"}, "policy_kwargs.net.residual='yes' must be true or false"),
    ({"critic_head": "quantile"}, "policy_kwargs.net.critic_head='quantile' is not known; allowed: ['scalar'"),
    ({"n_bins": 1}, "policy_kwargs.net.n_bins=1 must be an integer of at least 2"),
    ({"v_min": 5.0, "v_max": 5.0}, "v_min=5.0 must be below v_max=5.0"),
    ("droq", "policy_kwargs.net='droq' must be a dict of network options or None"),
]


@pytest.mark.parametrize(("net", "message"), BAD, ids=[str(b[0]) for b in BAD])
def test_bad_options_fail_at_construction_naming_the_key(net, message):
    with pytest.raises(ValueError) as err:
        SAC("MlpPolicy", policy_kwargs={"net": net})
    assert message in str(err.value)


def test_bad_combinations_name_the_setting():
    with pytest.raises(ValueError, match=r"net_arch=\[16, 32\] with policy_kwargs.net.residual=true"):
        make_critic({"residual": True}).__class__(OBS_DIM, ACT_DIM, [16, 32], options=NetOptions(residual=True))
    with pytest.raises(ValueError, match="critic_head='categorical' needs SAC's or CrossQ's critic loss"):
        TD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net": {"critic_head": "categorical"}})


def compose_train(*overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


@pytest.mark.parametrize("option", sorted(p.stem for p in (CONF / "net").glob("*.yaml")))
def test_every_net_config_composes_into_policy_kwargs(option):
    cfg = compose_train("algo=crossq", f"+net={option}", "++algo.policy_kwargs.net.weight_norm=true")
    net = net_options(dict(cfg.algo.policy_kwargs.net))
    assert net.weight_norm and not net.is_default
    assert cfg.algo.policy_kwargs.net_arch.qf == [1024, 1024]  # the rest of policy_kwargs is kept


def test_droq_mujoco_preset():
    cfg = compose_train("experiment=droq_mujoco")
    assert cfg.algo._target_ == "lit_rl.algorithms.SAC"
    assert cfg.algo.gradient_steps == 20
    assert net_options(dict(cfg.algo.policy_kwargs.net)) == NetOptions(dropout=0.01, layer_norm=True)
