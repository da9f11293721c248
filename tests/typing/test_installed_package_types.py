"""mypy on a user script outside the checkout finds lit_rl's types through the installed distribution alone.

No ``MYPYPATH`` and a working directory without lit_rl in it: the editable install must be one that type
checkers follow (a path entry, not an import hook), or mypy reports the import as missing and checks nothing.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[2]

USER_SCRIPT = """\
from lit_rl import SAC, CrossQ

SAC("MlpPolicy", "Pendulum-v1", learnin_rate=1e-3)
SAC("MlpPolicy", "Pendulum-v1").learn(total_timesteps="1000")
model: SAC = CrossQ.load("x")
reveal_type(CrossQ.load("x"))
"""


def test_mypy_reports_a_user_scripts_misuses_through_the_installed_package(tmp_path: Path) -> None:
    try:
        importlib.metadata.distribution("lit_rl")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("lit_rl is not installed as a distribution (pip install -e .): nothing installed to check")
    (tmp_path / "user_script.py").write_text(USER_SCRIPT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    command = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary", "--show-error-codes",
               "--cache-dir", str(ROOT / ".mypy_cache" / "installed"), "user_script.py"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode == 1 and "import-not-found" not in out and "import-untyped" not in out, out
    expected = [
        'user_script.py:3: error: Unexpected keyword argument "learnin_rate" for "SAC"',
        'user_script.py:4: error: Argument "total_timesteps" to "learn" of "',
        'user_script.py:5: error: Incompatible types in assignment (expression has type "CrossQ", '
        'variable has type "SAC")',
        'user_script.py:6: note: Revealed type is "lit_rl.algorithms.crossq.CrossQ"',
    ]
    for line in expected:
        assert line in out, out
    assert '" has incompatible type "str"; expected "int"' in out, out
