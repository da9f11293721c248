"""Run Stable-Baselines3's and sb3-contrib's own tests against lit_rl: SB3 users' code runs unchanged.

    python scripts/sb3_suite.py [--only lit_rl|sb3] [-k EXPR] [--workers N] [--timeout S] [--rebaseline]
                                [--keep-missing] [--report]

1. ``pip download --no-deps --no-binary :all:`` stable-baselines3 and sb3-contrib 2.9.2 into ``outputs/sb3_suite/``
   (ignored by git) and extract their ``tests/`` folders.
2. A copy of those tests gets only the imports of the names in ``LIT_RL_NAMES`` (sb3_suite_rewrite.py) moved to
   lit_rl; everything else (make_vec_env, VecEnvs, envs, evaluate_policy, utils) stays SB3's.
3. The files in ``TEST_FILES`` are collected and sb3_suite_plugin.py keeps the tests that exercise lit_rl's
   algorithms, HER, callbacks and action noises (the rule is in its docstring).
4. pytest runs them once on SB3 itself (the baseline, cached in ``outputs/sb3_suite/baseline.json`` until
   ``--rebaseline``) and once with the swapped imports. The report (stdout, bench/sb3_suite.md, .json) gives the
   counts, "lit_rl passes X of the Y tests SB3 passes", ``KNOWN_INTERNALS`` apart, and the other failures grouped
   by the normalised first line of their exception (a failed assertion adds its source line). A partial run (-k,
   --keep-missing) writes its report to ``outputs/sb3_suite/`` instead of bench/.

The selection is 294 tests (287 SB3, 7 sb3-contrib); SB3 2.9.2 passes 275 and skips 19 (no CUDA, options a test
skips for some algorithms). A hand-picked selection had 263 (245 + 18 skipped); this rule also takes the n-step,
tensorboard and a few VecNormalize/gSDE tests that use SAC/TD3/DQN. Each side takes 8-9 minutes with 2 workers on a
2-core machine. ``--keep-missing`` (a diagnosis) leaves names lit_rl does not export yet on SB3's import.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sb3_suite_rewrite import group_reasons, resolve_targets, rewrite_imports  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "outputs" / "sb3_suite"
PACKAGES = {"sb3": "stable-baselines3==2.9.2", "contrib": "sb3-contrib==2.9.2"}
# Files holding tests of SAC/TD3/DDPG/DQN/CrossQ, HER, callbacks, action noise. Files about SB3's own pieces only
# (rollout buffers, VecEnvs, logger, monitor, env checker, distributions, A2C/PPO, QRDQN/TQC/...) are left out.
TEST_FILES = {
    "sb3": [
        "test_callbacks.py", "test_cnn.py", "test_custom_policy.py", "test_deterministic.py", "test_dict_env.py",
        "test_gae.py", "test_her.py", "test_identity.py", "test_n_step_replay.py", "test_predict.py", "test_run.py",
        "test_save_load.py", "test_sde.py", "test_spaces.py", "test_tensorboard.py", "test_train_eval_mode.py",
        "test_vec_normalize.py",
    ],
    "contrib": ["test_run.py", "test_save_load.py"],
}  # fmt: skip
# Tests that inspect SB3's internals rather than its API; reported apart (and only if SB3 passes them).
KNOWN_INTERNALS: list[tuple[str, str]] = [
    ("sb3/tests/test_her.py::test_truncate_last_trajectory*", "builds SB3's HerReplayBuffer by hand with its private signature (env=, n_envs=) and reads its numpy arrays"),
    ("sb3/tests/test_her.py::test_save_load_replay_buffer*", "after save/load_replay_buffer, compares SB3's numpy arrays (.observations[key][:pos], .dones, .pos)"),
    ("sb3/tests/test_save_load.py::test_save_load_replay_buffer*", "assigns model.device, then reads the buffer as numpy arrays (.observations, .timeouts) and calls its extend()"),
    ("sb3/tests/test_sde.py::test_state_dependent_noise*", "compares the replay buffer's .actions with numpy bounds (SB3's buffer holds numpy arrays, lit_rl's torch tensors)"),
]  # fmt: skip
# Tests that fail by a deliberate difference of lit_rl's (README, Python API); reported apart, each with its reason.
DELIBERATE_DIFFERENCES: list[tuple[str, str]] = [
    ("sb3/tests/test_cnn.py::test_cnn?False-*", "asserts SB3 wrapped the env in VecTransposeImage; lit_rl transposes channel-last images inside the networks"),
    ("sb3/tests/test_n_step_replay.py::test_n_steps_with_dict_obs?None?", "expects SB3's refusal of n-step returns with Dict observations; lit_rl's n-step buffer supports them"),
    ("sb3/tests/test_save_load.py::test_save_load_no_target_params", "expects a warning about DQN files written by SB3 < 2.4 (without target parameters); lit_rl files always have them"),
]  # fmt: skip
OUTCOMES = ("passed", "failed", "error", "skipped")


def fetch_tests() -> dict[str, Path]:
    """Download the two source packages (once) and extract their tests/ and pyproject.toml under CACHE/src."""
    dist, src = CACHE / "dist", CACHE / "src"
    for key, requirement in PACKAGES.items():
        name, version = requirement.split("==")
        if not list(dist.glob(f"{name.replace('-', '_')}-{version}.tar.gz")):
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(dist), requirement],
                check=True,
            )  # fmt: skip
        if not (src / key / "tests").is_dir():
            (tarball,) = dist.glob(f"{name.replace('-', '_')}-{version}.tar.gz")
            with tarfile.open(tarball) as tar:
                members = [m for m in tar.getmembers() if m.isfile() and m.name.split("/")[1] in ("tests", "pyproject.toml")]
                for member in members:
                    member.name = member.name.split("/", 1)[1]
                tar.extractall(src / key, members=members, filter="data")
    return {key: src / key for key in PACKAGES}


def build_tree(side: str, sources: dict[str, Path], keep_missing: bool = False) -> tuple[Path, list[str]]:
    """CACHE/tree/<side>/{sb3,contrib}/tests/: SB3's tests as they are (side sb3) or with lit_rl imports (lit_rl)."""
    tree = CACHE / "tree" / side
    shutil.rmtree(tree, ignore_errors=True)
    targets, missing = resolve_targets() if side == "lit_rl" else ({}, [])
    if keep_missing:  # diagnosis: names lit_rl lacks stay SB3's, so one missing name does not hide a whole file
        targets = {name: module for name, module in targets.items() if name not in missing}
    for key, src in sources.items():
        (tree / key / "tests").mkdir(parents=True)
        for name in TEST_FILES[key]:
            text = (src / "tests" / name).read_text()
            (tree / key / "tests" / name).write_text(rewrite_imports(text, targets)[0] if targets else text)
    shutil.copy(sources["sb3"] / "pyproject.toml", tree / "pyproject.toml")  # SB3's pytest settings (warning filters)
    return tree, missing


