"""gymnasium's ``"module:EnvId"`` ids: lit_rl imports the module (which registers the env) before checking the id."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest

from lit_rl.envs import check_env_id, make_vec_env

REGISTERING_MODULE = """
import gymnasium as gym

gym.register("ModuleIdPendulum-v0", entry_point="gymnasium.envs.classic_control:PendulumEnv", max_episode_steps=7)
"""


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    """A folder on sys.path; the modules and env ids the test adds are removed afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    gym.registry.pop("ModuleIdPendulum-v0", None)
    for name in ("registers_pendulum", "registers_nothing", "imports_missing"):
        sys.modules.pop(name, None)


def test_module_id_imports_the_module_that_registers_the_env(module_dir):
    (module_dir / "registers_pendulum.py").write_text(REGISTERING_MODULE)
    assert "ModuleIdPendulum-v0" not in gym.registry
    check_env_id("registers_pendulum:ModuleIdPendulum-v0")
    env = make_vec_env("registers_pendulum:ModuleIdPendulum-v0")
    env.reset(seed=0)
    steps, truncated = 0, np.array([False])
    while not truncated[0]:
        _, _, _, truncated, _ = env.step(env.action_space.sample())
        steps += 1
    assert steps == 7  # the registered spec's time limit: the registered env was made
    env.close()


def test_module_id_with_a_missing_module_names_the_id_and_module(module_dir):
    with pytest.raises(ValueError, match=r"env.id='no_such_env_module:Foo-v0'.*'no_such_env_module'.*PYTHONPATH"):
        check_env_id("no_such_env_module:Foo-v0")


def test_module_id_whose_module_registers_nothing_says_so(module_dir):
    (module_dir / "registers_nothing.py").write_text("")
    with pytest.raises(ValueError, match=r"importing 'registers_nothing' did not register 'Foo-v0'"):
        check_env_id("registers_nothing:Foo-v0")


def test_module_id_whose_module_imports_a_missing_package_names_that_package(module_dir):
    (module_dir / "imports_missing.py").write_text("import no_such_dependency_pkg\n")
    with pytest.raises(ValueError, match=r"'imports_missing'.*install 'no_such_dependency_pkg', which it imports"):
        check_env_id("imports_missing:Foo-v0")
