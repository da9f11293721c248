"""The tuned presets compose with every MuJoCo env into rl-baselines3-zoo's values."""

from __future__ import annotations

import pytest

from tests.helpers import CONF
from tests.integration.test_compose import compose_train

MUJOCO_ENVS = [f"{name}-{v}" for name in ["HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid"] for v in ["v4", "v5"]]
# (preset, algorithm class, {dotted key: zoo value}) from the files cited in each preset's header.
ZOO = {
    "crossq_mujoco": (
        "lit_rl.algorithms.CrossQ",
        {
            "total_timesteps": 5_000_000,
            "algo.learning_rate": 1e-3,
            "algo.learning_starts": 5000,
            "algo.policy_delay": 3,
            "algo.batch_size": 256,
            "algo.policy_kwargs.net_arch.pi": [256, 256],
            "algo.policy_kwargs.net_arch.qf": [2048, 2048],
            "algo.policy_kwargs.batch_norm": True,
            "buffer.buffer_size": 1_000_000,
        },
    ),
    "sac_mujoco": (
        "lit_rl.algorithms.SAC",
        {
            "total_timesteps": 1_000_000,
            "algo.learning_rate": 3e-4,
            "algo.learning_starts": 10_000,
            "algo.batch_size": 256,
            "algo.tau": 0.005,
            "algo.gamma": 0.99,
            "algo.ent_coef": "auto",
            "algo.policy_kwargs.net_arch.pi": [256, 256],
            "algo.policy_kwargs.net_arch.qf": [256, 256],
            "buffer.buffer_size": 1_000_000,
        },
    ),
    "td3_mujoco": (
        "lit_rl.algorithms.TD3",
        {
            "total_timesteps": 1_000_000,
            "algo.learning_rate": 1e-3,
            "algo.learning_starts": 10_000,
            "algo.batch_size": 256,
            "algo.train_freq": 1,
            "algo.gradient_steps": 1,
            "algo.action_noise": "normal",
            "algo.action_noise_std": 0.1,
            "algo.policy_kwargs.net_arch.pi": [400, 300],
            "algo.policy_kwargs.net_arch.qf": [400, 300],
            "buffer.buffer_size": 1_000_000,
        },
    ),
    "tqc_mujoco": (
        "lit_rl.algorithms.TQC",
        {
            "total_timesteps": 1_000_000,
            "algo.learning_rate": 3e-4,
            "algo.learning_starts": 10_000,
            "algo.top_quantiles_to_drop_per_net": 2,
            "algo.policy_kwargs.n_quantiles": 25,
            "algo.policy_kwargs.n_critics": 2,
            "algo.policy_kwargs.net_arch.qf": [256, 256],
            "algo.policy_kwargs.target_network": True,
            "buffer.buffer_size": 1_000_000,
        },
    ),
    "tqc_crossq_mujoco": (
        "lit_rl.algorithms.TQC",
        {
            "total_timesteps": 1_000_000,
            "algo.learning_rate": 1e-3,
            "algo.learning_starts": 5000,
            "algo.policy_delay": 3,
            "algo.policy_kwargs.net_arch.qf": [2048, 2048],
            "algo.policy_kwargs.batch_norm": True,
            "algo.policy_kwargs.target_network": False,
        },
    ),
    "droq_mujoco": (  # the paper's values (Hiraoka et al., ICLR 2022, Table 2), not a zoo file
        "lit_rl.algorithms.SAC",
        {
            "total_timesteps": 1_000_000,
            "algo.gradient_steps": 20,
            "algo.learning_rate": 3e-4,
            "algo.policy_kwargs.net_arch.qf": [256, 256],
            "algo.policy_kwargs.net.dropout": 0.01,
            "algo.policy_kwargs.net.layer_norm": True,
        },
    ),
}
# The zoo's per-env changes (experiment/budget/<algo>_<env>.yaml).
PER_ENV = {
    ("sac_mujoco", "Humanoid"): {"total_timesteps": 2_000_000},
    ("tqc_mujoco", "Humanoid"): {"total_timesteps": 2_000_000},
    ("tqc_mujoco", "Hopper"): {"algo.top_quantiles_to_drop_per_net": 5},
}
CASES = [(p, e) for p in ZOO for e in MUJOCO_ENVS]


def select(cfg, dotted: str):
    node = cfg
    for part in dotted.split("."):
        node = node[part]
    return list(node) if hasattr(node, "__len__") and not isinstance(node, str) else node


# Presets of other env families: their own tests (test_fetch_her.py, test_dmc_launcher.py) check their values.
TESTED_ELSEWHERE = {"her_fetchreach", "her_fetchpush", "sac_dmc", "dqn_atari", "qrdqn_atari", "drq_dmc"}  # +test_pixel_presets.py


def test_every_preset_file_is_tested():
    assert {p.stem for p in (CONF / "experiment").glob("*.yaml")} == set(ZOO) | TESTED_ELSEWHERE


@pytest.mark.parametrize(("preset", "env"), CASES, ids=[f"{p}-{e}" for p, e in CASES])
def test_preset_gives_the_zoo_values(preset, env):
    cfg = compose_train(f"experiment={preset}", f"env={env}")
    target, values = ZOO[preset]
    expected = dict(values)
    expected |= PER_ENV.get((preset, env.split("-")[0]), {})
    assert cfg.algo._target_ == target and cfg.env.id == env
    for key, value in expected.items():
        assert select(cfg, key) == value, key


def test_smoke_and_command_line_still_override_a_preset():
    cfg = compose_train("experiment=crossq_mujoco", "env=Hopper-v4", "trainer=smoke", "algo.learning_rate=3e-4")
    assert cfg.total_timesteps <= 1000 and max(cfg.algo.policy_kwargs.net_arch.qf) <= 64
    assert cfg.algo.learning_rate == 3e-4


def test_no_preset_by_default():
    cfg = compose_train()
    assert cfg.hydra.runtime.choices.get("experiment") is None
    assert cfg.algo.learning_starts == 100 and cfg.total_timesteps == 1_000_000
