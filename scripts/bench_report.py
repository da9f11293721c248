"""Tables and targets of ``scripts/bench.py``: the CPU line, the roofline table, the time-share table, the targets."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lit_rl.utils.machine import BF16_FLAGS, cpu_model_and_flags

# The speed targets. CPU: the update's share of the torch.mm bound, time outside the update and Lightning's
# share of a step, faster than SB3 in the same run. GPU: env steps/s at one env, and the gain of many envs.
BOUND_TARGET_PCT = {"crossq": 85.0, "sac": 70.0, "td3": 70.0}
# Compiled and learn() targets: the compiled whole step against the bound and SB3; learn() (eager) against SB3.
COMPILED_BOUND_TARGET_PCT = {"crossq": 90.0, "sac": 70.0, "td3": 75.0}
COMPILED_SB3_TARGET = {"sac": 2.0, "td3": 2.0}
LEARN_SB3_TARGET = {"sac": 1.5, "td3": 1.5}
# Compiled bf16 learn() against SBX (SB3's API in JAX) in the same run: targets for CPUs with AMX (bf16 tiles).
LEARN_SBX_TARGET = {"sac": 2.0, "td3": 2.0, "crossq": 2.5}
AMX_NOTE = "a target for AMX CPUs; this CPU has no amx_bf16, so the figure is what bf16 gives here"
OUTSIDE_UPDATE_TARGET_PCT = 10.0
LIGHTNING_TARGET_PCT = 2.0
GPU_FPS_TARGET = 1000.0
GPU_VEC_GAIN_TARGET = 4.0


def row_key(r: dict[str, Any]) -> str:
    variant = "".join(f"+{v}" for v in ("compiled", "bf16", "learn") if r.get(v))
    return f"{r['lib']}/{r['algo']}{variant}/{r['device']}/n_envs={r['n_envs']}"


def failed(r: dict[str, Any] | None) -> str | None:
    """Why a row has no figures (its error or the reason it was skipped), or None when it measured."""
    if r is None:
        return None
    return r.get("error") or r.get("skipped")


def cpu_info() -> dict[str, Any]:
    """The CPU model and its bf16 flags (:func:`lit_rl.utils.machine.cpu_model_and_flags`)."""
    model, present = cpu_model_and_flags()
    return {"model": model, "cpus": os.cpu_count(), "flags": {f: f in present for f in BF16_FLAGS}}


def cpu_line(cpu: dict[str, Any]) -> str:
    """``CPU: <model> (<n> CPUs); bf16 flags: amx_bf16 no, avx512_bf16 yes``."""
    flags = ", ".join(f"{f} {'yes' if cpu['flags'].get(f) else 'no'}" for f in BF16_FLAGS)
    return f"CPU: {cpu['model']} ({cpu['cpus']} CPUs); bf16 flags: {flags}"


def _target(text: str, value: float, passed: bool) -> dict[str, Any]:
    return {"target": text, "value": round(value, 2), "passed": bool(passed)}


def _not_measured(text: str, reason: str) -> dict[str, Any]:
    return {"target": text, "value": None, "passed": None, "note": f"not measured: {reason}"}


def check_targets(results: list[dict[str, Any]], cpu: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The speed targets, each with the measured figure and pass/fail.

    Targets of rows that were not planned are left out; a learn() target whose row or peer failed or was
    skipped is listed as not measured, with the reason. With ``cpu`` (:func:`cpu_info`), a bf16 target on a
    CPU without AMX says that it is one for AMX CPUs.
    """
    by_key = {row_key(r): r for r in results}
    checks = []
    for r in results:
        if r["lib"] != "lit_rl":
            continue
        algo, device = r["algo"], r["device"]
        name = algo + ("+compiled" if r.get("compiled") else "")  # targets are checked for both variants
        sb3 = by_key.get(f"sb3/{algo}/cpu/n_envs=1")
        if r.get("learn"):
            checks += learn_targets(r, sb3, by_key.get(f"sbx/{algo}/cpu/n_envs=1"), cpu)
            continue
        if failed(r) is not None:
            continue
        sb3 = None if failed(sb3) is not None else sb3
        single = by_key.get(f"lit_rl/{name}/{device}/n_envs=1")
        if r["n_envs"] > 1:
            if single is None or failed(single) is not None:
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


def _against(r: dict[str, Any], peer: dict[str, Any] | None, peer_name: str, text: str, goal: float) -> dict[str, Any]:
    """``r``'s env steps/s over ``peer``'s against ``goal``, or why that cannot be measured."""
    why = failed(r) or (f"no {peer_name} row in this run" if peer is None else f"{peer_name}: {failed(peer)}")
    if failed(r) is not None or peer is None or failed(peer) is not None:
        return _not_measured(text, why or "")
    ratio = r["fps"] / peer["fps"]
    return _target(text, ratio, ratio >= goal)


