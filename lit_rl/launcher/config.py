"""Config schemas, registered in Hydra's ConfigStore under ``schema/<group>``.

Every YAML in ``conf/`` extends one of these, so a misspelled key or a value of
the wrong type fails at composition, naming the key, before any env is built.
The ``algo`` schemas are generated from the algorithms' typed constructor
signatures (``inspect.signature``) and their policies' signatures: each default is
written once, in the algorithm or policy class. Only ``train.py`` reads
configs; everything below it takes plain arguments.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from lit_rl.algorithms import DDPG, DQN, QRDQN, SAC, TD3, TQC, CrossQ
from lit_rl.core.batching import DEFAULT_STEPS_PER_BATCH
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.launcher.loggers import wandb_sweep_group
from lit_rl.nets.mlp import ACTIVATIONS
from lit_rl.nets.net_options import NetOptions
from lit_rl.nets.normalization import NORMALIZE_DEFAULTS


@dataclass
class NetArchConfig:
    """Hidden layer sizes of the actor (``pi``) and of each critic (``qf``)."""

    pi: list[int] = field(default_factory=lambda: [256, 256])
    qf: list[int] = field(default_factory=lambda: [256, 256])


def net_arch_config(arch: dict[str, list[int]]) -> NetArchConfig:
    """A new :class:`NetArchConfig` with copies of ``arch``'s lists (a field's default factory)."""
    return NetArchConfig(list(arch["pi"]), list(arch["qf"]))


# Algorithm arguments the launcher sets from other keys (buffer group, seed, trainer) or that only the Python API takes.
# The Hydra config folder, absolute: the entrypoints are imported by their `python -m lit_rl.<name>` aliases,
# and Hydra resolves a relative config_path of an imported module as a package (conf/ is not one).
CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")

NOT_IN_ALGO_CONFIG = {
    "env", "buffer_size", "replay_buffer_class", "replay_buffer_kwargs", "optimize_memory_usage", "n_steps", "seed",
    "device", "tensorboard_log", "support_multi_env", "monitor_wrapper", "sde_support", "supported_action_spaces", "_init_setup_model",
    "normalize_obs", "normalize_reward", "normalize_kwargs",  # env.normalize_*: the env group holds them
}  # fmt: skip
# Policy arguments that are the algorithm's business (use_sde) or not available from a config (classes).
# features_extractor_kwargs is a dict of values (features_dim: DrQ's 50-wide encoder output): typed Any, null default.
NOT_IN_POLICY_CONFIG = {
    "observation_space", "action_space", "lr_schedule", "use_sde", "features_extractor_class",
    "normalize_images", "optimizer_class", "optimizer_kwargs", "share_features_extractor",
}  # fmt: skip
# Arguments that take more than one type: an int or [n, unit]; "auto" or a number; a name or null.
ANY_TYPED = {"train_freq", "ent_coef", "target_entropy"}


def config_field(name: str, default: Any) -> tuple[str, Any, Any]:
    """A dataclass field typed after its default (checked at composition), or ``Any`` where several types fit."""
    if name in ANY_TYPED or default is None:
        return name, Any, field(default=default)
    if isinstance(default, float) or name == "learning_rate":
        return name, float, field(default=float(default))
    return name, type(default), field(default=default)


# policy_kwargs.net: the network options (lit_rl/nets/net_options.py), typed from NetOptions' fields and defaults, so
# a misspelt key or a wrong type (here or in a conf/net file) fails at composition; keys added with Hydra's `+`
# bypass a schema and are rejected by lit_rl/launcher/validation.py before the run folder exists.
NET_OPTION_FIELDS = [config_field(f.name, f.default) for f in dataclasses.fields(NetOptions)]
# Hydra's error for an unknown key reads "Key 'dropuot' not in '<class name>'": the name lists the allowed keys.
NetConfig = make_dataclass(f"NetConfig(allowed keys: {', '.join(name for name, _, _ in NET_OPTION_FIELDS)})",
                           NET_OPTION_FIELDS)  # fmt: skip
# Importable by name as NetConfig (pickle looks up __qualname__; see NormalizeConfig).
NetConfig.__qualname__, NetConfig.__module__ = "NetConfig", __name__


def policy_schema(algo_class: type[OffPolicyAlgorithm]) -> type:
    """``policy_kwargs`` schema from the algorithm's policy class signature (and the algorithm's policy_defaults)."""
    policy_class = algo_class.default_policy_class
    overrides = getattr(algo_class, "policy_defaults", {})
    names = {cls: name for name, cls in ACTIVATIONS.items()}
    fields: list[tuple[str, Any, Any]] = []
    for name, parameter in inspect.signature(policy_class).parameters.items():
        default = overrides.get(name, parameter.default)
        if name in NOT_IN_POLICY_CONFIG:
            continue
        if name == "net_arch":
            arch = policy_class.default_net_arch
            fields.append((name, NetArchConfig, field(default_factory=functools.partial(net_arch_config, arch))))
        elif name == "activation_fn":
            fields.append((name, str, field(default=names.get(default, default))))
        elif name == "net":  # typed, so a misspelt key fails at composition (NetOptions' defaults: the standard nets)
            fields.append((name, NetConfig | None, field(default_factory=NetConfig)))  # null: the standard nets too
        else:
            fields.append(config_field(name, default))
    return make_dataclass(f"{algo_class.__name__}PolicyConfig", fields)


def algo_schema(algo_class: type[OffPolicyAlgorithm]) -> type:
    """The ``algo`` schema of one algorithm: its constructor's hyperparameters and defaults, nothing written again."""
    fields: list[tuple[str, Any, Any]] = [("_target_", str, field(default=f"lit_rl.algorithms.{algo_class.__name__}"))]
    for name, parameter in inspect.signature(algo_class).parameters.items():
        default = parameter.default
        if name in NOT_IN_ALGO_CONFIG or parameter.kind is not parameter.POSITIONAL_OR_KEYWORD:
            continue  # keyword-only: run settings (steps_per_batch, compile), not hyperparameters
        if name == "policy_kwargs":
            schema = policy_schema(algo_class)
            fields.append((name, schema, field(default_factory=schema)))
        elif name == "action_noise":
            fields.append((name, str | None, field(default=None)))  # null | normal | ornstein-uhlenbeck
        else:
            fields.append(config_field(name, default))
    # Moved to trainer.steps_per_batch; kept so that setting it fails naming the new key (train.build_algorithm).
    fields.append(("steps_per_batch", int | None, field(default=None)))
    return make_dataclass(f"{algo_class.__name__}Config", fields)


