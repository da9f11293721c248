"""BatchRenorm behaviour: eval mode, checkpoints, fused ensembles.

The formulas themselves (outputs, statistics, gradients before and after warm-up) are checked side by side
with sb3-contrib's BatchRenorm1d in tests/reference/test_batch_renorm_reference.py.
"""

from __future__ import annotations

import torch

from lit_rl.nets.batch_renorm import BatchRenorm

F = 4
B = 16
EPS = 1e-3
MOMENTUM = 0.1
R_MAX, D_MAX = 3.0, 5.0


def make_layer(warmup_steps: int = 2, ensemble_size: int | None = None, seed: int = 0) -> BatchRenorm:
    layer = BatchRenorm(
        F, momentum=MOMENTUM, eps=EPS, r_max=R_MAX, d_max=D_MAX, warmup_steps=warmup_steps, ensemble_size=ensemble_size
    ).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        # Non-trivial affine parameters so that weight/bias are exercised.
        layer.weight.copy_(torch.rand(layer.weight.shape, generator=g, dtype=torch.float64) + 0.5)
        layer.bias.copy_(torch.randn(layer.bias.shape, generator=g, dtype=torch.float64))
    return layer


def rand_x(*shape: int, seed: int = 1, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale + shift


# ---------------------------------------------------------------------------- eval mode
def test_eval_uses_running_stats_and_changes_nothing():
    layer = make_layer(warmup_steps=1)
    for i in range(3):
        layer(rand_x(B, F, seed=70 + i, scale=2.0, shift=1.0))
    layer.eval()
    rm, rv, steps = layer.running_mean.clone(), layer.running_var.clone(), layer.steps.clone()
    x = rand_x(B, F, seed=80, scale=5.0)
    out = layer(x)
    # Per-sample: a single-row batch works and does not depend on the rest of the batch.
    for i in (0, 5, B - 1):
        torch.testing.assert_close(layer(x[i : i + 1]), out[i : i + 1], rtol=1e-12, atol=1e-12)
    assert torch.equal(layer.running_mean, rm)
    assert torch.equal(layer.running_var, rv)
    assert torch.equal(layer.steps, steps)


# ---------------------------------------------------------------------------- checkpoints
def test_state_dict_round_trip_keeps_stats_and_step_count():
    warmup = 2
    layer = make_layer(warmup_steps=warmup)
    for i in range(warmup + 2):
        layer(rand_x(B, F, seed=90 + i, scale=1.0 + i, shift=0.5 * i))
    state = layer.state_dict()
    assert {"running_mean", "running_var", "steps", "weight", "bias"} <= set(state)
    assert int(state["steps"]) == warmup + 2

    fresh = BatchRenorm(F, momentum=MOMENTUM, eps=EPS, r_max=R_MAX, d_max=D_MAX, warmup_steps=warmup).double()
    fresh.load_state_dict(state)
    assert int(fresh.steps) == warmup + 2
    assert fresh.steps.dtype == torch.long

    x = rand_x(B, F, seed=100, scale=2.0)
    layer.eval(), fresh.eval()
    torch.testing.assert_close(fresh(x), layer(x), rtol=0, atol=0)

    # Training continues past warmup in the restored layer: same renorm output as the original.
    layer.train(), fresh.train()
    x2 = rand_x(B, F, seed=101, scale=1.7, shift=-0.4)
    # A restored layer that lost its step count would be back in warm-up (plain batch norm): that differs.
    forgetful = BatchRenorm(F, momentum=MOMENTUM, eps=EPS, r_max=R_MAX, d_max=D_MAX, warmup_steps=warmup).double()
    forgetful.load_state_dict({**state, "steps": torch.zeros((), dtype=torch.long)})
    out_fresh = fresh(x2)
    out_orig = layer(x2)
    torch.testing.assert_close(out_fresh, out_orig, rtol=0, atol=0)
    assert not torch.allclose(out_fresh, forgetful(x2), rtol=1e-4, atol=1e-4)
    assert int(fresh.steps) == warmup + 3


# ---------------------------------------------------------------------------- ensembles
def _split_members(ens: BatchRenorm) -> list[BatchRenorm]:
    """Separate non-ensemble layers with the same affine parameters as each ensemble member."""
    members = []
    for k in range(ens.weight.shape[0]):
        single = BatchRenorm(
            F, momentum=MOMENTUM, eps=EPS, r_max=R_MAX, d_max=D_MAX, warmup_steps=ens.warmup_steps
        ).double()
        with torch.no_grad():
            single.weight.copy_(ens.weight[k, 0])
            single.bias.copy_(ens.bias[k, 0])
        members.append(single)
    return members


def test_ensemble_members_match_separate_layers():
    ens = make_layer(warmup_steps=2, ensemble_size=2)
    assert ens.running_mean.shape == (2, F) and ens.weight.shape == (2, 1, F)
    singles = _split_members(ens)
    for i in range(5):  # through warmup and into renorm
        # Members see different data, so their statistics differ.
        x = torch.stack(
            [rand_x(B, F, seed=200 + i, scale=1.0, shift=0.5), rand_x(B, F, seed=300 + i, scale=3.0, shift=-2.0)]
        )
        out = ens(x)
        assert out.shape == (2, B, F)
        for k, single in enumerate(singles):
            torch.testing.assert_close(out[k], single(x[k]), rtol=1e-10, atol=1e-10)
            torch.testing.assert_close(ens.running_mean[k], single.running_mean, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(ens.running_var[k], single.running_var, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(ens.running_mean[0], ens.running_mean[1])
    assert int(ens.steps) == 5

    ens.eval()
    x = torch.stack([rand_x(B, F, seed=400), rand_x(B, F, seed=401)])
    out = ens(x)
    for k, single in enumerate(singles):
        single.eval()
        torch.testing.assert_close(out[k], single(x[k]), rtol=1e-12, atol=1e-12)


def test_ensemble_broadcasts_2d_input_to_every_member():
    ens = make_layer(warmup_steps=1, ensemble_size=2)
    singles = _split_members(ens)
    # Give the members different running stats so that the renorm phase differs per member.
    with torch.no_grad():
        ens.running_mean[1].fill_(0.7)
        ens.running_var[1].fill_(2.5)
        singles[1].running_mean.fill_(0.7)
        singles[1].running_var.fill_(2.5)
    for i in range(4):
        x = rand_x(B, F, seed=500 + i, scale=1.3, shift=0.2)
        out = ens(x)
        assert out.shape == (2, B, F)
        for k, single in enumerate(singles):
            torch.testing.assert_close(out[k], single(x), rtol=1e-10, atol=1e-10)
            torch.testing.assert_close(ens.running_mean[k], single.running_mean, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(ens.running_var[k], single.running_var, rtol=1e-12, atol=1e-12)
    assert ens.running_mean.shape == (2, F)
    ens.eval()
    x = rand_x(B, F, seed=600)
    out = ens(x)
    for k, single in enumerate(singles):
        single.eval()
        torch.testing.assert_close(out[k], single(x), rtol=1e-12, atol=1e-12)
