"""``lit_rl.__version__`` is the installed distribution's version, the one pyproject.toml declares."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

import lit_rl

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_version_is_the_package_metadata_and_equals_pyproject():
    try:
        installed = importlib.metadata.version("lit_rl")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("lit_rl is not installed as a distribution (pip install -e .)")
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert lit_rl.__version__ == installed == declared, "reinstall (make install) after changing the version"
