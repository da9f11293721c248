"""``policy_kwargs.optimizer_class`` / ``optimizer_kwargs``: the optimizers each algorithm builds, next to SB3's."""

from __future__ import annotations

import pytest
import torch
from sb3_contrib import CrossQ as RefCrossQ
from stable_baselines3 import DQN as RefDQN
from stable_baselines3 import SAC as RefSAC
from stable_baselines3 import TD3 as RefTD3

from lit_rl import DDPG, DQN, SAC, TD3, CrossQ

TINY_AC = {"net_arch": {"pi": [16, 16], "qf": [16, 16]}}
TINY_Q = {"net_arch": [16, 16]}
RMSPROP = {"optimizer_class": torch.optim.RMSprop, "optimizer_kwargs": {"alpha": 0.9, "eps": 1e-5}}
# Settings of the optimizers' param groups compared with SB3's (those that exist for the class).
SETTINGS = ("lr", "alpha", "eps", "momentum", "betas", "weight_decay")


def settings(optimizer: torch.optim.Optimizer) -> tuple[str, dict]:
    group = optimizer.param_groups[0]
    return type(optimizer).__name__, {k: group[k] for k in SETTINGS if k in group}


def reference_optimizers(model) -> list[torch.optim.Optimizer]:
    """SB3's optimizers in lit_rl's order: actor, critic, entropy coefficient (when learned) / the Q-network's."""
    if hasattr(model.policy, "optimizer"):
        return [model.policy.optimizer]
    entropy = [model.ent_coef_optimizer] if getattr(model, "ent_coef_optimizer", None) is not None else []
    return [model.actor.optimizer, model.critic.optimizer, *entropy]


CASES = {
    # name: (lit_rl class, SB3 class, env id, policy_kwargs)
    "sac_rmsprop": (SAC, RefSAC, "Pendulum-v1", {**TINY_AC, **RMSPROP}),
    "sac_sgd_fixed_alpha": (SAC, RefSAC, "Pendulum-v1", {**TINY_AC, "optimizer_class": torch.optim.SGD}),
    "td3_sgd": (
        TD3,
        RefTD3,
        "Pendulum-v1",
        {**TINY_AC, "optimizer_class": torch.optim.SGD, "optimizer_kwargs": {"momentum": 0.9}},
    ),
    "dqn_rmsprop": (DQN, RefDQN, "CartPole-v1", {**TINY_Q, **RMSPROP}),
    "dqn_adam_kwargs": (DQN, RefDQN, "CartPole-v1", {**TINY_Q, "optimizer_kwargs": {"eps": 1e-5}}),
    "crossq_default": (CrossQ, RefCrossQ, "Pendulum-v1", TINY_AC),
    "crossq_rmsprop": (CrossQ, RefCrossQ, "Pendulum-v1", {**TINY_AC, **RMSPROP}),
    "crossq_adamw": (CrossQ, RefCrossQ, "Pendulum-v1", {**TINY_AC, "optimizer_class": torch.optim.AdamW}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_optimizers_match_stable_baselines3(case):
    cls, ref_cls, env_id, policy_kwargs = CASES[case]
    extra = {"ent_coef": 0.1} if case == "sac_sgd_fixed_alpha" else {}
    # A copy: SB3 writes use_sde into the dict it is given.
    ref = ref_cls("MlpPolicy", env_id, learning_rate=7e-4, policy_kwargs=dict(policy_kwargs), seed=0, **extra)
    model = cls("MlpPolicy", env_id, learning_rate=7e-4, policy_kwargs=policy_kwargs, seed=0, **extra)
    ours = model.configure_optimizers()
    ours = ours if isinstance(ours, list) else [ours]
    assert [settings(o) for o in ours] == [settings(o) for o in reference_optimizers(ref)]


def test_crossq_keeps_its_betas_when_optimizer_kwargs_leave_them_out():
    """A deliberate difference: sb3-contrib falls back to Adam's (0.9, 0.999) once any optimizer_kwargs are given."""
    model = CrossQ("MlpPolicy", "Pendulum-v1", policy_kwargs={**TINY_AC, "optimizer_kwargs": {"eps": 1e-5}})
    actor_opt, critic_opt, ent_opt = model.configure_optimizers()
    for opt in (actor_opt, critic_opt):
        assert opt.param_groups[0]["betas"] == (0.5, 0.999) and opt.param_groups[0]["eps"] == 1e-5
    assert ent_opt.param_groups[0]["betas"] == (0.9, 0.999) and ent_opt.param_groups[0]["eps"] == 1e-8
    model = CrossQ("MlpPolicy", "Pendulum-v1", policy_kwargs={**TINY_AC, "optimizer_kwargs": {"betas": (0.7, 0.9)}})
    assert model.configure_optimizers()[0].param_groups[0]["betas"] == (0.7, 0.9)


def test_adam_keeps_the_fused_kernel_unless_the_kernel_is_chosen():
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=TINY_AC)
    assert all(opt.defaults["fused"] for opt in model.configure_optimizers())
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={**TINY_AC, "optimizer_kwargs": {"foreach": True}})
    actor_opt, critic_opt, ent_opt = model.configure_optimizers()
    assert actor_opt.defaults["foreach"] and not actor_opt.defaults["fused"] and ent_opt.defaults["fused"]