def run_side(side: str, sources: dict[str, Path], args) -> dict:
    tree, missing = build_tree(side, sources, args.keep_missing)
    if missing:
        kept = "kept SB3's (--keep-missing)" if args.keep_missing else "imported from lit_rl anyway"
        print(f"[{side}] not exported by lit_rl: {', '.join(missing)}: {kept}", flush=True)
    out, log = CACHE / f"{side}_raw.json", CACHE / f"{side}.log"
    out.unlink(missing_ok=True)  # a killed run must not report the previous run's results
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg", SB3_SUITE_OUT=str(out))
    env["SB3_SUITE_TIMEOUT"] = str(args.timeout)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "sb3_suite_plugin", "--import-mode=importlib"]
    cmd += ["--tb=short", "--continue-on-collection-errors", *(["-n", str(args.workers)] if args.workers > 1 else [])]
    cmd += [*(["-k", args.k] if args.k else []), "sb3/tests", "contrib/tests"]
    print(f"[{side}] running pytest in {tree} (log: {log})", flush=True)
    start = time.monotonic()
    with open(log, "w") as f:
        subprocess.run(cmd, cwd=tree, env=env, stdout=f, stderr=subprocess.STDOUT)
    wall = time.monotonic() - start
    raw = json.loads(out.read_text()) if out.exists() else {"tests": {}, "collect_errors": {"<session>": "no result"}}
    print(f"[{side}] {len(raw['tests'])} tests in {wall:.0f} s", flush=True)
    result = {"side": side, "wall_s": round(wall, 1), "k": args.k, "missing": missing, "keep_missing": args.keep_missing}
    result["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    git = ["git", "-C", str(ROOT), "describe", "--always", "--dirty"]  # lit_rl's state the run measured
    result["commit"] = subprocess.run(git, capture_output=True, text=True).stdout.strip()
    (CACHE / f"{side}_result.json").write_text(json.dumps(result | raw, indent=1, sort_keys=True))
    return result | raw


def counts(tests: dict) -> dict[str, int]:
    return {o: sum(t["outcome"] == o for t in tests.values()) for o in OUTCOMES} | {"total": len(tests)}


def known_internals(broken: dict[str, str], table: list[tuple[str, str]] | None = None) -> list[dict]:
    """One entry per pattern of ``table`` (default KNOWN_INTERNALS) that matches failing tests, with what they fail with."""
    entries = []
    for pattern, reason in KNOWN_INTERNALS if table is None else table:
        tests = {t: m for t, m in broken.items() if fnmatch.fnmatchcase(t, pattern)}
        if tests:
            fails_with = [f"{r} ({n})" for r, n, _ in group_reasons(tests)]
            entries.append({"pattern": pattern, "reason": reason, "tests": sorted(tests), "fails_with": fails_with})
    return entries


def compare(base: dict, lit: dict) -> dict:
    lit_tests = dict(lit["tests"])
    for test_id in base["tests"]:
        if test_id in lit_tests:
            continue
        # a file whose lit_rl imports fail never collects its tests: they count as errors, not as absent
        file_error = next((m for f, m in lit["collect_errors"].items() if test_id.startswith(f)), None)
        if file_error is not None or not lit["k"]:  # with -k, an absent test was deselected
            lit_tests[test_id] = {"outcome": "error", "message": file_error or "not run"}
    sb3_passed = [t for t, r in base["tests"].items() if r["outcome"] == "passed" and t in lit_tests]
    both = [t for t in sb3_passed if lit_tests[t]["outcome"] == "passed"]
    broken = {t: (lit_tests[t]["message"], lit_tests[t].get("source", "")) for t in sb3_passed
              if lit_tests[t]["outcome"] in ("failed", "error")}  # fmt: skip
    skipped = [t for t in sb3_passed if lit_tests[t]["outcome"] == "skipped"]
    internals = known_internals(broken)
    differences = known_internals(broken, DELIBERATE_DIFFERENCES)
    listed = internals + differences
    others = {t: m for t, m in broken.items() if not any(t in entry["tests"] for entry in listed)}
    return {
        "sb3": counts({t: base["tests"][t] for t in lit_tests if t in base["tests"]}) | {"wall_s": base["wall_s"]},
        "lit_rl": counts(lit_tests) | {"wall_s": lit["wall_s"]},
        "sb3_passes": len(sb3_passed), "lit_rl_passes_of_those": len(both),
        "lit_rl_skips_of_those": sorted(skipped), "known_internals": internals, "deliberate_differences": differences,
        "failure_groups": [{"reason": r, "count": n, "tests": ids} for r, n, ids in group_reasons(others)],
        "lit_rl_only_passes": sorted(t for t, r in lit_tests.items() if r["outcome"] == "passed" and t not in sb3_passed),
        "collect_errors": lit["collect_errors"], "k": lit["k"],
        "missing_names": lit.get("missing", []), "keep_missing": lit.get("keep_missing", False),
        "when": lit.get("when", "?"), "commit": lit.get("commit", "?"),
    }  # fmt: skip


def markdown(report: dict) -> str:
    rows = [f"| {side} | " + " | ".join(str(report[side][o]) for o in (*OUTCOMES, "total", "wall_s")) + " |" for side in ("sb3", "lit_rl")]
    x, y = report["lit_rl_passes_of_those"], report["sb3_passes"]
    lines = [
        "# SB3's own tests against lit_rl (`make sb3-suite`)", "",
        f"Stable-Baselines3 / sb3-contrib 2.9.2 tests, imports of lit_rl's names swapped; selection and rules in "
        f"`scripts/sb3_suite.py`{' (-k ' + report['k'] + ')' if report['k'] else ''}. lit_rl run {report['when']} "
        f"at `{report['commit']}`.", "",
        "| run | passed | failed | errors | skipped | total | wall s |", "|---|---:|---:|---:|---:|---:|---:|", *rows, "",
        f"**lit_rl passes {x} of the {y} tests SB3 passes ({100 * x / max(y, 1):.1f}%).**", "",
        *([f"Names lit_rl does not export: {', '.join(report['missing_names'])}"
           + (" (kept SB3's: `--keep-missing`, a diagnosis run)." if report["keep_missing"] else "."), ""]
          if report["missing_names"] else []),
        f"## Known internals ({sum(len(e['tests']) for e in report['known_internals'])} tests)", "",
        *[f"- **{len(e['tests'])}** `{e['pattern']}`: {e['reason']}; fails with: {'; '.join(e['fails_with'])}"
          for e in report["known_internals"]], "",
        f"## Deliberate differences ({sum(len(e['tests']) for e in report.get('deliberate_differences', []))} tests)", "",
        *[f"- **{len(e['tests'])}** `{e['pattern']}`: {e['reason']}; fails with: {'; '.join(e['fails_with'])}"
          for e in report.get("deliberate_differences", [])], "",
        f"## Other failures by reason ({sum(g['count'] for g in report['failure_groups'])} tests that SB3 passes)", "",
    ]  # fmt: skip
    for group in report["failure_groups"]:
        shown = ", ".join(f"`{t.replace('sb3/tests/', '').replace('contrib/tests/', 'contrib:')}`" for t in group["tests"][:6])
        lines.append(f"- **{group['count']}** `{group['reason']}`: {shown}{', …' if group['count'] > 6 else ''}")
    if report["lit_rl_skips_of_those"]:
        lines += ["", f"Skipped by lit_rl, passed by SB3: {len(report['lit_rl_skips_of_those'])}"]
    if report["collect_errors"]:
        lines += ["", "## Collection errors", "", *[f"- `{f}`: {m}" for f, m in report["collect_errors"].items()]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["lit_rl", "sb3"], help="run one side (sb3: refresh the baseline)")
    parser.add_argument("-k", help="pytest -k expression, applied to both sides")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist processes (default 2; 1: no xdist)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test (default 300; 0: none)")
    parser.add_argument("--keep-missing", action="store_true",
                        help="diagnosis: names lit_rl does not export keep SB3's import instead of failing the file")
    parser.add_argument("--report", action="store_true", help="rebuild the report from the last runs, run nothing")
    parser.add_argument("--rebaseline", action="store_true", help="run SB3 again instead of the cached baseline")
    args = parser.parse_args(argv)
    sources = fetch_tests()
    baseline_file = CACHE / "baseline.json"
    base = json.loads(baseline_file.read_text()) if baseline_file.exists() else None
    if not args.report and (args.only == "sb3" or args.rebaseline or (base is None and args.only != "lit_rl")):
        base = run_side("sb3", sources, args)
        if not args.k:  # only a full run is a baseline for later runs
            baseline_file.write_text(json.dumps(base, indent=1, sort_keys=True))
    if base is not None:
        print(f"[sb3] baseline: {counts(base['tests'])} ({base['wall_s']} s)")
    if args.only == "sb3":
        return 0
    lit_file = CACHE / "lit_rl_result.json"
    lit = json.loads(lit_file.read_text()) if args.report else run_side("lit_rl", sources, args)
    if base is None:
        print(f"[lit_rl] {counts(lit['tests'])}; no baseline yet: run without --only to compare")
        return 0
    report = compare(base, lit)
    text = markdown(report)
    print(text)
    out = CACHE if lit["k"] or lit.get("keep_missing") else ROOT / "bench"  # bench/ holds full, plain runs only
    out.mkdir(exist_ok=True)
    (out / "sb3_suite.md").write_text(text)
    (out / "sb3_suite.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out / 'sb3_suite.md'} and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
