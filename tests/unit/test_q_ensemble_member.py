"""QEnsemble.member_forward: one critic of a fused ensemble, same values and gradients as forward()[i]."""

from __future__ import annotations

import pytest
import torch

from lit_rl.nets.critics import QEnsemble


@pytest.mark.parametrize("index", [0, 1, 2])
def test_member_forward_equals_the_member_of_forward(index):
    torch.manual_seed(0)
    critic = QEnsemble(5, 2, [16, 8], n_critics=3)
    obs, actions = torch.randn(7, 5), torch.randn(7, 2, requires_grad=True)
    expected = critic(obs, actions)[index]
    (expected_grad,) = torch.autograd.grad(expected.sum(), actions)
    got = critic.member_forward(obs, actions, index)
    (got_grad,) = torch.autograd.grad(got.sum(), actions)
    assert got.shape == (7,)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(got_grad, expected_grad)


def test_member_forward_leaves_the_other_members_without_gradient():
    torch.manual_seed(0)
    critic = QEnsemble(5, 2, [16], n_critics=2)
    critic.member_forward(torch.randn(4, 5), torch.randn(4, 2), 0).sum().backward()
    for p in critic.parameters():
        assert p.grad is not None
        assert p.grad[1].abs().sum() == 0 and p.grad[0].abs().sum() > 0


def test_member_forward_refuses_batch_renorm():
    critic = QEnsemble(5, 2, [16], n_critics=2, batch_norm={"momentum": 0.01, "eps": 1e-3, "warmup_steps": 10})
    with pytest.raises(NotImplementedError, match="BatchRenorm"):
        critic.member_forward(torch.randn(4, 5), torch.randn(4, 2), 0)