@pytest.mark.parametrize(
    ("cls", "env_id", "policy_kwargs"),
    [(SAC, "Pendulum-v1", {**TINY_AC, **RMSPROP}), (DQN, "CartPole-v1", {**TINY_Q, **RMSPROP})],
    ids=["sac", "dqn"],
)
def test_learn_steps_with_rmsprop(cls, env_id, policy_kwargs):
    model = cls("MlpPolicy", env_id, learning_starts=50, batch_size=16, buffer_size=1_000, train_freq=1,
                policy_kwargs=policy_kwargs, seed=0)  # fmt: skip
    before = {k: v.clone() for k, v in model.policy.state_dict().items()}
    model.learn(120)
    optimizers = model.trainer.optimizers
    expected = [torch.optim.RMSprop] * (len(optimizers) - 1) + [torch.optim.Adam if cls is SAC else torch.optim.RMSprop]
    assert [type(o) for o in optimizers] == expected
    main = optimizers[0]
    # The RMSprop state moved with every update: one step per gradient step (70 after learning_starts=50).
    state = main.state[main.param_groups[0]["params"][0]]
    assert set(state) >= {"square_avg", "step"} and int(state["step"]) == model._n_updates == 70
    assert main.param_groups[0]["alpha"] == 0.9 and main.param_groups[0]["eps"] == 1e-5
    net = "actor" if cls is SAC else "q_net"
    assert any(not torch.equal(before[k], v) for k, v in model.policy.state_dict().items() if k.startswith(net))


@pytest.mark.parametrize(
    ("policy_kwargs", "match"),
    [
        ({"optimizer_class": "adam"}, r"policy_kwargs.optimizer_class='adam' is not allowed; allowed: a subclass"),
        ({"optimizer_kwargs": {"lr": 0.1}}, r"optimizer_kwargs=\{'lr': 0.1\} sets 'lr'; allowed: the algorithm's"),
        (
            {"optimizer_class": torch.optim.SGD, "optimizer_kwargs": {"betas": (0.9, 0.99)}},
            r"optimizer_kwargs=\{'betas': \(0.9, 0.99\)\} do not fit optimizer_class=SGD",
        ),
    ],
    ids=["not_a_class", "lr", "foreign_kwarg"],
)
def test_bad_optimizer_settings_name_the_key(policy_kwargs, match):
    model = DDPG("MlpPolicy", "Pendulum-v1", policy_kwargs={**TINY_AC, **policy_kwargs})
    with pytest.raises(TypeError, match=match):
        model.configure_optimizers()