def learn_targets(r: dict[str, Any], sb3: dict[str, Any] | None, sbx: dict[str, Any] | None = None,
                  cpu: dict[str, Any] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """A learn() row's targets: eager fp32 against SB3 and its time outside the update; compiled bf16 against SBX."""
    algo, checks = r["algo"], []
    name = algo + "".join(f"+{v}" for v in ("compiled", "bf16") if r.get(v)) + "+learn"
    if not r.get("compiled") and not r.get("bf16") and algo in LEARN_SB3_TARGET:
        text = f"{name}/cpu: time outside the update <= {OUTSIDE_UPDATE_TARGET_PCT:g}% of a step"
        if failed(r) is None:
            outside = 100.0 * r["outside_update_share"]
            checks.append(_target(text, outside, outside <= OUTSIDE_UPDATE_TARGET_PCT))
        else:
            checks.append(_not_measured(text, failed(r) or ""))
        goal = LEARN_SB3_TARGET[algo]
        text = f"{name}/cpu: eager learn() >= {goal:g}x SB3 in the same run"
        if sb3 is not None or failed(r) is not None:
            checks.append(_against(r, sb3, "SB3", text, goal))
    if r.get("compiled") and r.get("bf16") and algo in LEARN_SBX_TARGET:
        goal = LEARN_SBX_TARGET[algo]
        check = _against(r, sbx, "SBX", f"{name}/cpu: compiled bf16 learn() >= {goal:g}x SBX in the same run", goal)
        check["amx_target"] = True
        if cpu is not None and not cpu["flags"].get("amx_bf16"):
            check["note"] = (check.get("note", "") + "; " if "note" in check else "") + AMX_NOTE
        checks.append(check)
    return checks


def _num(v: Any, fmt: str) -> str:
    width = int(fmt.split(".")[0].rstrip("df"))
    return format(v, fmt) if isinstance(v, (int, float)) and v == v else "-".rjust(width)


def _pct(shares: dict[str, float], k: str, width: int = 6) -> str:
    v = shares.get(k)
    return (f"{100 * v:.1f}%" if v is not None else "-").rjust(width)


ROW = 47  # width of the run column: "lit_rl/crossq+compiled+bf16+learn/cpu/n_envs=16"


def format_roofline_table(results: list[dict[str, Any]]) -> str:
    """Speed, the update against the ``torch.mm`` bounds, memory: one row per measurement."""
    peers = {f"{r['lib']}/{r['algo']}/{r['device']}": r["fps"] for r in results
             if r["lib"] in ("sb3", "sbx") and failed(r) is None}  # fmt: skip
    header = (f"{'run':{ROW}} {'steps/s':>8} {'x SB3':>6} {'x SBX':>6} {'bare':>8} {'L.ovh%':>7} {'upd ms':>7} "
              f"{'GFLOP':>7} {'GFLOP/s':>8} {'mm GF/s':>8} {'bf16 mm':>8} {'%bound':>7} {'out ms':>7} {'RSS MiB':>8} "
              f"{'B/tr':>5}")  # fmt: skip
    lines = [header, "-" * len(header)]
    for r in results:
        if r.get("skipped"):
            lines.append(f"{row_key(r):{ROW}} SKIPPED {r['skipped'][:160]}")
            continue
        if "error" in r:
            lines.append(f"{row_key(r):{ROW}} ERROR {r['error'][:160]}")
            continue
        mine = r["lib"] == "lit_rl" and r["n_envs"] == 1
        sb3, sbx = (peers.get(f"{lib}/{r['algo']}/{r['device']}") if mine else None for lib in ("sb3", "sbx"))
        bound = r.get("pct_of_compute_bound")
        lines.append(
            f"{row_key(r):{ROW}} {r['fps']:8.1f} {_num(r['fps'] / sb3 if sb3 else None, '6.2f')} "
            f"{_num(r['fps'] / sbx if sbx else None, '6.2f')} "
            f"{_num(r.get('fps_bare'), '8.1f')} {_num(r.get('lightning_overhead_pct'), '7.1f')} "
            f"{_num(r.get('update_ms'), '7.2f')} {_num(r.get('update_gflop'), '7.3f')} "
            f"{_num(r.get('update_gflops_per_s'), '8.1f')} {_num(r.get('matmul_gflops_per_s'), '8.1f')} "
            f"{_num(r.get('matmul_bf16_gflops_per_s'), '8.1f')} "
            f"{_num(bound, '6.1f')}{'b' if r.get('compute_bound') == 'bf16' and bound is not None else ' '} "
            f"{_num(r.get('outside_update_ms_per_step'), '7.2f')} "
            f"{_num(r.get('peak_rss_mib'), '8.0f')} {_num(r.get('buffer_bytes_per_transition'), '5d')}"
        )
    return "\n".join(lines)


SHARE_COLUMNS = {"update": "update", "sample": "sample", "act": "act", "buffer_add": "add", "env": "env",
                 "collect_other": "collect", "logging": "logging", "lightning": "Lightn."}  # fmt: skip


def format_share_table(results: list[dict[str, Any]]) -> str:
    """Where a step's wall time goes, in shares; everything but ``update`` is time outside the update."""
    header = f"{'run':{ROW}} " + " ".join(f"{c:>7}" for c in SHARE_COLUMNS.values()) + f" {'outside':>8}"
    lines = [header, "-" * len(header)]
    for r in results:
        if failed(r) is not None:
            continue
        s = r.get("shares", {})
        cells = " ".join(_pct(s, k, 7) for k in SHARE_COLUMNS)
        lines.append(f"{row_key(r):{ROW}} {cells} {_num(100 * r.get('outside_update_share', float('nan')), '7.1f')}%")
    return "\n".join(lines)


def format_targets(targets: list[dict[str, Any]]) -> str:
    """The targets, one a line: met / not met / not measured, the target, its figure and any note."""
    lines = []
    for t in targets:
        status = "not measured" if t["passed"] is None else "met" if t["passed"] else "not met"
        figure = "" if t["value"] is None else f": {t['value']}"
        note = f"  ({t['note']})" if t.get("note") else ""
        lines.append(f"  [{status}] {t['target']}{figure}{note}")
    return "\n".join(lines)


def format_peers(results: list[dict[str, Any]]) -> str:
    """The SBX rows' side-by-side check against SB3's hyperparameters, and their XLA settings."""
    lines = []
    for r in results:
        if r["lib"] != "sbx" or failed(r) is not None:
            continue
        differ = r.get("hyperparameters_differ", {})
        same = "same as SB3's" if not differ else "differ from SB3's: " + ", ".join(
            f"{k} SB3 {v[0]} / SBX {v[1]}" for k, v in differ.items())  # fmt: skip
        lines.append(f"  {row_key(r)}: hyperparameters {same}; XLA_FLAGS={r.get('xla_flags', '')!r}, "
                     f"torch threads {r.get('torch_threads')}")  # fmt: skip
    return "\n".join(lines)


def format_bf16(results: list[dict[str, Any]], cpu: dict[str, Any]) -> str:
    """What bf16 gives on this CPU: bf16 learn() rows over their fp32 twins, and the products' bf16/fp32 rate."""
    rows = {row_key(r): r for r in results if failed(r) is None}
    lines = []
    for r in results:
        if not r.get("bf16"):
            continue
        twin = rows.get(row_key({**r, "bf16": False}))
        label = f"  {row_key(r)}:"
        if failed(r) is not None:
            lines.append(f"{label} not measured ({failed(r)})")
            continue
        speed = f"{r['fps'] / twin['fps']:.2f}x the env steps/s of fp32" if twin else "no fp32 twin in this run"
        rate = r.get("matmul_bf16_gflops_per_s", float("nan")) / r.get("matmul_gflops_per_s", float("nan"))
        lines.append(f"{label} {speed}; its products {rate:.2f}x as fast in bf16 as in fp32")
    if not lines:
        return ""
    where = "with AMX" if cpu["flags"].get("amx_bf16") else "without AMX (the bf16 targets are for AMX CPUs)"
    return f"bf16 on this CPU, {where}:\n" + "\n".join(lines)


def format_report(
    results: list[dict[str, Any]], targets: list[dict[str, Any]], cpu: dict[str, Any] | None = None
) -> str:
    """Everything ``make bench`` prints after the runs, headed by the CPU model and its bf16 flags."""
    cpu = cpu or cpu_info()
    parts = [
        cpu_line(cpu),
        "",
        format_roofline_table(results),
        "\nGFLOP: one update (FlopCounterMode); GFLOP/s: achieved in the update; mm GF/s / bf16 mm: torch.mm/addmm of "
        "the update's own shapes in fp32 / bf16 on the same threads;\n%bound: that matmul time / the update's time "
        "(b: against the bf16 bound); out ms: time outside the update per env step; L.ovh%: 1 - Trainer/bare steps/s",
        "",
        format_share_table(results),
        "\nshares of Trainer wall time; collect: the collector's own Python; Lightn.: the rest (Lightning loop, "
        "bookkeeping)",
    ]  # fmt: skip
    for section in (format_peers(results), format_bf16(results, cpu)):
        if section:
            parts += ["", section if section.startswith("bf16") else "SBX (SB3's API in JAX):\n" + section]
    parts += ["", "speed targets:", format_targets(targets)]
    return "\n".join(parts)


def compare(results: list[dict[str, Any]], old_path: Path) -> str:
    """Env steps/s of this run against an earlier JSON, row by row."""
    old = {row_key(r): r for r in json.loads(old_path.read_text())["results"] if failed(r) is None}
    lines = [f"against {old_path}:"]
    for r in results:
        before = old.get(row_key(r))
        if before and failed(r) is None:
            lines.append(
                f"  {row_key(r):{ROW}} {before['fps']:8.1f} -> {r['fps']:8.1f}  ({r['fps'] / before['fps']:.2f}x)"
            )
    return "\n".join(lines)
