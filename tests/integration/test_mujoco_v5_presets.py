"""Every preset that names a MuJoCo task works with the task's -v5 id: it composes and the env builds and steps.

The tasks are read from the preset files themselves (names of gymnasium's MuJoCo envs in the file's name, keys
or comments; "MuJoCo suite" names the five suite tasks), so a new preset or a new task in a comment is covered.
"""

from __future__ import annotations

import functools
import re

import gymnasium as gym
import numpy as np
import pytest
from omegaconf import OmegaConf

from lit_rl.envs import make_vec_env
from tests.helpers import CONF
from tests.integration.test_compose import compose_train

EXPERIMENTS = CONF / "experiment"
SUITE = ("HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid")
# gymnasium's MuJoCo tasks, longest first so that HumanoidStandup is not read as Humanoid.
MUJOCO_TASKS = sorted(
    {spec.name for spec in gym.registry.values() if str(spec.entry_point).startswith("gymnasium.envs.mujoco")},
    key=len,
    reverse=True,
)
TASK_PATTERN = re.compile(r"\b(" + "|".join(MUJOCO_TASKS) + r")\b")
BUDGET_PREFIX = re.compile(r"budget@_global_:\s*(\w+)_\$\{env\}")


def named_tasks(path) -> list[str]:
    """The MuJoCo tasks a preset file names (its file name and text)."""
    text = path.read_text()
    tasks = set(TASK_PATTERN.findall(f"{path.stem}\n{text}"))
    if re.search(r"mujoco suite", text, re.IGNORECASE):
        tasks |= set(SUITE)
    return sorted(tasks)


PRESETS = sorted(EXPERIMENTS.glob("*.yaml"))
BUDGETS = sorted((EXPERIMENTS / "budget").glob("*.yaml"))
CASES = [(p.stem, task) for p in PRESETS for task in named_tasks(p)]


def budget_prefix(path) -> str | None:
    """``tqc`` for a preset whose defaults read ``budget@_global_: tqc_${env}``, else None."""
    match = BUDGET_PREFIX.search(path.read_text())
    return match.group(1) if match else None


@functools.cache
def env_steps(env_id: str, kwargs: tuple) -> bool:
    """Build ``env_id`` with ``kwargs`` as the launcher does, reset and step it once (once per id and kwargs)."""
    env = make_vec_env(env_id, n_envs=1, seed=0, env_kwargs=dict(kwargs))
    try:
        obs, _ = env.reset(seed=0)
        obs, reward, _, _, _ = env.step(env.action_space.sample())
        return bool(np.isfinite(obs).all() and np.isfinite(reward).all())
    finally:
        env.close()


def test_the_mujoco_presets_are_found():
    tasks = {p: named_tasks(EXPERIMENTS / f"{p}.yaml") for p in ("crossq_mujoco", "sac_mujoco", "droq_mujoco")}
    assert all(set(SUITE) <= set(found) for found in tasks.values()), tasks
    assert {"HumanoidStandup", "Humanoid", "Hopper"} <= set(MUJOCO_TASKS)
    assert len(CASES) >= 25


@pytest.mark.parametrize(("preset", "task"), CASES, ids=[f"{p}-{t}-v5" for p, t in CASES])
def test_preset_composes_and_builds_the_v5_env(preset, task):
    env_id = f"{task}-v5"
    assert (CONF / "env" / f"{env_id}.yaml").exists(), f"conf/env/{env_id}.yaml is missing"
    cfg = compose_train(f"experiment={preset}", f"env={env_id}")
    assert cfg.hydra.runtime.choices["experiment"] == preset and cfg.env.id == env_id
    kwargs = OmegaConf.to_container(cfg.env.kwargs)
    assert isinstance(kwargs, dict)
    assert env_steps(cfg.env.id, tuple(sorted(kwargs.items())))


@pytest.mark.parametrize("budget", BUDGETS, ids=[p.stem for p in BUDGETS])
def test_budget_has_a_v5_twin_that_the_preset_applies(budget):
    prefix, _, env_id = budget.stem.partition("_")
    task, _, _ = env_id.rpartition("-")
    assert task in MUJOCO_TASKS, budget.name
    twin = budget.with_name(f"{prefix}_{task}-v5.yaml")
    assert twin.exists(), f"{budget.name} has no -v5 counterpart {twin.name}"
    values = OmegaConf.load(budget)
    assert values == OmegaConf.load(twin), f"{budget.name} and {twin.name} differ"
    presets = [p.stem for p in PRESETS if budget_prefix(p) == prefix]
    assert presets, f"no preset reads budget/{prefix}_${{env}}"
    for preset in presets:
        cfg = compose_train(f"experiment={preset}", f"env={task}-v5")
        for key, value in _flatten(OmegaConf.to_container(values)).items():
            assert OmegaConf.select(cfg, key) == value, (preset, key)


def _flatten(tree: dict, prefix: str = "") -> dict:
    out: dict = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        out |= _flatten(value, f"{name}.") if isinstance(value, dict) else {name: value}
    return out
