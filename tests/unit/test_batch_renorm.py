"""BatchRenorm checked against Batch Renormalization's formula, written here independently in float64."""

from __future__ import annotations

import pytest
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


def ref_batch_norm(x, weight, bias):
    """Plain batch norm over dim 0 with the unbiased batch variance."""
    n = x.shape[0]
    mean = x.sum(0) / n
    var = ((x - mean) ** 2).sum(0) / (n - 1)
    return (x - mean) / torch.sqrt(var + EPS) * weight + bias, mean, var


def ref_renorm(x, weight, bias, running_mean, running_var):
    """Batch renorm (Ioffe 2017) over dim 0, r and d detached; returns output, r, d (unclipped and clipped), stats."""
    n = x.shape[0]
    mean = x.sum(0) / n
    var = ((x - mean) ** 2).sum(0) / (n - 1)
    std = torch.sqrt(var + EPS)
    running_std = torch.sqrt(running_var + EPS)
    r_raw = (std / running_std).detach()
    d_raw = ((mean - running_mean) / running_std).detach()
    r = torch.clamp(r_raw, 1.0 / R_MAX, R_MAX)
    d = torch.clamp(d_raw, -D_MAX, D_MAX)
    # The layer's algebraic form of (x - mean)/std * r + d, with eps placed where the layer puts it.
    custom_mean = mean - d * std / r
    custom_var = var / r**2
    out = (x - custom_mean) / torch.sqrt(custom_var + EPS)
    return out * weight + bias, dict(r_raw=r_raw, d_raw=d_raw, r=r, d=d, mean=mean, var=var, std=std)


def update_running(running, batch_stat):
    return running + MOMENTUM * (batch_stat - running)


# ---------------------------------------------------------------------------- warmup: plain batch norm
def test_warmup_is_plain_batch_norm_with_unbiased_variance_and_updates_running_stats():
    warmup = 3
    layer = make_layer(warmup_steps=warmup)
    layer.train()
    rm = torch.zeros(F, dtype=torch.float64)
    rv = torch.ones(F, dtype=torch.float64)
    # Forwards with steps = 0, 1, ..., warmup are all plain batch norm (steps <= warmup_steps).
    for i in range(warmup + 1):
        assert int(layer.steps) == i
        x = rand_x(B, F, seed=10 + i, scale=2.0 + i, shift=1.0 - i)
        out = layer(x)
        expected, mean, var = ref_batch_norm(x, layer.weight.detach(), layer.bias.detach())
        torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-10)
        rm, rv = update_running(rm, mean), update_running(rv, var)
        torch.testing.assert_close(layer.running_mean, rm, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(layer.running_var, rv, rtol=1e-12, atol=1e-12)
        assert int(layer.steps) == i + 1

    # The biased variance would give a measurably different output: the test distinguishes them.
    x = rand_x(B, F, seed=99)
    fresh = make_layer(warmup_steps=warmup)
    biased = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + EPS) * fresh.weight.detach() + fresh.bias.detach()
    assert not torch.allclose(fresh(x), biased, rtol=1e-6, atol=1e-6)


