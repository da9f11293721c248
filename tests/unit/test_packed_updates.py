"""A pack's batched gradient step against each member's own step (lit_rl's, itself equal to Stable-Baselines3's):
same initial weights, same batches, same noise; members differ in seed, learning rate, tau and gamma.

The batched matrix products round differently from the single ones (about 1e-8 on a gradient); Adam divides a
near-zero gradient by its own small running scale, which can carry that rounding to a few 1e-6 in a weight.
"""

from __future__ import annotations

import copy

import pytest
import torch

from lit_rl.algorithms.crossq import CrossQ
from lit_rl.algorithms.ddpg import DDPG
from lit_rl.algorithms.sac import SAC
from lit_rl.algorithms.td3 import TD3
from lit_rl.algorithms.tqc import TQC
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed import PackedCrossQ, PackedSAC, PackedTD3, PackedTQC
from lit_rl.packed.stack import Stack
from tests.reference.sb3_weights import without_trainer
from tests.unit.packed_members import assert_members_equal_their_own

P, B, STEPS = 3, 32, 12
PER_MEMBER = {"learning_rate": [3e-4, 1e-3, 3e-3], "tau": [0.005, 0.05, 0.02], "gamma": [0.99, 0.98, 0.95]}
OWN_SETTINGS = ("ent_coef", "target_entropy", "target_policy_noise", "target_noise_clip")  # lists: one per member
CROSSQ_NET = {"net_arch": [32, 32], "renorm_warmup_steps": 3, "optimizer_kwargs": {"eps": 1e-4}}
CASES = {
    "sac_auto_ent_coef": (SAC, PackedSAC, {}),
    "sac_fixed_ent_coef": (SAC, PackedSAC, {"ent_coef": 0.1}),
    "sac_target_update_interval_2": (SAC, PackedSAC, {"target_update_interval": 2}),
    "td3": (TD3, PackedTD3, {}),
    "ddpg": (DDPG, PackedTD3, {}),
    # Past BatchRenorm's warm-up after 3 steps; the actor and entropy steps every third step. Adam's eps at 1e-4:
    # a gradient that BatchRenorm makes nearly zero would otherwise turn its rounding into a step of +-lr.
    "crossq": (CrossQ, PackedCrossQ, {"policy_kwargs": CROSSQ_NET}),
    "crossq_policy_delay_1": (CrossQ, PackedCrossQ, {"policy_delay": 1, "policy_kwargs": CROSSQ_NET}),
    "tqc": (TQC, PackedTQC, {"policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5, "n_critics": 2}}),
    # Settings of each member's own (lists: one value per member)
    "sac_ent_coef_per_member": (SAC, PackedSAC, {"ent_coef": [0.05, 0.1, 0.2]}),
    "sac_learned_ent_coef_and_target_entropy_per_member": (
        SAC, PackedSAC, {"ent_coef": ["auto_0.5", "auto", "auto_0.1"], "target_entropy": [-1.0, -0.5, -2.0]},
    ),  # fmt: skip
    "td3_target_smoothing_per_member": (
        TD3, PackedTD3, {"target_policy_noise": [0.1, 0.2, 0.3], "target_noise_clip": [0.2, 0.5, 0.4]},
    ),  # fmt: skip
    "tqc_target_entropy_per_member": (
        TQC, PackedTQC, {"target_entropy": [-1.0, -0.5, -2.0],
                         "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5, "n_critics": 2}},
    ),  # fmt: skip
    "tqc_policy_delay_2_fixed_ent_coef": (
        TQC,
        PackedTQC,
        {"policy_delay": 2, "ent_coef": 0.1, "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5, "n_critics": 2}},
    ),  # fmt: skip
}


def make_members(cls, n: int = P, arch=(32, 32), **kwargs):
    members = []
    for i in range(n):
        per = {k: v[i] for k, v in PER_MEMBER.items() if k != "tau" or cls is not CrossQ}  # CrossQ: no tau
        own = {k: v[i] if isinstance(v, list) and k in OWN_SETTINGS else v for k, v in kwargs.items()}
        own = {"policy_kwargs": {"net_arch": list(arch)}} | own
        members.append(cls("MlpPolicy", "Pendulum-v1", batch_size=B, buffer_size=1000, seed=i, **(per | own)))
    return members


def batches(n_steps: int, n_step_discounts: bool):
    g = torch.Generator().manual_seed(7)
    for _ in range(n_steps):
        discounts = 0.99 ** torch.randint(1, 4, (P, B), generator=g).float() if n_step_discounts else None
        yield ReplayBatch(
            torch.randn(P, B, 3, generator=g), torch.rand(P, B, 1, generator=g) * 2 - 1,
            torch.randn(P, B, 3, generator=g), torch.randn(P, B, generator=g),
            (torch.rand(P, B, generator=g) < 0.1).float(), discounts,
        )  # fmt: skip


@pytest.mark.parametrize("n_step_discounts", [False, True], ids=["one_step", "n_step_discounts"])
@pytest.mark.parametrize("case", list(CASES))
def test_each_member_equals_its_own_update(case, n_step_discounts):
    cls, packed_cls, kwargs = CASES[case]
    members = make_members(cls, **kwargs)
    own = [copy.deepcopy(m) for m in members]
    initial = [copy.deepcopy(m.state_dict()) for m in members]
    for algo in own:
        without_trainer(algo)
    pack = packed_cls(members, [torch.Generator().manual_seed(100 + i) for i in range(P)])
    for step, batch in enumerate(batches(STEPS, n_step_discounts)):
        noise = pack.draw_noise(batch)
        pack.gradient_step(batch, noise)
        for i, algo in enumerate(own):
            algo.round_gradient_step = 0  # one gradient step per rollout: SAC's target counter starts each at 0
            with given_noise([n[i] for n in noise]):
                algo.update(ReplayBatch(*(None if t is None else t[i] for t in batch)))
        assert pack.n_updates == algo.clock.n_updates == members[0].clock.n_updates == step + 1
    target = ".critic_target." if cls is not CrossQ else ".running_mean"  # CrossQ: BatchRenorm statistics
    assert_members_equal_their_own(members, own, initial, atol=1e-5, moved_groups=(".actor.", target))


@pytest.mark.parametrize("case", ["sac_auto_ent_coef", "td3"])
def test_a_compiled_pack_equals_the_members_own_updates(case):
    cls, packed_cls, kwargs = CASES[case]
    members = make_members(cls, **kwargs)
    own = [copy.deepcopy(m) for m in members]
    for algo in own:
        without_trainer(algo)
    pack = packed_cls(members, compile=True)
    for batch in batches(4, False):
        noise = pack.draw_noise(batch)
        pack.gradient_step(batch, noise)
        for i, algo in enumerate(own):
            algo.round_gradient_step = 0
            with given_noise([n[i] for n in noise]):
                algo.update(ReplayBatch(*(t[i] for t in batch[:5])))
    for packed, alone in zip(members, own, strict=True):
        for name, value in alone.policy.state_dict().items():
            torch.testing.assert_close(packed.policy.state_dict()[name], value, rtol=1e-5, atol=1e-5, msg=name)


def test_a_bf16_pack_computes_each_members_losses_as_its_own_bf16_update():
    """bf16 products round differently batched (about 1e-3 of a loss); fp32 stays within 1e-6."""
    for precision, rtol in (("bf16-mixed", 2e-3), ("32-true", 1e-6)):
        members = make_members(SAC, precision=precision)
        own = copy.deepcopy(members)
        for algo in own:
            without_trainer(algo)
        pack = PackedSAC(members)
        batch = next(batches(1, False))
        noise = pack.draw_noise(batch)
        packed = pack.gradient_step(batch, noise)
        for i, algo in enumerate(own):
            algo.round_gradient_step = 0
            with given_noise([n[i] for n in noise]):
                alone = algo.gradient_step(ReplayBatch(*(t[i] for t in batch[:5])))
            for key in ("train/critic_loss", "train/actor_loss", "train/ent_coef_loss"):
                torch.testing.assert_close(packed[key][i], alone[key], rtol=rtol, atol=0, msg=f"{precision} {key}")


def test_train_samples_each_members_own_buffer_as_its_own_train_does():
    """Members that collected 300 Pendulum steps each: the pack's ``train`` against each member's ``train``."""

    def collected():
        members = make_members(SAC, learning_starts=300)
        for m in members:
            m.learn(300)
        return members

    members, own = collected(), collected()
    pack = PackedSAC(members, [torch.Generator().manual_seed(i) for i in range(P)])
    pack.train(4)
    generators = [torch.Generator().manual_seed(i) for i in range(P)]
    for _ in range(4):
        for algo, g in zip(own, generators, strict=True):
            with given_noise([torch.randn(B, 1, generator=g) for _ in range(2)]):
                algo.train(gradient_steps=1, batch_size=B)
    for packed, alone in zip(members, own, strict=True):
        for name, value in alone.policy.state_dict().items():
            torch.testing.assert_close(packed.policy.state_dict()[name], value, rtol=1e-5, atol=1e-5, msg=name)
        assert packed.replay_buffer.generator.get_state().equal(alone.replay_buffer.generator.get_state())


def test_members_save_and_load_alone_after_packed_steps(tmp_path):
    members = make_members(SAC)
    pack = PackedSAC(members)
    for batch in batches(3, False):
        pack.gradient_step(batch, pack.draw_noise(batch))
    members[1].save(tmp_path / "member1")
    loaded = SAC.load(tmp_path / "member1")
    for name, value in members[1].policy.state_dict().items():
        assert torch.equal(loaded.policy.state_dict()[name], value), name
    assert not torch.equal(members[0].policy.state_dict()["actor.mu.weight"], value_of(loaded, "actor.mu.weight"))


def test_a_member_saves_only_its_own_slice_of_the_pack(tmp_path):
    members = [SAC("MlpPolicy", "Pendulum-v1", buffer_size=1000, seed=i, policy_kwargs={"net_arch": [64, 64]})
               for i in range(8)]  # fmt: skip
    members[0].save(tmp_path / "alone")
    PackedSAC(members)
    members[0].save(tmp_path / "packed")
    alone, packed = ((tmp_path / f"{n}.zip").stat().st_size for n in ("alone", "packed"))
    assert packed < 1.05 * alone, (packed, alone)  # a saved view would write all 8 members' stacked storage


def value_of(algo, name: str) -> torch.Tensor:
    return algo.policy.state_dict()[name]


def test_a_pack_of_other_shapes_is_refused_naming_the_key_or_the_tensor():
    members = make_members(SAC, n=2) + make_members(SAC, n=1, arch=(16, 32))
    with pytest.raises(ValueError, match=r"policy_kwargs differs across the pack .*'net_arch': \[16, 32\]"):
        PackedSAC(members)
    with pytest.raises(ValueError, match=r"policy: member 2 differs from member 0 in actor\.latent_pi\.0\.weight"):
        Stack([m.policy for m in members], "policy")


def test_a_shared_setting_that_differs_is_refused_naming_it():
    members = make_members(SAC, n=2)
    members[1].batch_size = 64
    with pytest.raises(ValueError, match=r"batch_size differs across the pack \(\[32, 64\]\); allowed to differ: "):
        PackedSAC(members)


def test_learned_and_fixed_entropy_coefficients_or_smoothing_on_and_off_do_not_pack():
    with pytest.raises(ValueError, match=r"ent_coef differs in kind across the pack \(\['auto', 0.1, 0.1\]\)"):
        PackedSAC(make_members(SAC, ent_coef=["auto", 0.1, 0.1]))
    with pytest.raises(ValueError, match=r"0 for some members and not for others"):
        PackedTD3(make_members(TD3, target_policy_noise=[0.2, 0.0, 0.2]))


def test_a_learning_rate_schedule_is_refused_with_the_fix():
    members = make_members(SAC, n=2)
    members[0].learning_rate = lambda progress: 1e-3 * progress
    with pytest.raises(ValueError, match=r"member 0: learning_rate=.* is a schedule.*run schedules as separate jobs"):
        PackedSAC(members)


def test_an_algorithm_the_pack_does_not_step_is_refused():
    with pytest.raises(ValueError, match=r"member 0 is a CrossQ; allowed: SAC members only"):
        PackedSAC(make_members(CrossQ, n=2))
    with pytest.raises(ValueError, match=r"PackedTD3 packs TD3 or DDPG members; got a SAC"):
        PackedTD3(make_members(SAC, n=2))


def test_tqc_without_target_critics_is_refused_naming_what_packs():
    members = make_members(TQC, n=2, policy_kwargs={"net_arch": [32, 32], "target_network": False})
    with pytest.raises(ValueError, match=r"TQC without target critics .* allowed: TQC with its target critics"):
        PackedTQC(members)
