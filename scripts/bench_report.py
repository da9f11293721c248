"""Tables and targets of ``scripts/bench.py``: the roofline table, the time-share table, the speed targets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The speed targets. CPU: the update's share of the torch.mm bound, time outside the update and Lightning's
# share of a step, faster than SB3 in the same run. GPU: env steps/s at one env, and the gain of many envs.
BOUND_TARGET_PCT = {"crossq": 85.0, "sac": 70.0, "td3": 70.0}
# Compiled and learn() targets: the compiled whole step against the bound and SB3; learn() (eager) against SB3.
COMPILED_BOUND_TARGET_PCT = {"crossq": 90.0, "sac": 70.0, "td3": 75.0}
COMPILED_SB3_TARGET = {"sac": 2.0, "td3": 2.0}
LEARN_SB3_TARGET = {"sac": 1.5, "td3": 1.5}
OUTSIDE_UPDATE_TARGET_PCT = 10.0
LIGHTNING_TARGET_PCT = 2.0
GPU_FPS_TARGET = 1000.0
GPU_VEC_GAIN_TARGET = 4.0


def row_key(r: dict[str, Any]) -> str:
    variant = ("+compiled" if r.get("compiled") else "") + ("+learn" if r.get("learn") else "")
    return f"{r['lib']}/{r['algo']}{variant}/{r['device']}/n_envs={r['n_envs']}"


def _target(text: str, value: float, passed: bool) -> dict[str, Any]:
    return {"target": text, "value": round(value, 2), "passed": bool(passed)}


def check_targets(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The speed targets, each with the measured figure and pass/fail; targets without a measurement are left out."""
    ok = [r for r in results if "error" not in r]
    by_key = {row_key(r): r for r in ok}
    checks = []
    for r in ok:
        if r["lib"] != "lit_rl":
            continue
        algo, device = r["algo"], r["device"]
        name = algo + ("+compiled" if r.get("compiled") else "")  # targets are checked for both variants
        sb3 = by_key.get(f"sb3/{algo}/cpu/n_envs=1")
        if r.get("learn"):
            checks += learn_targets(r, sb3)
            continue
        single = by_key.get(f"lit_rl/{name}/{device}/n_envs=1")
        if r["n_envs"] > 1:
            if single is None:
                continue
            gain = r["fps"] / single["fps"]
            if device == "cuda":
                text = f"{name}/cuda: n_envs={r['n_envs']} > {GPU_VEC_GAIN_TARGET:g}x the env steps/s of n_envs=1"
                checks.append(_target(text, gain, gain > GPU_VEC_GAIN_TARGET))
            else:
                text = f"{name}/{device}: n_envs={r['n_envs']} {r['vectorization']} faster than n_envs=1"
                checks.append(_target(text, gain, gain > 1.0))
            continue
        if device == "cuda":
            text = f"{name}/cuda: >= {GPU_FPS_TARGET:g} env steps/s at 1 env"
            checks.append(_target(text, r["fps"], r["fps"] >= GPU_FPS_TARGET))
            continue
        bound = r.get("pct_of_compute_bound")
        goals = COMPILED_BOUND_TARGET_PCT if r.get("compiled") else BOUND_TARGET_PCT
        if bound is not None and algo in goals:  # network-option rows have no target of their own
            goal = goals[algo]
            checks.append(_target(f"{name}/cpu: update >= {goal:g}% of compute bound", bound, bound >= goal))
        outside = 100.0 * r.get("outside_update_share", 1.0 - r["shares"].get("update", float("nan")))
        text = f"{name}/cpu: time outside the update <= {OUTSIDE_UPDATE_TARGET_PCT:g}% of a step"
        checks.append(_target(text, outside, outside <= OUTSIDE_UPDATE_TARGET_PCT))
        # Measured inside the Trainer run (the time outside every timed call), so it holds on a busy machine;
        # the Trainer/bare comparison of two runs moves with the load and is shown for reference.
        lightning = 100.0 * r["shares"].get("lightning", r["shares"].get("framework", float("nan")))
        text = (f"{name}/cpu: Lightning <= {LIGHTNING_TARGET_PCT:g}% of a step "
                f"(Trainer/bare: {r.get('lightning_overhead_pct', float('nan')):.1f}%)")  # fmt: skip
        checks.append(_target(text, lightning, lightning <= LIGHTNING_TARGET_PCT))
        if sb3:
            ratio = r["fps"] / sb3["fps"]
            checks.append(_target(f"{name}/cpu: faster than SB3 in the same run (x SB3)", ratio, ratio > 1.0))
            if r.get("compiled") and algo in COMPILED_SB3_TARGET:
                goal = COMPILED_SB3_TARGET[algo]
                checks.append(_target(f"{name}/cpu: >= {goal:g}x SB3 in the same run", ratio, ratio >= goal))
            mine, theirs = r["buffer_bytes_per_transition"], sb3["buffer_bytes_per_transition"]
            if not r.get("compiled"):  # the same buffer either way
                checks.append(_target(f"{algo}: buffer bytes/transition <= SB3 ({theirs})", mine, mine <= theirs))
    return checks


