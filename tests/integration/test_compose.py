"""Every config option composes; overrides reach the right keys; typos fail at composition."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from lit_rl.launcher.config import register_configs
from tests.helpers import CONF

register_configs()
GROUPS = ["algo", "env", "buffer", "trainer", "logger"]
OPTIONS = [(g, p.stem) for g in GROUPS for p in sorted((CONF / g).glob("*.yaml"))]


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides), return_hydra_config=True)


@pytest.mark.parametrize(("group", "option"), OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_option_composes(group, option):
    cfg = compose_train(f"{group}={option}")
    assert cfg.hydra.runtime.choices[group] == option
    job_cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    OmegaConf.to_container(job_cfg, resolve=False, throw_on_missing=True)  # nothing left MISSING
    if group == "env":  # <id>.yaml, or <name>.yaml for the project's own lit_rl/<name>-v0
        assert cfg.env.id in (
            option,
            f"lit_rl/{option}-v0",
            f"lit_rl/{option.upper()}-v0",
            f"lit_rl/{option.capitalize()}-v0",
        )


def test_there_is_an_option_for_each_required_env():
    envs = {o for g, o in OPTIONS if g == "env"}
    for name in ["HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid"]:
        assert {f"{name}-v4", f"{name}-v5"} <= envs
    assert "Pendulum-v1" in envs


def test_defaults_are_crossq_paper_values():
    cfg = compose_train()
    assert cfg.algo._target_ == "lit_rl.algorithms.CrossQ"
    assert cfg.algo.learning_rate == 1e-3 and cfg.algo.policy_delay == 3 and cfg.algo.ent_coef == "auto"
    assert list(cfg.algo.policy_kwargs.net_arch.pi) == [256, 256]
    assert list(cfg.algo.policy_kwargs.net_arch.qf) == [1024, 1024]
    assert cfg.algo.policy_kwargs.batch_norm_momentum == 0.01 and cfg.algo.policy_kwargs.renorm_warmup_steps == 100_000
    assert cfg.trainer.accelerator == "auto" and "csv" in cfg.logger


def test_command_line_overrides_reach_their_keys():
    cfg = compose_train(
        "algo.learning_rate=3e-4",
        "algo.policy_kwargs.net_arch.qf=[2048,2048]",
        "seed=3",
        "total_timesteps=200000",
        "env.n_envs=4",
    )
    assert cfg.algo.learning_rate == 3e-4
    assert list(cfg.algo.policy_kwargs.net_arch.qf) == [2048, 2048]
    assert (cfg.seed, cfg.total_timesteps, cfg.env.n_envs) == (3, 200000, 4)


def test_smoke_overrides_root_keys():
    cfg = compose_train("trainer=smoke")
    assert cfg.total_timesteps <= 1000 and cfg.trainer.accelerator == "cpu"
    assert max(cfg.algo.policy_kwargs.net_arch.qf) <= 64


def test_multiple_loggers_combine():
    cfg = compose_train("logger=[csv,tensorboard,wandb]")
    assert set(cfg.logger) == {"csv", "tensorboard", "wandb"}


@pytest.mark.parametrize(
    ("override", "names"),
    [
        ("algo.learning_rat=0.1", "learning_rat"),
        ("algo.learning_rate=fast", "learning_rate"),
        ("env.n_envs=many", "n_envs"),
        ("total_timestep=10", "total_timestep"),
        ("algo=nope", "nope"),
    ],
)
def test_typos_and_wrong_types_fail_at_composition_naming_the_key(override, names):
    with pytest.raises(ConfigCompositionException) as err:
        compose_train(override)
    text = f"{err.value} {err.value.__cause__}"
    assert names in text


def test_packed_slurm_has_the_slurm_launchers_settings_and_the_packs():
    slurm = OmegaConf.to_container(compose_train("hydra/launcher=slurm").hydra.launcher)
    packed = OmegaConf.to_container(compose_train("hydra/launcher=packed_slurm").hydra.launcher)
    assert packed.pop("_target_").endswith("PackedSlurmLauncher") and slurm.pop("_target_").endswith(".SlurmLauncher")
    assert (packed.pop("pack_size"), packed.pop("compile")) == (8, False)
    assert packed == slurm
    with pytest.raises(ConfigCompositionException):
        compose_train("hydra/launcher=packed_slurm", "hydra.launcher.pack_sise=4")
