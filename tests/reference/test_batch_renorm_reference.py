"""lit_rl's BatchRenorm side by side with sb3-contrib's BatchRenorm1d: outputs, statistics and gradients."""

from __future__ import annotations

import pytest
import torch
from sb3_contrib.common.torch_layers import BatchRenorm1d

from lit_rl.nets.batch_renorm import BatchRenorm
from tests.reference.sb3_weights import assert_pairs_close, batch_renorm_pairs, copy_into_lit

B = 32
MOMENTUM = 0.2  # larger than CrossQ's 0.01 so that the running statistics move visibly within a few steps
# Per-feature scale of the inputs: two features with near-zero variance (std 0.01, 0.03), where the placement
# of eps in the renormalised mean matters most, and O(1) ones.
STD = torch.tensor([0.01, 0.03, 1.0, 2.0, 0.5])
MEAN = torch.tensor([0.3, -0.2, 1.0, -0.5, 0.0])
NF = len(STD)
# Both layers do the same arithmetic in a different order (lit_rl folds it into one affine map), so they agree
# to rounding, not bit for bit. float64 proves the formulas equal (1e-14 measured); in float32, as in training,
# the input gradient of the std-0.0015 feature in the clipping steps is ill-conditioned (|grad| ~ 190 from
# 1/sqrt(var) terms) and differs by up to 6e-4 relative while float64 agrees to 5e-14, hence its looser rtol.
TOL = {torch.float64: dict(rtol=1e-10, atol=1e-10), torch.float32: dict(rtol=1e-5, atol=1e-5)}
GRAD_TOL = {torch.float64: TOL[torch.float64], torch.float32: dict(rtol=2e-3, atol=1e-4)}
DTYPES = pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])


def make_pair(
    warmup_steps: int, seed: int = 0, dtype: torch.dtype = torch.float64
) -> tuple[BatchRenorm1d, BatchRenorm]:
    """A reference layer with non-trivial affine parameters, and a lit_rl layer holding a copy of them."""
    ref = BatchRenorm1d(NF, eps=1e-3, momentum=MOMENTUM, warmup_steps=warmup_steps)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        ref.scale.copy_(torch.rand(NF, generator=g) + 0.5)
        ref.bias.copy_(torch.randn(NF, generator=g))
    lit = BatchRenorm(NF, momentum=MOMENTUM, eps=1e-3, warmup_steps=warmup_steps)
    ref.to(dtype), lit.to(dtype)
    copy_into_lit(batch_renorm_pairs("bn", ref, lit))
    return ref, lit