def learn_targets(r: dict[str, Any], sb3: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A learn() row's targets: the time outside the update, and its speed against the SB3 row."""
    name = f"{r['algo']}+learn"
    outside = 100.0 * r["outside_update_share"]
    text = f"{name}/cpu: time outside the update <= {OUTSIDE_UPDATE_TARGET_PCT:g}% of a step"
    checks = [_target(text, outside, outside <= OUTSIDE_UPDATE_TARGET_PCT)] if r["algo"] in LEARN_SB3_TARGET else []
    if sb3 and r["algo"] in LEARN_SB3_TARGET:
        ratio, goal = r["fps"] / sb3["fps"], LEARN_SB3_TARGET[r["algo"]]
        checks.append(_target(f"{name}/cpu: eager learn() >= {goal:g}x SB3 in the same run", ratio, ratio >= goal))
    return checks


def _num(v: Any, fmt: str) -> str:
    width = int(fmt.split(".")[0].rstrip("df"))
    return format(v, fmt) if isinstance(v, (int, float)) and v == v else "-".rjust(width)


def _pct(shares: dict[str, float], k: str, width: int = 6) -> str:
    v = shares.get(k)
    return (f"{100 * v:.1f}%" if v is not None else "-").rjust(width)


def format_roofline_table(results: list[dict[str, Any]]) -> str:
    """Speed, the update against the ``torch.mm`` bound, memory: one row per measurement."""
    sb3 = {f"{r['algo']}/{r['device']}": r["fps"] for r in results if r["lib"] == "sb3" and "error" not in r}
    header = (f"{'run':34} {'steps/s':>8} {'x SB3':>6} {'bare':>8} {'L.ovh%':>7} {'upd ms':>7} {'GFLOP':>7} "
              f"{'GFLOP/s':>8} {'mm GF/s':>8} {'%bound':>7} {'out ms':>7} {'RSS MiB':>8} {'B/tr':>5}")  # fmt: skip
    lines = [header, "-" * len(header)]
    for r in results:
        if "error" in r:
            lines.append(f"{row_key(r):34} ERROR {r['error'][:100]}")
            continue
        theirs = sb3.get(f"{r['algo']}/{r['device']}") if r["lib"] == "lit_rl" and r["n_envs"] == 1 else None
        lines.append(
            f"{row_key(r):34} {r['fps']:8.1f} {_num(r['fps'] / theirs if theirs else None, '6.2f')} "
            f"{_num(r.get('fps_bare'), '8.1f')} {_num(r.get('lightning_overhead_pct'), '7.1f')} "
            f"{_num(r.get('update_ms'), '7.2f')} {_num(r.get('update_gflop'), '7.3f')} "
            f"{_num(r.get('update_gflops_per_s'), '8.1f')} {_num(r.get('matmul_gflops_per_s'), '8.1f')} "
            f"{_num(r.get('pct_of_compute_bound'), '7.1f')} {_num(r.get('outside_update_ms_per_step'), '7.2f')} "
            f"{_num(r.get('peak_rss_mib'), '8.0f')} {_num(r.get('buffer_bytes_per_transition'), '5d')}"
        )
    return "\n".join(lines)


SHARE_COLUMNS = {"update": "update", "sample": "sample", "act": "act", "buffer_add": "add", "env": "env",
                 "collect_other": "collect", "logging": "logging", "lightning": "Lightn."}  # fmt: skip


def format_share_table(results: list[dict[str, Any]]) -> str:
    """Where a step's wall time goes, in shares; everything but ``update`` is time outside the update."""
    header = f"{'run':34} " + " ".join(f"{c:>7}" for c in SHARE_COLUMNS.values()) + f" {'outside':>8}"
    lines = [header, "-" * len(header)]
    for r in results:
        if "error" in r:
            continue
        s = r.get("shares", {})
        cells = " ".join(_pct(s, k, 7) for k in SHARE_COLUMNS)
        lines.append(f"{row_key(r):34} {cells} {_num(100 * r.get('outside_update_share', float('nan')), '7.1f')}%")
    return "\n".join(lines)


def format_targets(targets: list[dict[str, Any]]) -> str:
    """The targets as ``[PASS]``/``[FAIL]`` lines with their figure."""
    return "\n".join(f"  [{'PASS' if t['passed'] else 'FAIL'}] {t['target']}: {t['value']}" for t in targets)


def format_report(results: list[dict[str, Any]], targets: list[dict[str, Any]]) -> str:
    """Everything ``make bench`` prints after the runs."""
    return "\n".join([
        format_roofline_table(results),
        "\nGFLOP: one update (FlopCounterMode); GFLOP/s: achieved in the update; mm GF/s: torch.mm/addmm of the "
        "update's own shapes on the same threads;\n%bound: that matmul time / the update's time; out ms: time outside "
        "the update per env step; L.ovh%: 1 - Trainer/bare steps/s",
        "",
        format_share_table(results),
        "\nshares of Trainer wall time; collect: the collector's own Python; Lightn.: the rest (Lightning loop, "
        "bookkeeping)",
        "",
        "speed targets:",
        format_targets(targets),
    ])  # fmt: skip


def compare(results: list[dict[str, Any]], old_path: Path) -> str:
    """Env steps/s of this run against an earlier JSON, row by row."""
    old = {row_key(r): r for r in json.loads(old_path.read_text())["results"] if "error" not in r}
    lines = [f"against {old_path}:"]
    for r in results:
        before = old.get(row_key(r))
        if before and "error" not in r:
            lines.append(
                f"  {row_key(r):34} {before['fps']:8.1f} -> {r['fps']:8.1f}  ({r['fps'] / before['fps']:.2f}x)"
            )
    return "\n".join(lines)
