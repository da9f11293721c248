"""make_adam: the fused Adam kernel where available, with the same updates as torch's default Adam."""

from __future__ import annotations

import torch

from lit_rl.core.optimizers import make_adam


def test_make_adam_is_fused_on_cpu_and_matches_default_adam():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    alpha = torch.nn.Parameter(torch.tensor(0.3))  # a 0-dim parameter, as the entropy coefficient
    reference = [p.detach().clone().requires_grad_() for p in [*net.parameters(), alpha]]
    fused = make_adam([*net.parameters(), alpha], lr=1e-2, betas=(0.5, 0.999))
    plain = torch.optim.Adam(reference, lr=1e-2, betas=(0.5, 0.999))
    assert fused.defaults["fused"] is True
    assert not plain.defaults["fused"]
    x = torch.randn(64, 6)
    for _ in range(5):
        for opt, params in ((fused, [*net.parameters(), alpha]), (plain, reference)):
            w1, b1, w2, b2, a = params
            loss = (torch.relu(x @ w1.T + b1) @ w2.T + b2).square().mean() + a.square()
            opt.zero_grad()
            loss.backward()
            opt.step()
    for p, q in zip([*net.parameters(), alpha], reference, strict=True):
        torch.testing.assert_close(p, q)
    assert fused.state_dict()["state"][0]["exp_avg"].shape == net[0].weight.shape


def test_make_adam_with_no_parameters_keeps_torch_error():
    try:
        make_adam([], lr=1e-3)
    except ValueError as err:
        assert "empty parameter list" in str(err)
    else:
        raise AssertionError("an empty parameter list must raise")
