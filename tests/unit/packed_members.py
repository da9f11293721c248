"""Comparing a pack's members with the same models stepped alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def assert_members_equal_their_own(members: Sequence[Any], own: Sequence[Any], initial: Sequence[dict], atol: float,
                                   moved_groups: Sequence[str]) -> None:  # fmt: skip
    """Every tensor of each packed member's ``state_dict`` within rtol 1e-5 / ``atol`` of its own model's, and in
    each own model some tensor of every ``moved_groups`` (a name fragment) changed from ``initial`` (the test saw
    those networks move)."""
    for i, (member, alone) in enumerate(zip(members, own, strict=True)):
        packed_state, own_state = member.state_dict(), alone.state_dict()
        assert packed_state.keys() == own_state.keys()
        for name, value in own_state.items():
            torch.testing.assert_close(packed_state[name], value, rtol=1e-5, atol=atol, msg=f"member {i}: {name}")
        moved = [n for n, v in own_state.items() if v.is_floating_point() and not torch.equal(v, initial[i][n])]
        assert all(any(group in n for n in moved) for group in moved_groups), moved
