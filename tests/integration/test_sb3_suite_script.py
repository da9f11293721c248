"""scripts/sb3_suite.py on synthetic inputs (no download): import rewriting, test selection, reason grouping."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def load(name: str):
    sys.path.insert(0, str(SCRIPTS))  # sb3_suite.py imports its helpers from scripts/
    try:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


TARGETS = {"SAC": "lit_rl", "HerReplayBuffer": "lit_rl.buffers", "EvalCallback": "lit_rl.callbacks.sb3"}
SOURCE = textwrap.dedent(
    """\
    import numpy as np
    from stable_baselines3 import A2C, SAC as Sac, HerReplayBuffer
    from stable_baselines3.common.callbacks import (
        CallbackList,
        EvalCallback,
    )
    from stable_baselines3.common.env_util import make_vec_env


    def test_x():
        from stable_baselines3 import SAC

        assert SAC
    """
)


def test_rewrite_moves_only_the_table_names_and_keeps_the_rest():
    rewrite = load("sb3_suite_rewrite")
    new, moved = rewrite.rewrite_imports(SOURCE, TARGETS)
    ast.parse(new)
    assert moved == ["EvalCallback", "HerReplayBuffer", "SAC"]
    assert "from stable_baselines3 import A2C\n" in new
    assert "from lit_rl import SAC as Sac\n" in new
    assert "from lit_rl.buffers import HerReplayBuffer\n" in new
    assert "from stable_baselines3.common.callbacks import CallbackList\n" in new
    assert "from lit_rl.callbacks.sb3 import EvalCallback\n" in new
    assert "from stable_baselines3.common.env_util import make_vec_env\n" in new  # utils stay SB3's
    assert "def test_x():\n    from lit_rl import SAC\n\n    assert SAC" in new  # an import inside a test keeps its indentation
    assert "import numpy as np\n" in new
    assert rewrite.rewrite_imports(SOURCE, {}) == (SOURCE, [])


def test_resolved_targets_come_from_the_table():
    rewrite = load("sb3_suite_rewrite")
    resolved, missing = rewrite.resolve_targets()
    assert resolved["SAC"] == "lit_rl" and resolved["CrossQ"] == "lit_rl"
    assert all(module in rewrite.LIT_RL_NAMES[name] for name, module in resolved.items())
    assert "SAC" not in missing and set(missing) <= set(resolved)


def test_reasons_are_normalised_and_grouped_by_count():
    rewrite = load("sb3_suite_rewrite")
    failures = {
        "a::t1": "ValueError: batch_size=64 > buffer_size=10 at 0x7f00aa\nmore lines",
        "a::t2": "ValueError: batch_size=256 > buffer_size=32 at 0x7f11bb",
        "a::t3": "ImportError: cannot import name 'X' from 'lit_rl' (/work/main/lit_rl/__init__.py)",
        "a::t4": "AssertionError: Pendulum-v1 reward -1.5e3",
        "a::t5": "AttributeError: 'TD3Policy' object has no attribute 'device'",
        "a::t6": "AttributeError: 'CnnSACPolicy' object has no attribute 'device'",
        "a::t7": "AttributeError: 'QRDQN' object has no attribute 'device'",
    }
    groups = rewrite.group_reasons(failures)
    assert groups[0] == ("ValueError: batch_size=N > buffer_size=N at 0x…", 2, ["a::t1", "a::t2"])
    assert ("AttributeError: '<algo>Policy' object has no attribute 'device'", 1, ["a::t5"]) in groups
    assert ("AttributeError: 'Cnn<algo>Policy' object has no attribute 'device'", 1, ["a::t6"]) in groups
    assert ("AttributeError: 'QRDQN' object has no attribute 'device'", 1, ["a::t7"]) in groups
    assert ("ImportError: cannot import name 'X' from 'lit_rl' (<path>)", 1, ["a::t3"]) in groups
    assert ("AssertionError: Pendulum-v1 reward N", 1, ["a::t4"]) in groups
    assert rewrite.normalise_reason("") == "(no message)"
    long = "AssertionError: [[array([[{}]], dtype=float32), " * 5
    line = "assert np.allclose(a, b)"
    # pytest elides long reprs at different places ("arr...array" / "array...arr"): the cut at 80 hides that
    deterministic = {"b::sac": (long.replace("{}", "0.25") + "arr...array", line),
                     "b::td3": (long.replace("{}", "-1") + "array...arr", line)}  # fmt: skip
    ((reason, count, _),) = rewrite.group_reasons(deterministic)  # long messages of one failing line: one reason
    assert count == 2 and reason.endswith("… (assert np.allclose(a, b))")


SYNTHETIC_TESTS = textwrap.dedent(
    """\
    import pytest

    class SAC: pass
    class PPO: pass
    class NormalActionNoise: pass

    @pytest.mark.parametrize("model_class", [SAC, PPO])
    def test_algo(model_class):
        assert model_class is not PPO

    @pytest.mark.parametrize("name", ["sac", "ppo"])
    def test_by_name(name):
        raise ValueError(f"bad {name} at 0x1234")

    def test_noise():
        NormalActionNoise()
        pytest.skip("no noise today")

    def test_noise_with_ppo():
        NormalActionNoise(), PPO()

    def test_unrelated():
        assert True

    def test_assert():
        x = SAC
        assert x is NormalActionNoise
    """
)


def test_plugin_selects_lit_rl_tests_and_records_outcomes(tmp_path):
    (tmp_path / "test_synthetic.py").write_text(SYNTHETIC_TESTS)
    out = tmp_path / "out.json"
    env = dict(os.environ, SB3_SUITE_OUT=str(out), PYTHONPATH=str(SCRIPTS))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "sb3_suite_plugin", "test_synthetic.py"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # test_by_name[sac] fails
    tests = json.loads(out.read_text())["tests"]
    assert sorted(tests) == ["test_synthetic.py::test_algo[SAC]", "test_synthetic.py::test_assert",
                             "test_synthetic.py::test_by_name[sac]", "test_synthetic.py::test_noise"]  # fmt: skip
    assert tests["test_synthetic.py::test_algo[SAC]"]["outcome"] == "passed"
    assert tests["test_synthetic.py::test_by_name[sac]"] == {"outcome": "failed", "message": "ValueError: bad sac at 0x1234",
                                                             "source": ""}  # fmt: skip
    assert tests["test_synthetic.py::test_assert"]["source"] == "assert x is NormalActionNoise"  # the failing line
    assert tests["test_synthetic.py::test_noise"] == {"outcome": "skipped", "message": "Skipped: no noise today"}


def test_compare_counts_known_internals_apart_and_missing_files_as_errors(monkeypatch):
    suite = load("sb3_suite")
    monkeypatch.setattr(suite, "KNOWN_INTERNALS", [("f.py::test_internal*", "reads SB3's numpy buffer")])
    monkeypatch.setattr(suite, "DELIBERATE_DIFFERENCES", [("f.py::bad", "lit_rl does more here")])
    passed = {"outcome": "passed", "message": ""}
    base = {"wall_s": 1, "k": None, "tests": {t: passed for t in ["f.py::ok", "f.py::test_internal[1]", "f.py::bad",
                                                                  "g.py::x", "f.py::skip_both"]}}  # fmt: skip
    base["tests"]["f.py::skip_both"] = {"outcome": "skipped", "message": "Skipped"}
    lit = {"wall_s": 2, "k": None, "collect_errors": {"g.py": "ImportError: cannot import name 'Y'"}, "tests": {
        "f.py::ok": passed, "f.py::test_internal[1]": {"outcome": "failed", "message": "AttributeError: numpy"},
        "f.py::bad": {"outcome": "error", "message": "TypeError: 3 args"}, "f.py::skip_both": base["tests"]["f.py::skip_both"],
    }}  # fmt: skip
    report = suite.compare(base, lit)
    assert (report["sb3_passes"], report["lit_rl_passes_of_those"]) == (4, 1)
    assert report["known_internals"] == [{"pattern": "f.py::test_internal*", "reason": "reads SB3's numpy buffer",
                                          "tests": ["f.py::test_internal[1]"], "fails_with": ["AttributeError: numpy (1)"]}]  # fmt: skip
    assert [(e["pattern"], e["tests"]) for e in report["deliberate_differences"]] == [("f.py::bad", ["f.py::bad"])]
    assert [(g["reason"], g["count"]) for g in report["failure_groups"]] == [
        ("ImportError: cannot import name 'Y'", 1)]  # fmt: skip
    assert report["lit_rl"]["error"] == 2 and report["lit_rl"]["total"] == 5
    assert "lit_rl passes 1 of the 4 tests SB3 passes (25.0%)" in suite.markdown(report)
