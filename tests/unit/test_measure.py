"""lit_rl.utils.measure: timers, time shares, and an update's matrix products against torch's FLOP counter."""

from __future__ import annotations

import math
import time

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lit_rl.utils.measure import Timers, count_matmuls, matmul_seconds, roofline, time_shares


def test_time_shares_split_collection_and_leave_the_rest_to_lightning():
    seconds = {"collect": 3.0, "act": 1.0, "buffer_add": 0.5, "env": 1.0, "update": 5.0, "sample": 0.5, "logging": 0.2}
    assert time_shares(seconds, 10.0) == pytest.approx(
        {"update": 0.5, "sample": 0.05, "act": 0.1, "buffer_add": 0.05, "env": 0.1, "collect_other": 0.05,
         "logging": 0.02, "lightning": 0.13}
    )  # fmt: skip
    # Without an env timer, the collector's remainder is counted as env stepping.
    untimed = time_shares({"collect": 3.0, "act": 1.0, "buffer_add": 0.5}, 10.0)
    assert untimed["env"] == pytest.approx(0.15) and untimed["collect_other"] == 0.0


def test_timers_count_calls_and_seconds_without_touching_the_class():
    class Env:
        def step(self, n: float) -> float:
            time.sleep(n)
            return n

    env, timers = Env(), Timers()
    timers.wrap(env, "step", "env")
    assert env.step(0.01) == 0.01 and env.step(0.0) == 0.0
    seconds, calls = timers.snapshot()
    assert calls == {"env": 2} and seconds["env"] >= 0.01
    assert "step" in vars(env) and vars(Env)["step"].__qualname__.endswith("Env.step")  # the class is untouched
    assert Env().step(0.0) == 0.0 and timers.calls["env"] == 2


def test_count_matmuls_records_every_product_torch_counts():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(17, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    x = torch.randn(32, 17)
    weights = torch.randn(2, 64, 64)  # a batched (twin-critic style) product too

    def update() -> None:
        h = net[0](x)
        (net[2](torch.relu(h)).sum() + torch.bmm(h.expand(2, 32, 64), weights).sum()).backward()

    count = count_matmuls(update)
    with FlopCounterMode(display=False) as reference:
        update()
    assert count.flops == reference.get_total_flops()
    assert count.matmul_flops == count.flops  # an MLP's FLOPs are its matrix products
    forward = 2 * 32 * (17 * 64 + 64 * 1) + 2 * 2 * 32 * 64 * 64
    assert count.flops > 2 * forward  # backward adds the input and weight gradients
    ops = {c.op.overloadpacket.__name__ for c in count.calls}
    assert {"addmm", "mm", "bmm"} <= ops
    assert any("32x17 @ 17x64" in s for s in count.shapes())
    # Backward multiplies transposed views: the recorded strides keep that layout for the replay.
    assert any(a.stride != tuple(torch.empty(a.shape).stride()) for c in count.calls for a in c.args[:3]
               if hasattr(a, "stride"))  # fmt: skip


def test_roofline_is_the_replayed_matmul_time_over_the_update_time():
    a, b = torch.randn(128, 256), torch.randn(256, 256)
    count = count_matmuls(lambda: a @ b)
    assert matmul_seconds(count.calls, "cpu", seconds=0.05) > 0

    def update() -> None:  # the same product four times: the bound is a quarter of it
        for _ in range(4):
            a @ b

    roof = roofline(count, update, device="cpu", seconds=0.2)
    assert roof["gflop"] == pytest.approx(2 * 128 * 256 * 256 / 1e9)
    assert 10 < roof["pct_of_bound"] < 60  # timed, so near 25%, not exactly
    assert roof["gflops_per_s"] == pytest.approx(roof["gflop"] / roof["seconds"])
    assert roof["mm_gflops_per_s"] == pytest.approx(roof["matmul_gflop"] / roof["mm_seconds"])
    nothing = roofline(count_matmuls(lambda: None), lambda: None, "cpu", 0.01)
    assert math.isnan(nothing["mm_gflops_per_s"]) and nothing["pct_of_bound"] == 0.0