ALGORITHMS = {"crossq": CrossQ, "sac": SAC, "td3": TD3, "ddpg": DDPG, "dqn": DQN, "qrdqn": QRDQN, "tqc": TQC}


# env.normalize_kwargs: the algorithms' normalize_kwargs (clip_obs, clip_reward, epsilon, gamma, training), typed
NormalizeConfig = make_dataclass("NormalizeConfig", [config_field(k, v) for k, v in NORMALIZE_DEFAULTS.items()])
# Importable by name, so parallel launchers (joblib, submitit: cloudpickle) send a reference, not a copy of the class
# that OmegaConf would then refuse as "not a subclass of NormalizeConfig".
NormalizeConfig.__module__ = __name__


@dataclass
class EnvConfig:
    id: str = MISSING  # a registered gymnasium id
    name: str = "${.id}"  # the run's name for the env: run folders, W&B tags, summary.json (env=dmc: dmc-<task>)
    n_envs: int = 1  # envs stepped together; each step adds n_envs transitions
    vectorization: str = "sync"  # sync | async (one process per env)
    max_episode_steps: int | None = None  # None: the env's registered limit
    kwargs: dict[str, Any] = field(default_factory=dict)  # passed to gymnasium.make
    # Normalisation inside the model (SB3's VecNormalize; passed to the algorithm): running observation mean/std,
    # rewards scaled by the std of the discounted return; statistics saved with the model, frozen in evaluation.
    normalize_obs: bool = False  # running mean/std of observations, clipped to normalize_kwargs.clip_obs
    normalize_reward: bool = False  # rewards divided by the running std of the discounted return
    # A make_dataclass class: OmegaConf reads this annotation at run time, mypy cannot use it as a type.
    normalize_kwargs: NormalizeConfig = field(default_factory=NormalizeConfig)  # type: ignore[valid-type]


