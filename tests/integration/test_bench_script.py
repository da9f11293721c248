"""scripts/bench.py: a real (tiny) benchmark run writes a complete JSON report (roofline, shares, targets)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench.py"


def load_bench(name: str = "bench"):
    """scripts/<name>.py as a module (bench.py puts scripts/ on sys.path for its bench_* siblings)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_bench(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(SCRIPT), "--env", "Pendulum-v1", "--algos", "sac", "--warmup", "5", "--steps", "30"]
    cmd += ["--matmul-seconds", "0.05", "--nets", "", "--out", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lit_rl/sac/cpu/n_envs=1" in proc.stdout
    return json.loads(out.read_text()), proc.stdout


def test_bench_measures_trainer_and_bare_loop_and_n_envs(tmp_path):
    report, stdout = run_bench(tmp_path, "--no-sb3", "--no-sbx", "--no-compiled", "--no-learn", "--vec-envs", "2",
                               "--steps-per-batch", "2")  # fmt: skip
    rows = {(r["lib"], r["n_envs"]): r for r in report["results"]}
    assert set(rows) == {("lit_rl", 1), ("lit_rl", 2)}
    single = rows[("lit_rl", 1)]
    assert "error" not in single
    assert single["fps"] > 0 and single["fps_bare"] > 0
    assert single["algo_kwargs"] == {"steps_per_batch": 2}
    # The timed parts plus the Lightning remainder account for the Trainer's wall time.
    assert set(single["shares"]) == {"update", "sample", "act", "buffer_add", "env", "collect_other", "logging",
                                     "lightning"}  # fmt: skip
    assert sum(single["shares"].values()) == pytest.approx(1.0, abs=0.02)
    assert single["shares"]["update"] > 0 and single["shares"]["env"] > 0 and single["shares"]["act"] > 0
    assert single["outside_update_share"] == pytest.approx(1.0 - single["shares"]["update"])
    assert single["outside_update_ms_per_step"] > 0
    assert single["buffer_bytes_per_transition"] == 3 * 4 * 2 + 1 * 4 + 4 + 4 + 1  # Pendulum: obs 3, action 1
    # SAC [256,256] on Pendulum, batch 256: the critic forward alone is 2 critics x 2*256*(4*256+256*256+256) FLOPs.
    assert single["update_gflop"] > 2 * 2 * 256 * (4 * 256 + 256 * 256 + 256) / 1e9
    assert single["update_gflops_per_s"] > 0 and single["matmul_gflops_per_s"] > 0
    assert 0 < single["pct_of_compute_bound"] < 150  # the update can't be much faster than its own matmuls
    assert any("256x256" in s for s in single["matmul_shapes"])
    assert single["peak_rss_mib"] > 0
    for column in ("GFLOP/s", "mm GF/s", "%bound", "out ms", "B/tr", "Lightn.", "outside", "speed targets:"):
        assert column in stdout
    assert "sac/cpu: update >= 70% of compute bound" in stdout
    assert rows[("lit_rl", 2)]["vectorization"] == "async" and rows[("lit_rl", 2)]["gradient_steps"] == 2
    assert any("n_envs=2 async" in t["target"] for t in report["targets"])
    assert report["meta"]["commit"]
    # A second run compares itself with the first.
    again, stdout = run_bench(tmp_path, "--no-sb3", "--no-sbx", "--no-compiled", "--no-learn", "--vec-algo", "",
                              "--compare", str(tmp_path / "bench.json"))  # fmt: skip
    assert "against" in stdout and "lit_rl/sac/cpu/n_envs=1" in stdout.split("against")[1]


@pytest.mark.slow
def test_bench_measures_stable_baselines3_sbx_and_the_compiled_update(tmp_path):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("sbx")
    report, stdout = run_bench(tmp_path, "--vec-algo", "", "--no-bf16")
    sb3 = next(r for r in report["results"] if r["lib"] == "sb3")
    assert "error" not in sb3 and sb3["fps"] > 0
    # SB3 keeps Pendulum's float32 observations as float32: 3*4*2 + 4 + 3 * 4 (reward, done, timeout).
    assert sb3["buffer_bytes_per_transition"] == 40
    # The same roofline for SB3's update: same networks, so about the same FLOPs.
    lit = next(r for r in report["results"] if r["lib"] == "lit_rl" and not r.get("compiled") and not r.get("learn"))
    assert sb3["update_gflop"] == pytest.approx(lit["update_gflop"], rel=0.25)
    assert sb3["pct_of_compute_bound"] > 0 and sb3["shares"]["env"] > 0
    ratio = next(t for t in report["targets"] if t["target"] == "sac/cpu: faster than SB3 in the same run (x SB3)")
    assert ratio["value"] == pytest.approx(lit["fps"] / sb3["fps"], abs=0.01)
    # The compiled row: the same run with compile=True, its own roofline and targets, counted in eager FLOPs.
    compiled = next(r for r in report["results"] if r.get("compiled"))
    assert "error" not in compiled and compiled["algo_kwargs"] == {"compile": True}
    assert compiled["update_gflop"] == pytest.approx(lit["update_gflop"], rel=1e-6)
    assert compiled["fps"] > 0 and 0 < compiled["pct_of_compute_bound"] < 150
    assert "lit_rl/sac+compiled/cpu/n_envs=1" in stdout
    assert any(t["target"] == "sac+compiled/cpu: update >= 70% of compute bound" for t in report["targets"])
    assert any(t["target"] == "sac+compiled/cpu: >= 2x SB3 in the same run" for t in report["targets"])
    # The learn() row: Algo("MlpPolicy", env_id).learn(n), timed as the SB3 row, with its own targets.
    learn = next(r for r in report["results"] if r.get("learn"))
    assert "error" not in learn and learn["lib"] == "lit_rl" and learn["fps"] > 0
    assert set(learn["shares"]) == set(sb3["shares"]) and learn["shares"]["update"] > 0 and learn["shares"]["env"] > 0
    assert sum(learn["shares"].values()) == pytest.approx(1.0, abs=0.02)
    assert "lit_rl/sac+learn/cpu/n_envs=1" in stdout
    speed = next(t for t in report["targets"] if t["target"] == "sac+learn/cpu: eager learn() >= 1.5x SB3 in the same run")
    assert speed["value"] == pytest.approx(learn["fps"] / sb3["fps"], abs=0.01)
    # SBX through learn(), timed by the same callback clock, with SB3's hyperparameters checked side by side.
    sbx = next(r for r in report["results"] if r["lib"] == "sbx")
    assert "error" not in sbx and sbx["fps"] > 0 and sbx["update_ms"] > 0
    assert sbx["hyperparameters_differ"] == {}
    assert set(sbx["shares"]) == set(sb3["shares"]) and sbx["shares"]["update"] > 0 and sbx["shares"]["env"] > 0
    assert sbx["buffer_bytes_per_transition"] == sb3["buffer_bytes_per_transition"]  # SB3's buffer
    assert "sbx/sac/cpu/n_envs=1" in stdout and "hyperparameters same as SB3's" in stdout
    compiled_learn = next(r for r in report["results"] if r.get("learn") and r.get("compiled"))
    assert "error" not in compiled_learn and compiled_learn["algo_kwargs"] == {"compile": True}
    assert "lit_rl/sac+compiled+learn/cpu/n_envs=1" in stdout
    assert stdout.count("CPU: ") == 1 and "amx_bf16" in stdout and "avx512_bf16" in stdout


@pytest.mark.slow
def test_bench_bf16_rows_are_reported_against_the_bf16_bound(tmp_path):
    report, stdout = run_bench(tmp_path, "--no-sb3", "--no-sbx", "--no-compiled", "--vec-algo", "")
    rows = {(r.get("learn", False), r.get("bf16", False)): r for r in report["results"]}
    assert set(rows) == {(False, False), (True, False), (True, True)}
    fp32, bf16 = rows[(True, False)], rows[(True, True)]
    assert bf16["algo_kwargs"] == {"precision": "bf16-mixed"} and "lit_rl/sac+bf16+learn/cpu/n_envs=1" in stdout
    # Every roofline row has the bf16 rate of its own products beside the fp32 one; a bf16 row is held to it.
    assert fp32["compute_bound"] == "fp32" and fp32["pct_of_compute_bound"] == fp32["pct_of_fp32_bound"]
    assert fp32["matmul_bf16_gflops_per_s"] > 0 and fp32["matmul_gflops_per_s"] > 0
    if bf16.get("skipped"):  # a lit_rl without precision= : skipped with its reason, and the run still succeeds
        assert "precision='bf16-mixed'" in bf16["skipped"] and "SKIPPED" in stdout
    else:
        assert "error" not in bf16 and bf16["fps"] > 0
        assert bf16["compute_bound"] == "bf16" and bf16["pct_of_compute_bound"] == bf16["pct_of_bf16_bound"]
        assert bf16["update_gflop"] == pytest.approx(fp32["update_gflop"], rel=1e-6)  # the same products
        assert "bf16 on this CPU" in stdout
    assert report["meta"]["cpu"]["model"] and set(report["meta"]["cpu"]["flags"]) == {"amx_bf16", "avx512_bf16"}
    assert stdout.count("CPU: ") == 1 and "speed targets:" in stdout
    assert "sac+learn/cpu: time outside the update <= 10% of a step" in stdout


def test_a_precision_lit_rl_cannot_take_skips_the_row():
    workers = load_bench("bench_workers")
    from stable_baselines3 import SAC  # a real algorithm class without lit_rl's precision= argument

    spec = {"lib": "lit_rl", "algo": "sac"}
    with pytest.raises(workers.RowSkipped, match=r"lit_rl's SAC cannot run precision='bf16-mixed' here: .*precision"):
        workers.build_lit_rl(SAC, spec, "MlpPolicy", "Pendulum-v1", precision="bf16-mixed")
    with pytest.raises(TypeError):  # an fp32 row's error is the bench's to report, not a skip
        workers.build_lit_rl(SAC, spec, "MlpPolicy", "Pendulum-v1", no_such_argument=1)
    with pytest.raises(ValueError, match=r"precision: 'fp8' is not allowed; allowed: \['32-true', 'bf16-mixed'\]"):
        workers.build_lit_rl(SAC, spec, "MlpPolicy", "Pendulum-v1", precision="fp8")


def test_sbx_gets_sb3s_hyperparameters_and_the_check_sees_a_difference():
    pytest.importorskip("sbx")
    workers = load_bench("bench_workers")
    for algo in ("sac", "td3", "crossq"):
        spec = {"lib": "sbx", "algo": algo, "env": "Pendulum-v1", "seed": 0, "device": "cpu"}
        assert workers.hyperparameter_differences(workers.learn_model(spec), spec) == {}, algo
    # SBX's own TD3 defaults: [256, 256] nets and learning rate 3e-4, where SB3's are [400, 300] and 1e-3.
    import sbx

    spec = {"lib": "sbx", "algo": "td3", "env": "Pendulum-v1", "seed": 0, "device": "cpu"}
    differ = workers.hyperparameter_differences(sbx.TD3("MlpPolicy", "Pendulum-v1"), spec)
    assert set(differ) == {"layers", "learning_rate"} and differ["learning_rate"] == [1e-3, 3e-4]
    assert (3, 400) in differ["layers"][0]["actor"] and (3, 256) in differ["layers"][1]["actor"]


def test_targets_from_results():
    report = load_bench("bench_report")
    common = {"algo": "sac", "device": "cpu", "n_envs": 1}
    shares = {"update": 0.92, "lightning": 0.015}
    results = [
        {**common, "lib": "lit_rl", "fps": 60.0, "lightning_overhead_pct": 1.0, "shares": shares,
         "outside_update_share": 0.08, "pct_of_compute_bound": 69.0, "buffer_bytes_per_transition": 169},
        {**common, "lib": "sb3", "fps": 28.0, "buffer_bytes_per_transition": 308},
        {**common, "lib": "lit_rl", "n_envs": 8, "vectorization": "async", "fps": 50.0},
        {**common, "lib": "sb3", "algo": "td3", "error": "exit 1"},
        {**common, "lib": "lit_rl", "algo": "crossq", "device": "cuda", "fps": 1200.0},
        {**common, "lib": "lit_rl", "algo": "crossq", "device": "cuda", "n_envs": 16, "fps": 4000.0},
        {**common, "lib": "lit_rl", "compiled": True, "fps": 70.0, "lightning_overhead_pct": 1.0, "shares": shares,
         "outside_update_share": 0.12, "pct_of_compute_bound": 71.0, "buffer_bytes_per_transition": 169},
        {**common, "lib": "lit_rl", "learn": True, "fps": 35.0, "shares": shares, "outside_update_share": 0.11},
        {**common, "lib": "lit_rl", "learn": True, "compiled": True, "fps": 50.0, "shares": shares,
         "outside_update_share": 0.15},  # compiled fp32 learn(): no target of its own
    ]  # fmt: skip
    checks = {t["target"]: (t["value"], t["passed"]) for t in report.check_targets(results)}
    assert checks == {
        "sac/cpu: update >= 70% of compute bound": (69.0, False),
        "sac/cpu: time outside the update <= 10% of a step": (8.0, True),
        "sac/cpu: Lightning <= 2% of a step (Trainer/bare: 1.0%)": (1.5, True),
        "sac/cpu: faster than SB3 in the same run (x SB3)": (2.14, True),
        "sac: buffer bytes/transition <= SB3 (308)": (169, True),
        "sac/cpu: n_envs=8 async faster than n_envs=1": (0.83, False),
        "crossq/cuda: >= 1000 env steps/s at 1 env": (1200.0, True),
        "crossq/cuda: n_envs=16 > 4x the env steps/s of n_envs=1": (3.33, False),
        # Compiled and learn() targets: the compiled step against its own bound and 2x SB3; learn() against 1.5x SB3.
        "sac+compiled/cpu: update >= 70% of compute bound": (71.0, True),
        "sac+compiled/cpu: time outside the update <= 10% of a step": (12.0, False),
        "sac+compiled/cpu: Lightning <= 2% of a step (Trainer/bare: 1.0%)": (1.5, True),
        "sac+compiled/cpu: faster than SB3 in the same run (x SB3)": (2.5, True),
        "sac+compiled/cpu: >= 2x SB3 in the same run": (2.5, True),
        "sac+learn/cpu: time outside the update <= 10% of a step": (11.0, False),
        "sac+learn/cpu: eager learn() >= 1.5x SB3 in the same run": (1.25, False),
    }
    cpu = {"model": "Some CPU", "cpus": 2, "flags": {"amx_bf16": False, "avx512_bf16": True}}
    table = report.format_report(results, report.check_targets(results), cpu)
    assert table.startswith("CPU: Some CPU (2 CPUs); bf16 flags: amx_bf16 no, avx512_bf16 yes\n")
    assert "  [not met] sac/cpu: update >= 70% of compute bound: 69.0\n" in table
    assert "  [met] sac/cpu: time outside the update <= 10% of a step: 8.0\n" in table
    assert "lit_rl/sac/cpu/n_envs=1" in table and "2.14" in table  # the x SB3 column


def test_learn_targets_against_sbx_and_sb3_with_the_reason_when_not_measured():
    report = load_bench("bench_report")
    common = {"device": "cpu", "n_envs": 1}
    learn = {**common, "lib": "lit_rl", "learn": True, "shares": {"update": 0.9}, "outside_update_share": 0.1}
    bf16 = {**learn, "compiled": True, "bf16": True, "algo_kwargs": {"compile": True, "precision": "bf16-mixed"}}
    results = [
        {**common, "lib": "sb3", "algo": "sac", "fps": 30.0},
        {**common, "lib": "sbx", "algo": "sac", "fps": 50.0, "hyperparameters_differ": {}},
        {**learn, "algo": "sac", "fps": 48.0},
        {**bf16, "algo": "sac", "fps": 90.0},
        {**learn, "algo": "sac", "bf16": True, "fps": 60.0, "matmul_gflops_per_s": 100.0,
         "matmul_bf16_gflops_per_s": 150.0},
        {**common, "lib": "sbx", "algo": "td3", "error": "exit 1: boom"},
        {**bf16, "algo": "td3", "fps": 100.0},
        {**common, "lib": "sbx", "algo": "crossq", "fps": 5.0},
        {**bf16, "algo": "crossq", "skipped": "lit_rl's CrossQ cannot run precision='bf16-mixed' here: no"},
    ]  # fmt: skip
    no_amx = {"model": "Some CPU", "cpus": 2, "flags": {"amx_bf16": False, "avx512_bf16": True}}
    checks = {t["target"]: (t["value"], t["passed"], t.get("note")) for t in report.check_targets(results, no_amx)}
    amx = report.AMX_NOTE
    assert checks == {
        "sac+learn/cpu: time outside the update <= 10% of a step": (10.0, True, None),
        "sac+learn/cpu: eager learn() >= 1.5x SB3 in the same run": (1.6, True, None),
        "sac+compiled+bf16+learn/cpu: compiled bf16 learn() >= 2x SBX in the same run": (1.8, False, amx),
        "td3+compiled+bf16+learn/cpu: compiled bf16 learn() >= 2x SBX in the same run":
            (None, None, "not measured: SBX: exit 1: boom; " + amx),
        "crossq+compiled+bf16+learn/cpu: compiled bf16 learn() >= 2.5x SBX in the same run":
            (None, None, "not measured: lit_rl's CrossQ cannot run precision='bf16-mixed' here: no; " + amx),
    }  # fmt: skip
    # On an AMX CPU the bf16 targets are plainly met or not.
    with_amx = {**no_amx, "flags": {"amx_bf16": True, "avx512_bf16": True}}
    assert all("AMX" not in (t.get("note") or "") for t in report.check_targets(results, with_amx))
    table = report.format_report(results, report.check_targets(results, no_amx), no_amx)
    assert "  [not met] sac+compiled+bf16+learn/cpu: compiled bf16 learn() >= 2x SBX in the same run: 1.8  (a" in table
    assert "  [not measured] crossq+compiled+bf16+learn/cpu: compiled bf16 learn() >= 2.5x SBX" in table
    assert "lit_rl/crossq+compiled+bf16+learn/cpu/n_envs=1" in table and "SKIPPED lit_rl's CrossQ" in table
    assert "bf16 on this CPU, without AMX (the bf16 targets are for AMX CPUs):" in table
    assert "lit_rl/sac+bf16+learn/cpu/n_envs=1: 1.25x the env steps/s of fp32; its products 1.50x" in table


def test_plan_has_gpu_rows_for_every_algorithm():
    bench = load_bench()
    specs = bench.plan(bench.parse_args(["--devices", "cpu,cuda", "--no-sb3", "--no-sbx", "--no-bf16",
                                         "--algos", "sac,td3", "--nets", ""]))  # fmt: skip
    rows = [(s["algo"], s["device"], s["n_envs"], s["gradient_steps"], s["algo_kwargs"].get("compile"),
             s.get("learn", False)) for s in specs]  # fmt: skip
    assert rows == [("sac", "cpu", 1, 1, None, False), ("sac", "cpu", 1, 1, True, False), ("sac", "cpu", 1, 1, None, True),
                    ("sac", "cpu", 1, 1, True, True),
                    ("td3", "cpu", 1, 1, None, False), ("td3", "cpu", 1, 1, True, False), ("td3", "cpu", 1, 1, None, True),
                    ("td3", "cpu", 1, 1, True, True),
                    ("sac", "cpu", 8, 8, None, False),
                    ("sac", "cuda", 1, 1, None, False), ("sac", "cuda", 1, 1, "reduce-overhead", False),
                    ("sac", "cuda", 1, 1, None, True), ("sac", "cuda", 1, 1, "reduce-overhead", True),
                    ("td3", "cuda", 1, 1, None, False), ("td3", "cuda", 1, 1, "reduce-overhead", False),
                    ("td3", "cuda", 1, 1, None, True), ("td3", "cuda", 1, 1, "reduce-overhead", True),
                    ("sac", "cuda", 16, 16, None, False), ("td3", "cuda", 16, 16, None, False)]  # fmt: skip


def test_learn_peers_alternate_in_rounds_after_the_trainer_rows():
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("sbx")
    bench = load_bench()
    specs = bench.plan(bench.parse_args(["--devices", "cpu", "--algos", "sac,crossq", "--nets", "", "--vec-algo", ""]))
    keys = [bench.row_key(s) for s in specs]
    peers = ["sb3/{a}/cpu/n_envs=1", "sbx/{a}/cpu/n_envs=1", "lit_rl/{a}+learn/cpu/n_envs=1",
             "lit_rl/{a}+compiled+learn/cpu/n_envs=1", "lit_rl/{a}+bf16+learn/cpu/n_envs=1",
             "lit_rl/{a}+compiled+bf16+learn/cpu/n_envs=1"]  # fmt: skip
    expected = []
    for a in ("sac", "crossq"):
        expected += [f"lit_rl/{a}/cpu/n_envs=1", f"lit_rl/{a}+compiled/cpu/n_envs=1", *(p.format(a=a) for p in peers)]
    assert keys == expected
    assert next(s for s in specs if s.get("bf16"))["algo_kwargs"] == {"precision": "bf16-mixed"}
    order = [(keys[i], r) for i, r in bench.schedule(specs, 3)]
    sac = [(p.format(a="sac"), r) for r in range(3) for p in peers]
    assert order[:2 + len(sac)] == [("lit_rl/sac/cpu/n_envs=1", 0), ("lit_rl/sac+compiled/cpu/n_envs=1", 0), *sac]
    assert len(order) == 2 * (2 + 3 * len(peers))
    # A learn() row reports its median round and every round's speed; a row that never measured keeps its reason.
    merged = bench.merge_rounds([{"fps": 3.0, "k": "a"}, {"fps": 1.0, "k": "b"}, {"fps": 2.0, "k": "c"}])
    assert merged["k"] == "c" and merged["fps_rounds"] == [3.0, 1.0, 2.0]
    assert bench.merge_rounds([{"skipped": "why"}]) == {"skipped": "why"}


def test_net_option_rows_run_lit_rl_on_the_cpu_only():
    bench = load_bench()
    specs = bench.plan(bench.parse_args(["--devices", "cpu,cuda", "--no-sb3", "--algos", "sac", "--vec-algo", ""]))
    rows = [(s["algo"], s["device"]) for s in specs if "+" in s["algo"]]
    assert rows == [(name, "cpu") for name in ("sac+droq", "sac+simba", "crossq+weight_norm", "crossq+categorical")]
    with pytest.raises(ValueError, match=r"--nets: 'sac\+dropout' is not allowed"):
        bench.plan(bench.parse_args(["--nets", "sac+dropout", "--no-sb3"]))


def test_bad_counts_are_refused_naming_the_option():
    bench = load_bench()
    with pytest.raises(ValueError, match="--steps=0"):
        bench.parse_args(["--steps", "0"])
    with pytest.raises(ValueError, match="--algos: 'ppo'"):
        bench.plan(bench.parse_args(["--algos", "ppo", "--no-sb3"]))
    with pytest.raises(ValueError, match="--vec-algo: 'dqn' is not allowed"):
        bench.plan(bench.parse_args(["--vec-algo", "dqn", "--no-sb3"]))


@pytest.mark.slow
def test_atari_bench_times_dqn_against_sb3_and_reports_memory(tmp_path):
    out = tmp_path / "atari.json"
    proc = subprocess.run(
        [sys.executable, "scripts/bench_atari.py", "--quick", "--threads", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = {r["row"]: r for r in report["results"]}
    assert set(rows) == {"sb3", "lit_rl", "lit_rl bf16"} and all(r["env_steps_per_s"] > 0 for r in rows.values())
    # Frames stored once against SB3's two stacked observations of 4 frames each.
    assert rows["lit_rl"]["replay_bytes_per_transition"] < 1.1 * 84 * 84 < rows["sb3"]["replay_bytes_per_transition"] / 7
    assert "avx512_bf16" in proc.stdout and "| lit_rl bf16 |" in proc.stdout