def test_running_var_tracks_unbiased_batch_variance():
    layer = make_layer(warmup_steps=100)
    x = rand_x(B, F, seed=3, scale=3.0)
    layer(x)
    expected = 1.0 + MOMENTUM * (x.var(0, unbiased=True) - 1.0)
    torch.testing.assert_close(layer.running_var, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------- after warmup: renorm
def test_renorm_applies_only_after_warmup_and_matches_formula():
    warmup = 2
    layer = make_layer(warmup_steps=warmup)
    for i in range(warmup + 1):  # steps 0..warmup: plain batch norm
        layer(rand_x(B, F, seed=20 + i))
    assert int(layer.steps) == warmup + 1

    # A batch whose statistics differ from the running ones (but not enough to clip).
    x = rand_x(B, F, seed=30, scale=1.5, shift=0.3)
    rm, rv = layer.running_mean.clone(), layer.running_var.clone()
    w, b = layer.weight.detach(), layer.bias.detach()
    out = layer(x)
    expected, s = ref_renorm(x, w, b, rm, rv)
    assert torch.all(s["r_raw"] == s["r"]) and torch.all(s["d_raw"] == s["d"]), "this case must not clip"
    assert not torch.allclose(s["r"], torch.ones_like(s["r"]), atol=1e-3), (
        "r must differ from 1 for the case to mean anything"
    )
    torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-10)

    # The textbook form (x - mean_B)/std_B * r + d agrees up to the placement of eps.
    textbook = ((x - s["mean"]) / s["std"] * s["r"] + s["d"]) * w + b
    torch.testing.assert_close(out, textbook, rtol=2e-3, atol=2e-3)

    # And it is not plain batch norm.
    plain, _, _ = ref_batch_norm(x, w, b)
    assert not torch.allclose(out, plain, rtol=1e-4, atol=1e-4)

    # Running stats still updated with the batch stats, steps still counted.
    torch.testing.assert_close(layer.running_mean, update_running(rm, s["mean"]), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(layer.running_var, update_running(rv, s["var"]), rtol=1e-12, atol=1e-12)
    assert int(layer.steps) == warmup + 2


def test_renorm_clips_r_and_d():
    layer = make_layer(warmup_steps=0)
    with torch.no_grad():
        layer.steps.fill_(1)  # past warmup
        # Running stats far from the batch stats: some features need r > r_max, r < 1/r_max, |d| > d_max.
        layer.running_mean.copy_(torch.tensor([50.0, -50.0, 0.0, 0.0], dtype=torch.float64))
        layer.running_var.copy_(torch.tensor([1.0, 1.0, 1e-2, 1e4], dtype=torch.float64))
    x = rand_x(B, F, seed=40)
    rm, rv = layer.running_mean.clone(), layer.running_var.clone()
    w, b = layer.weight.detach(), layer.bias.detach()
    out = layer(x)
    expected, s = ref_renorm(x, w, b, rm, rv)

    # The clipping really happened, in every direction.
    assert s["d_raw"][0] < -D_MAX and s["d"][0] == -D_MAX
    assert s["d_raw"][1] > D_MAX and s["d"][1] == D_MAX
    assert s["r_raw"][2] > R_MAX and s["r"][2] == R_MAX
    assert s["r_raw"][3] < 1.0 / R_MAX and s["r"][3] == pytest.approx(1.0 / R_MAX)
    torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-10)

    # Without clipping the output would be different (so the assertion above can fail).
    unclipped_mean = s["mean"] - s["d_raw"] * s["std"] / s["r_raw"]
    unclipped_var = s["var"] / s["r_raw"] ** 2
    unclipped = (x - unclipped_mean) / torch.sqrt(unclipped_var + EPS) * w + b
    assert not torch.allclose(out, unclipped, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------- gradients
def test_gradients_treat_r_and_d_as_constants():
    layer = make_layer(warmup_steps=0)
    with torch.no_grad():
        layer.steps.fill_(5)
        layer.running_mean.copy_(torch.full((F,), 0.2, dtype=torch.float64))
        layer.running_var.copy_(torch.full((F,), 1.5, dtype=torch.float64))
    rm, rv = layer.running_mean.clone(), layer.running_var.clone()
    x = rand_x(B, F, seed=50, scale=1.2, shift=0.1).requires_grad_(True)
    upstream = rand_x(B, F, seed=51)

    out = layer(x)
    (grad_layer,) = torch.autograd.grad((out * upstream).sum(), x)

    x_ref = x.detach().clone().requires_grad_(True)
    expected, s = ref_renorm(x_ref, layer.weight.detach(), layer.bias.detach(), rm, rv)
    assert torch.all(s["r_raw"] == s["r"]) and torch.all(s["d_raw"] == s["d"]), (
        "r, d unclipped: their gradient would matter"
    )
    (grad_ref,) = torch.autograd.grad((expected * upstream).sum(), x_ref)
    torch.testing.assert_close(grad_layer, grad_ref, rtol=1e-9, atol=1e-10)

    # With r and d NOT detached the gradient is different: the check above can fail.
    x_nd = x.detach().clone().requires_grad_(True)
    n = x_nd.shape[0]
    mean = x_nd.sum(0) / n
    var = ((x_nd - mean) ** 2).sum(0) / (n - 1)
    std = torch.sqrt(var + EPS)
    running_std = torch.sqrt(rv + EPS)
    r = std / running_std
    d = (mean - rm) / running_std
    out_nd = (
        (x_nd - (mean - d * std / r)) / torch.sqrt(var / r**2 + EPS)
    ) * layer.weight.detach() + layer.bias.detach()
    (grad_nd,) = torch.autograd.grad((out_nd * upstream).sum(), x_nd)
    assert not torch.allclose(grad_layer, grad_nd, rtol=1e-3, atol=1e-3)


def test_gradients_during_warmup_are_batch_norm_gradients():
    layer = make_layer(warmup_steps=10)
    x = rand_x(B, F, seed=60).requires_grad_(True)
    upstream = rand_x(B, F, seed=61)
    (g_layer,) = torch.autograd.grad((layer(x) * upstream).sum(), x)
    x_ref = x.detach().clone().requires_grad_(True)
    expected, _, _ = ref_batch_norm(x_ref, layer.weight.detach(), layer.bias.detach())
    (g_ref,) = torch.autograd.grad((expected * upstream).sum(), x_ref)
    torch.testing.assert_close(g_layer, g_ref, rtol=1e-9, atol=1e-10)


# ---------------------------------------------------------------------------- eval mode
def test_eval_uses_running_stats_and_changes_nothing():
    layer = make_layer(warmup_steps=1)
    for i in range(3):
        layer(rand_x(B, F, seed=70 + i, scale=2.0, shift=1.0))
    layer.eval()
    rm, rv, steps = layer.running_mean.clone(), layer.running_var.clone(), layer.steps.clone()
    x = rand_x(B, F, seed=80, scale=5.0)
    out = layer(x)
    expected = (x - rm) / torch.sqrt(rv + EPS) * layer.weight.detach() + layer.bias.detach()
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    # Per-sample: a single-row batch works and does not depend on the rest of the batch.
    torch.testing.assert_close(layer(x[:1]), expected[:1], rtol=1e-12, atol=1e-12)
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
    rm, rv = fresh.running_mean.clone(), fresh.running_var.clone()
    out_fresh = fresh(x2)
    out_orig = layer(x2)
    torch.testing.assert_close(out_fresh, out_orig, rtol=0, atol=0)
    expected, _ = ref_renorm(x2, fresh.weight.detach(), fresh.bias.detach(), rm, rv)
    torch.testing.assert_close(out_fresh, expected, rtol=1e-10, atol=1e-10)
    plain, _, _ = ref_batch_norm(x2, fresh.weight.detach(), fresh.bias.detach())
    assert not torch.allclose(out_fresh, plain, rtol=1e-4, atol=1e-4)
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