@dataclass
class BufferConfig:
    _target_: str = "lit_rl.buffers.ReplayBuffer"
    buffer_size: int = 1_000_000
    optimize_memory_usage: bool = False  # next observations read from the following row (SB3's option)
    # Image stacks stored one frame per transition (lit_rl.buffers.FrameReplayBuffer); null: auto, for uint8 image
    # stacks of a FrameStackObservation env; true: required (an error where it cannot apply); false: whole stacks.
    frame_dedup: bool | None = None
    # DrQ's image augmentation of sampled batches: random_shift (pad, then crop back at a random offset) or null.
    augmentation: str | None = None
    augmentation_pad: int = 4  # pixels of shift in each direction (DrQ, DrQ-v2: 4 for 84x84 frames)


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
    copy_info_dict: bool = False  # keep each step's infos for the env's compute_reward (SB3's HerReplayBuffer argument)


@dataclass
class TrainerConfig:
    """Keyword arguments of ``lightning.Trainer`` that make sense for RL runs."""

    accelerator: str = "auto"  # auto (the GPU when there is one) | cpu | gpu
    devices: Any = "auto"  # Lightning's devices
    precision: Any = "32-true"  # 32-true | bf16-mixed | 16-mixed | auto: the algorithm casts its matrix products (fp32 states)
    deterministic: Any = False  # torch's deterministic algorithms (Lightning's flag)
    enable_progress_bar: bool = True  # env steps, steps/s, ep_rew and the last evaluation
    enable_model_summary: bool = True  # the networks' parameter counts at start (train.log)
    max_time: str | None = None  # "DD:HH:MM:SS"; stops the run cleanly when reached
    steps_per_batch: int = DEFAULT_STEPS_PER_BATCH  # collect/update rounds per Lightning batch (spreads its ~0.5 ms; events keep their env steps)
    compile: Any = False  # torch.compile the losses and acting: false | true | reduce-overhead (CUDA graphs, CUDA only)


@dataclass
class EvalConfig:
    freq: int = 10_000  # env steps between evaluations
    episodes: int = 10  # episodes per evaluation
    deterministic: bool = True  # the policy's mean action (false: sampled actions)


@dataclass
class TrainConfig:
    algo: Any = MISSING  # one of the algo group's options
    env: EnvConfig = MISSING
    buffer: Any = MISSING  # a BufferConfig, NStepBufferConfig or HerBufferConfig
    trainer: TrainerConfig = MISSING
    logger: dict[str, Any] = field(default_factory=dict)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seed: int = 0  # seeds torch, numpy, random, the envs and the action noise
    total_timesteps: int = 1_000_000  # env steps of the run (all envs together)
    log_freq: int = 1_000  # env steps between training-metric logs
    ckpt_path: str | None = None  # a checkpoint to continue from exactly, into a new run folder
    resume: str | None = None  # a run folder: continue in it from its checkpoints/last.ckpt; auto: if it exists


def path_name(name: str) -> str:
    """``name`` as one folder name: a namespaced id's ``/`` and ``:`` (``ALE/Pong-v5``, ``lit_rl/DMC-v0``) as ``-``."""
    return str(name).replace("/", "-").replace(":", "-")


def register_configs() -> None:
    """Register the schemas and the ``wandb_sweep_group`` and ``path_name`` resolvers (idempotent)."""
    OmegaConf.register_new_resolver("wandb_sweep_group", wandb_sweep_group, replace=True)
    OmegaConf.register_new_resolver("path_name", path_name, replace=True)
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    for name, algo_class in ALGORITHMS.items():
        cs.store(group="schema/algo", name=name, node=algo_schema(algo_class))
    cs.store(group="schema/env", name="env", node=EnvConfig)
    cs.store(group="schema/buffer", name="replay", node=BufferConfig)
    cs.store(group="schema/buffer", name="nstep", node=NStepBufferConfig)
    cs.store(group="schema/buffer", name="her", node=HerBufferConfig)
    cs.store(group="schema/trainer", name="trainer", node=TrainerConfig)