def batch(step: int, *lead: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Inputs of step ``step``; steps 8 and 9 come from a shifted, rescaled distribution so that r and d clip."""
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(*lead, B, NF, generator=g) * STD + MEAN
    if step in (8, 9):
        x = x * torch.tensor([40.0, 0.05, 0.1, 8.0, 1.0]) + torch.tensor([0.0, 0.5, -9.0, 3.0, 12.0])
    return x.to(dtype)


def forward_backward(layer: torch.nn.Module, x: torch.Tensor, upstream: torch.Tensor):
    """Output, input gradient and affine-parameter gradients of ``sum(layer(x) * upstream)``."""
    x = x.clone().requires_grad_(True)
    params = [layer.scale, layer.bias] if isinstance(layer, BatchRenorm1d) else [layer.weight, layer.bias]
    out = layer(x)
    grads = torch.autograd.grad((out * upstream).sum(), [x, *params])
    return out.detach(), grads


@DTYPES
@pytest.mark.parametrize("warmup_steps", [3, 1_000], ids=["renorm_after_3", "warmup_only"])
def test_train_and_eval_match_reference_over_steps(warmup_steps, dtype):
    tol, grad_tol = TOL[dtype], GRAD_TOL[dtype]
    ref, lit = make_pair(warmup_steps, dtype=dtype)
    pairs = batch_renorm_pairs("bn", ref, lit)
    for step in range(10):
        x = batch(step, dtype=dtype)
        upstream = torch.randn(B, NF, generator=torch.Generator().manual_seed(step)).to(dtype)
        ref.train(), lit.train()
        out_ref, (gx_ref, gw_ref, gb_ref) = forward_backward(ref, x, upstream)
        out_lit, (gx_lit, gw_lit, gb_lit) = forward_backward(lit, x, upstream)
        torch.testing.assert_close(out_lit, out_ref, **tol, msg=lambda m, s=step: f"train output, step {s}\n{m}")
        for name, g_lit, g_ref in [("input", gx_lit, gx_ref), ("weight", gw_lit, gw_ref), ("bias", gb_lit, gb_ref)]:
            torch.testing.assert_close(
                g_lit, g_ref, **grad_tol, msg=lambda m, s=step, n=name: f"{n} gradient, step {s}\n{m}"
            )
        assert_pairs_close(pairs, **tol, when=f"after train step {step}")

        # Eval mode: running statistics, and nothing changes.
        ref.eval(), lit.eval()
        x_eval = batch(50 + step, dtype=dtype)
        torch.testing.assert_close(lit(x_eval), ref(x_eval), **tol)
        assert_pairs_close(pairs, **tol, when=f"after eval forward {step}")
    assert int(lit.steps) == 10


def test_the_renorm_case_differs_from_plain_batch_norm():
    """The comparison above past warm-up can fail: there, renorm's output is far from plain batch norm's."""
    renorm, _ = make_pair(warmup_steps=3)
    plain, _ = make_pair(warmup_steps=1_000)
    gaps = []
    for step in range(10):
        x = batch(step)
        with torch.no_grad():
            gaps.append(float((renorm(x) - plain(x)).abs().max()))
    assert max(gaps[:4]) == 0.0  # steps 0..3: warm-up, identical
    assert min(gaps[4:]) > 1e-3, gaps


@DTYPES
def test_ensemble_matches_independent_reference_layers(dtype):
    """ensemble_size=2: each member is its own BatchRenorm1d, with its own statistics and inputs."""
    tol, grad_tol = TOL[dtype], GRAD_TOL[dtype]
    refs = [make_pair(3, seed=k, dtype=dtype)[0] for k in range(2)]
    lit = BatchRenorm(NF, momentum=MOMENTUM, eps=1e-3, warmup_steps=3, ensemble_size=2).to(dtype)
    pairs = [p for k, ref in enumerate(refs) for p in batch_renorm_pairs(f"bn[{k}]", ref, lit, member=k)]
    copy_into_lit(pairs)
    for step in range(10):
        # Members get different data (3-D input) on even steps, the same broadcast batch (2-D input) on odd ones.
        x = batch(step, 2, dtype=dtype) * torch.tensor([1.0, 3.0], dtype=dtype).view(2, 1, 1)
        if step % 2:
            x = batch(step, dtype=dtype)
        upstream = torch.randn(2, B, NF, generator=torch.Generator().manual_seed(step)).to(dtype)
        lit.train()
        x_lit = x.clone().requires_grad_(True)
        out_lit = lit(x_lit)
        (out_lit * upstream).sum().backward()
        ref_input_grads = []
        for k, ref in enumerate(refs):
            ref.train()
            x_ref = (x[k] if x.dim() == 3 else x).clone().requires_grad_(True)
            out_ref = ref(x_ref)
            (out_ref * upstream[k]).sum().backward()
            torch.testing.assert_close(out_lit[k].detach(), out_ref.detach(), **tol)
            torch.testing.assert_close(lit.weight.grad[k, 0], ref.scale.grad, **grad_tol)
            torch.testing.assert_close(lit.bias.grad[k, 0], ref.bias.grad, **grad_tol)
            ref_input_grads.append(x_ref.grad)
            ref.scale.grad = ref.bias.grad = None
        # A broadcast 2-D input feeds every member: its gradient is the sum of the members'.
        expected = torch.stack(ref_input_grads) if x.dim() == 3 else sum(ref_input_grads)
        torch.testing.assert_close(x_lit.grad, expected, **grad_tol)
        lit.weight.grad = lit.bias.grad = None
        assert_pairs_close(pairs, **tol, when=f"after step {step}")
    assert not torch.allclose(lit.running_mean[0], lit.running_mean[1])

    lit.eval()
    x = batch(99, 2, dtype=dtype)
    out = lit(x)
    for k, ref in enumerate(refs):
        ref.eval()
        torch.testing.assert_close(out[k], ref(x[k]), **tol)
