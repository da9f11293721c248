"""Config schemas, registered in Hydra's ConfigStore under ``schema/<group>``.

Every YAML in ``conf/`` extends one of these, so a misspelled key or a value of
the wrong type fails at composition, naming the key, before any env is built.
Only ``train.py`` reads configs; everything below it takes plain arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from lit_rl.loggers import wandb_sweep_group


@dataclass
class NetArchConfig:
    """Hidden layer sizes of the actor (``pi``) and of each critic (``qf``)."""

    pi: list[int] = field(default_factory=lambda: [256, 256])
    qf: list[int] = field(default_factory=lambda: [256, 256])


@dataclass
class CrossQPolicyConfig:
    net_arch: NetArchConfig = field(default_factory=lambda: NetArchConfig(pi=[256, 256], qf=[1024, 1024]))
    activation_fn: str = "relu"
    n_critics: int = 2
    batch_norm: bool = True
    batch_norm_momentum: float = 0.01
    batch_norm_eps: float = 1e-3
    renorm_warmup_steps: int = 100_000
    # gSDE (read only with use_sde: true)
    log_std_init: float = -3.0
    full_std: bool = True
    use_expln: bool = False
    clip_mean: float = 2.0


@dataclass
class OffPolicyConfig:
    """Arguments every off-policy algorithm takes (``buffer`` and ``seed`` come from their own keys)."""

    _target_: str = MISSING
    policy: str = "MlpPolicy"
    learning_rate: float = 3e-4
    learning_starts: int = 100
    batch_size: int = 256
    gamma: float = 0.99
    train_freq: Any = 1  # an int (env steps) or [n, "step" | "episode"]
    gradient_steps: int = 1  # -1: as many as env transitions collected
    stats_window_size: int = 100
    steps_per_batch: int = 1  # collect/update iterations per Lightning batch
    verbose: int = 0
    action_noise: str | None = None  # Box actions only: null | normal | ornstein-uhlenbeck
    action_noise_std: float = 0.1  # standard deviation (sigma) of action_noise, in [-1, 1] action units


@dataclass
class CrossQConfig(OffPolicyConfig):
    _target_: str = "lit_rl.algorithms.CrossQ"
    learning_rate: float = 1e-3
    ent_coef: Any = "auto"  # "auto", "auto_<init>" or a number
    target_entropy: Any = "auto"  # "auto" = -dim(A)
    policy_delay: int = 3
    use_sde: bool = False  # gSDE exploration instead of independent Gaussian noise per step
    sde_sample_freq: int = -1  # env steps between exploration-matrix resamples; -1: only at each rollout start
    use_sde_at_warmup: bool = False  # before learning_starts, act with the gSDE policy instead of uniformly
    policy_kwargs: CrossQPolicyConfig = field(default_factory=CrossQPolicyConfig)


@dataclass
class DQNPolicyConfig:
    # DQN uses net_arch.qf for its Q-network; pi exists so one override (e.g. trainer=smoke) fits every algo.
    net_arch: NetArchConfig = field(default_factory=lambda: NetArchConfig(pi=[64, 64], qf=[64, 64]))
    activation_fn: str = "relu"


@dataclass
class DQNConfig(OffPolicyConfig):
    _target_: str = "lit_rl.algorithms.DQN"
    learning_rate: float = 1e-4
    learning_starts: int = 100
    batch_size: int = 32
    tau: float = 1.0  # 1.0: hard copy into the target network
    gamma: float = 0.99
    train_freq: Any = 4
    gradient_steps: int = 1
    target_update_interval: int = 10_000  # env steps between target updates
    exploration_fraction: float = 0.1  # fraction of total_timesteps over which epsilon decays
    exploration_initial_eps: float = 1.0
    exploration_final_eps: float = 0.05
    max_grad_norm: float = 10.0
    policy_kwargs: DQNPolicyConfig = field(default_factory=DQNPolicyConfig)


@dataclass
class SACPolicyConfig:
    net_arch: NetArchConfig = field(default_factory=lambda: NetArchConfig(pi=[256, 256], qf=[256, 256]))
    activation_fn: str = "relu"
    n_critics: int = 2
    # gSDE (read only with use_sde: true)
    log_std_init: float = -3.0
    full_std: bool = True
    use_expln: bool = False
    clip_mean: float = 2.0


@dataclass
class SACConfig(OffPolicyConfig):
    _target_: str = "lit_rl.algorithms.SAC"
    learning_rate: float = 3e-4
    tau: float = 0.005
    ent_coef: Any = "auto"  # "auto", "auto_<init>" or a number
    target_update_interval: int = 1  # target update on every N-th gradient step after each rollout, counted from 0 (SB3)
    target_entropy: Any = "auto"  # "auto" = -dim(A)
    use_sde: bool = False  # gSDE exploration instead of independent Gaussian noise per step
    sde_sample_freq: int = -1  # env steps between exploration-matrix resamples; -1: only at each rollout start
    use_sde_at_warmup: bool = False  # before learning_starts, act with the gSDE policy instead of uniformly
    policy_kwargs: SACPolicyConfig = field(default_factory=SACPolicyConfig)


@dataclass
class TD3PolicyConfig:
    net_arch: NetArchConfig = field(default_factory=lambda: NetArchConfig(pi=[400, 300], qf=[400, 300]))
    activation_fn: str = "relu"
    n_critics: int = 2


@dataclass
class TD3Config(OffPolicyConfig):
    _target_: str = "lit_rl.algorithms.TD3"
    learning_rate: float = 1e-3
    tau: float = 0.005
    policy_delay: int = 2  # critic updates per actor (and target) update
    target_policy_noise: float = 0.2
    target_noise_clip: float = 0.5
    policy_kwargs: TD3PolicyConfig = field(default_factory=TD3PolicyConfig)


@dataclass
class DDPGPolicyConfig:
    net_arch: NetArchConfig = field(default_factory=lambda: NetArchConfig(pi=[400, 300], qf=[400, 300]))
    activation_fn: str = "relu"
    n_critics: int = 1


@dataclass
class DDPGConfig(OffPolicyConfig):
    _target_: str = "lit_rl.algorithms.DDPG"
    learning_rate: float = 1e-3
    tau: float = 0.005
    policy_kwargs: DDPGPolicyConfig = field(default_factory=DDPGPolicyConfig)


@dataclass
class EnvConfig:
    id: str = MISSING  # a registered gymnasium id
    n_envs: int = 1
    vectorization: str = "sync"  # sync | async (one process per env)
    max_episode_steps: int | None = None  # None: the env's registered limit
    kwargs: dict[str, Any] = field(default_factory=dict)  # passed to gymnasium.make


@dataclass
class BufferConfig:
    _target_: str = "lit_rl.buffers.ReplayBuffer"
    buffer_size: int = 1_000_000
    optimize_memory_usage: bool = False  # next observations read from the following row (SB3's option)


@dataclass
class NStepBufferConfig(BufferConfig):
    _target_: str = "lit_rl.buffers.NStepReplayBuffer"
    n_steps: int = 3  # rewards summed over up to n_steps steps; gamma comes from the algorithm


@dataclass
class HerBufferConfig:
    _target_: str = "lit_rl.buffers.HerReplayBuffer"
    buffer_size: int = 1_000_000
    n_sampled_goal: int = 4  # relabelled transitions per real one in a batch
    goal_selection_strategy: str = "future"  # future | final | episode


@dataclass
class TrainerConfig:
    """Keyword arguments of ``lightning.Trainer`` that make sense for RL runs."""

    accelerator: str = "auto"
    devices: Any = "auto"
    precision: Any = "32-true"
    deterministic: Any = False
    enable_progress_bar: bool = True
    enable_model_summary: bool = True
    max_time: str | None = None  # "DD:HH:MM:SS"; stops the run cleanly when reached


@dataclass
class EvalConfig:
    freq: int = 10_000  # env steps between evaluations
    episodes: int = 10
    deterministic: bool = True


@dataclass
class TrainConfig:
    algo: Any = MISSING
    env: EnvConfig = MISSING
    buffer: Any = MISSING  # a BufferConfig, NStepBufferConfig or HerBufferConfig
    trainer: TrainerConfig = MISSING
    logger: dict[str, Any] = field(default_factory=dict)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seed: int = 0
    total_timesteps: int = 1_000_000
    log_freq: int = 1_000  # env steps between training-metric logs
    ckpt_path: str | None = None
    resume: str | None = None  # a run folder: continue from its checkpoints/last.ckpt


def register_configs() -> None:
    """Register the schemas and the ``wandb_sweep_group`` resolver (idempotent)."""
    OmegaConf.register_new_resolver("wandb_sweep_group", wandb_sweep_group, replace=True)
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    cs.store(group="schema/algo", name="crossq", node=CrossQConfig)
    cs.store(group="schema/algo", name="sac", node=SACConfig)
    cs.store(group="schema/algo", name="td3", node=TD3Config)
    cs.store(group="schema/algo", name="ddpg", node=DDPGConfig)
    cs.store(group="schema/algo", name="dqn", node=DQNConfig)
    cs.store(group="schema/env", name="env", node=EnvConfig)
    cs.store(group="schema/buffer", name="replay", node=BufferConfig)
    cs.store(group="schema/buffer", name="nstep", node=NStepBufferConfig)
    cs.store(group="schema/buffer", name="her", node=HerBufferConfig)
    cs.store(group="schema/trainer", name="trainer", node=TrainerConfig)
