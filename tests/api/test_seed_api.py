"""The seed API, walked name by name: lit_sb3's OffPolicyAlgorithm, CrossQ, CrossQPolicy, Actor and CrossQCritic.

``seed_api.json`` (written by ``scripts/extract_seed_api.py`` from the seed
documents, which a CI clone lacks) lists each class's documented constructor
parameters, attributes and public methods. The signature tests check lit_rl's
class against it name by name (and each default that is a literal or a torch
name); the behaviour tests (``test_<Class>_<method>``, one per documented
method, enforced by :func:`test_every_documented_method_has_a_behaviour_test`)
call each method on objects built on Pendulum-v1 and check what it returns or
changes. A case that lit_rl does not meet yet is a strict xfail listed in
:data:`GAPS` with what the seed says and what lit_rl does: fixing it makes the
xfail fail until its entry is removed.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import io
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import lightning as L
import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from lit_rl import CrossQ
from lit_rl.callbacks.sb3 import BaseCallback
from lit_rl.collect.noise import NormalActionNoise
from lit_rl.core.arguments import TrainFreq
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.policies import Actor, CrossQCritic, CrossQPolicy

SEED_API = json.loads((Path(__file__).with_name("seed_api.json")).read_text(encoding="utf-8"))["classes"]
LIT_CLASSES: dict[str, type] = {
    "OffPolicyAlgorithm": OffPolicyAlgorithm,
    "CrossQ": CrossQ,
    "CrossQPolicy": CrossQPolicy,
    "Actor": Actor,
    "CrossQCritic": CrossQCritic,
}
ALGORITHMS = ("OffPolicyAlgorithm", "CrossQ")
TINY = {"net_arch": [32]}
ENV_ID = "Pendulum-v1"

# What lit_rl does not (yet) do as the seed documents: (class, kind, name) -> what the seed says vs what lit_rl does.
GAPS: dict[tuple[str, str, str], str] = {
    # A deliberate difference (README, Python API): lit_rl counts log_every_n_steps in env steps (default 1000);
    # the seed passed 4 to Lightning's Trainer (every 4 batches). tb_log_name is the class name, as in the seed.
    ("CrossQ", "method", "learn"):
        "seed CrossQ.learn default log_every_n_steps=4 (Lightning batches); lit_rl's None = every 1000 env steps",
    ("OffPolicyAlgorithm", "method", "learn"):
        "seed OffPolicyAlgorithm.learn default tb_log_name='run' (its CrossQ.learn: 'CrossQ'); lit_rl's None means the "
        "algorithm's name, as CrossQ's and SB3's",
}  # fmt: skip


def case(cls: str, kind: str, name: str, *values: Any) -> Any:
    """A pytest param for one documented name, a strict xfail when it is a known gap."""
    reason = GAPS.get((cls, kind, name))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(cls, name, *values, marks=marks, id=f"{cls}.{name}")


def gap(cls: str, kind: str, name: str) -> Any:
    """Decorator: strict xfail for a behaviour test of a known gap (no-op otherwise)."""
    reason = GAPS.get((cls, kind, name))
    return pytest.mark.xfail(strict=True, reason=reason) if reason else (lambda f: f)


# ---------------------------------------------------------------------- documented defaults
UNRESOLVED = object()  # a default the test cannot evaluate (a lit_sb3 class such as FlattenExtractor)
TORCH_NAMES = {"nn": nn, "torch": torch}


def seed_default(text: str | None) -> Any:
    """The value of a documented default: a literal, or a torch name (``nn.ReLU``); REQUIRED when none."""
    if text is None:
        return inspect.Parameter.empty
    try:
        return ast.literal_eval(text)
    except ValueError:
        head, *rest = text.split(".")
        if head not in TORCH_NAMES:
            return UNRESOLVED
        return functools.reduce(getattr, rest, TORCH_NAMES[head])


def comparable(name: str, value: Any) -> Any:
    # train_freq=1 and (1, "step") are the same setting (the seed converts one to the other).
    if name == "train_freq" and isinstance(value, int):
        return (value, "step")
    return tuple(value) if isinstance(value, list) else value


def parameters(func: Any) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(func).parameters.items() if n != "self"}


def check_parameter(where: str, params: dict[str, inspect.Parameter], documented: dict) -> None:
    """``documented`` (from the JSON) is accepted by name, with its default when that is evaluable."""
    name = documented["name"]
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    assert name in params or takes_kwargs, f"{where} does not take {name!r}; it takes {list(params)}"
    expected = seed_default(documented["default"])
    if expected is inspect.Parameter.empty or expected is UNRESOLVED or name not in params:
        return  # a required seed argument may have a default in lit_rl
    actual = params[name].default
    assert actual is not inspect.Parameter.empty, f"{where}: {name} is required; the seed's default is {expected!r}"
    assert comparable(name, actual) == comparable(name, expected), (
        f"{where}: default {name}={actual!r}; the seed documents {documented['default']}"
    )


# ---------------------------------------------------------------------- signature tests
@pytest.mark.parametrize(
    ("cls", "name", "documented"),
    [case(c, "init", p["name"], p) for c, api in SEED_API.items() for p in api["parameters"]],
)
def test_constructor_parameter(cls: str, name: str, documented: dict) -> None:
    check_parameter(f"{cls}()", parameters(LIT_CLASSES[cls]), documented)


@pytest.mark.parametrize(
    ("cls", "name"), [case(c, "documented", n) for c, api in SEED_API.items() for n in api["documented_only"]]
)
def test_parameter_documented_outside_the_signature(cls: str, name: str) -> None:
    assert name in parameters(LIT_CLASSES[cls]), f"{cls}() does not take {name!r}"


@pytest.mark.parametrize(
    ("cls", "name", "documented"),
    [case(c, "method", m, spec) for c, api in SEED_API.items() for m, spec in api["methods"].items()],
)
def test_method_signature(cls: str, name: str, documented: dict) -> None:
    method = getattr(LIT_CLASSES[cls], name, None)
    assert callable(method), f"{cls} has no method {name}"
    params = parameters(method)
    for param in documented["parameters"]:
        check_parameter(f"{cls}.{name}()", params, param)


def test_every_documented_method_has_a_behaviour_test() -> None:
    missing = [
        f"test_{c}_{m}" for c, api in SEED_API.items() for m in api["methods"] if f"test_{c}_{m}" not in globals()
    ]
    assert not missing, f"documented methods without a behaviour test: {missing}"


def test_the_record_covers_the_seed_classes() -> None:
    # A truncated or hand-edited JSON would silently shrink the promise.
    assert set(SEED_API) == set(LIT_CLASSES)
    counts = {c: (len(api["parameters"]), len(api["methods"])) for c, api in SEED_API.items()}
    assert counts == {"OffPolicyAlgorithm": (26, 10), "CrossQ": (25, 3), "CrossQPolicy": (20, 5),
                      "Actor": (16, 6), "CrossQCritic": (13, 2)}  # fmt: skip


def test_the_record_matches_the_seed_documents_where_they_exist() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "extract_seed_api.py"
    spec = importlib.util.spec_from_file_location("extract_seed_api", script)
    extractor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extractor)
    if not extractor.DEFAULT_SEEDS.is_dir():
        pytest.skip(f"no seed documents at {extractor.DEFAULT_SEEDS} (a CI clone): the committed record is used")
    assert extractor.extract(extractor.DEFAULT_SEEDS)["classes"] == SEED_API, "run scripts/extract_seed_api.py"


# ---------------------------------------------------------------------- objects on a real env
@pytest.fixture(scope="module")
def spaces() -> tuple[gym.Space, gym.Space]:
    env = gym.make(ENV_ID)
    return env.observation_space, env.action_space


@pytest.fixture(scope="module")
def obs(spaces) -> torch.Tensor:
    env = gym.make(ENV_ID)
    return torch.as_tensor(np.stack([env.reset(seed=i)[0] for i in range(8)]), dtype=torch.float32)


def make_model(seed: int = 0, **kwargs: Any) -> CrossQ:
    settings = {"learning_starts": 100, "batch_size": 32, "buffer_size": 2_000, "policy_kwargs": TINY, "device": "cpu"}
    return CrossQ("MlpPolicy", seed=seed, **{**settings, **kwargs})


def trained(steps: int = 200, seed: int = 0, **kwargs: Any) -> CrossQ:
    return make_model(seed, **kwargs).learn(steps, env=ENV_ID)


@pytest.fixture(scope="module")
def model() -> CrossQ:
    """A CrossQ trained for 300 steps; tests that change a model build their own."""
    return trained(300)


def policy_for(spaces, **kwargs: Any) -> CrossQPolicy:
    torch.manual_seed(0)
    return CrossQPolicy(*spaces, lambda _: 1e-3, net_arch=[32], **kwargs)


def state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def changed(before: dict[str, torch.Tensor], module: nn.Module) -> bool:
    return any(not torch.equal(before[k], v) for k, v in module.state_dict().items())


def extend_budget(model: OffPolicyAlgorithm, steps: int) -> None:
    # The seed's collection stops at the RL budget that learn() set; give the model `steps` more.
    model.configure_run(steps, reset_num_timesteps=False)


def call_log(model: Any, name: str) -> list:
    """Record the calls of ``model.<name>`` (still calling it)."""
    calls: list = []
    original = getattr(model, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs))
        return original(*args, **kwargs)

    setattr(model, name, spy)
    return calls


class Recorder(BaseCallback):
    """An SB3-style callback that records the events it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, int]] = []

    def _on_training_start(self) -> None:
        self.events.append(("training_start", self.model.num_timesteps))

    def _on_step(self) -> bool:
        self.events.append(("step", self.model.num_timesteps))
        return True

    def _on_training_end(self) -> None:
        self.events.append(("training_end", self.model.num_timesteps))

    def count(self, event: str) -> int:
        return sum(e == event for e, _ in self.events)


# ---------------------------------------------------------------------- constructors and attributes
def documented_arguments(cls: str, spaces) -> dict[str, Any]:
    """Every documented constructor argument by name: its documented default, or a real value where none."""
    real = {"policy": "MlpPolicy", "learning_rate": 1e-3, "observation_space": spaces[0], "action_space": spaces[1],
            "lr_schedule": lambda _: 1e-3, "net_arch": [32], "features_extractor": nn.Flatten(),
            "features_dim": int(np.prod(spaces[0].shape))}  # fmt: skip
    kwargs = {}
    for param in SEED_API[cls]["parameters"]:
        value = seed_default(param["default"])
        if value is inspect.Parameter.empty:
            kwargs[param["name"]] = real[param["name"]]
        elif value is not UNRESOLVED:
            kwargs[param["name"]] = value
    return kwargs


@pytest.mark.parametrize(("cls", "name"), [case(c, "construct", "all") for c in SEED_API])
def test_constructs_with_every_documented_argument_by_name(cls: str, name: str, spaces) -> None:
    kwargs = documented_arguments(cls, spaces)
    obj = LIT_CLASSES[cls](**kwargs)
    assert isinstance(obj, LIT_CLASSES[cls])
    if cls in ALGORITHMS:
        saved = {k: obj.hparams[k] for k in kwargs if k in obj.hparams}
        assert saved == {k: kwargs[k] for k in saved} and len(saved) >= len(kwargs) - 2
    else:  # the networks are built with the documented settings: BatchRenorm layers, two critics
        assert sum(isinstance(m, BatchRenorm) for m in obj.modules()) >= 1
        if cls != "Actor":
            critic = obj.critic if cls == "CrossQPolicy" else obj
            assert len(critic(torch.zeros(5, 3), torch.zeros(5, 1))) == 2


def documented_object(cls: str, model: CrossQ) -> Any:
    return {"OffPolicyAlgorithm": model, "CrossQ": model, "CrossQPolicy": model.policy,
            "Actor": model.policy.actor, "CrossQCritic": model.policy.critic}[cls]  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "name"), [case(c, "attribute", a["name"]) for c, api in SEED_API.items() for a in api["attributes"]]
)
def test_attribute(cls: str, name: str, model: CrossQ) -> None:
    obj = documented_object(cls, model)
    assert hasattr(obj, name), f"{cls} has no attribute {name}"
    value = getattr(obj, name)
    if name == "device":
        assert value == torch.device("cpu")
    elif name == "squash_output":
        assert value is True  # tanh-squashed actions
    elif name == "env":
        # the training env with SB3's VecEnv API (as the seed's VecEnv annotations and SB3's model.env)
        assert value.num_envs == 1 and value.observation_space == model.observation_space
        assert isinstance(model.train_env, gym.vector.VectorEnv) and model.train_env.num_envs == 1
    elif name in ("hparams", "hparams_initial"):
        assert value["learning_starts"] == 100 and value["batch_size"] == 32


@pytest.mark.parametrize(("cls", "name"), [case(c, "behaviour", "env_before_learn") for c in ALGORITHMS])
def test_env_is_none_before_learn(cls: str, name: str) -> None:
    assert make_model().env is None


# ---------------------------------------------------------------------- OffPolicyAlgorithm's methods
def check_optimizers(model: CrossQ, optimizers: Any) -> list[set[int]]:
    """Each optimizer's parameters; every policy parameter is optimised exactly once, at the model's rate."""
    optimizers = optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]
    assert optimizers and all(isinstance(o, torch.optim.Optimizer) for o in optimizers)
    groups = [{id(p) for g in o.param_groups for p in g["params"]} for o in optimizers]
    assert all(g["lr"] == pytest.approx(model.learning_rate) for o in optimizers for g in o.param_groups)
    ids = [i for g in groups for i in g]
    assert len(ids) == len(set(ids)), "a parameter is in two optimizers"
    assert {id(p) for p in model.policy.parameters()} <= set(ids)
    return groups


def test_OffPolicyAlgorithm_configure_optimizers(model: CrossQ) -> None:
    assert isinstance(model, OffPolicyAlgorithm)
    check_optimizers(model, model.configure_optimizers())


@gap("OffPolicyAlgorithm", "behaviour", "train_dataloader")
def test_OffPolicyAlgorithm_train_dataloader(model: CrossQ) -> None:
    loader = model.train_dataloader()
    assert isinstance(loader, DataLoader)
    tokens = [token for token, _ in zip(loader, range(3), strict=False)]
    assert len(tokens) == 3 and len({int(t) for t in tokens}) == 3  # an unbounded stream of distinct tokens


def test_OffPolicyAlgorithm_on_train_batch_end() -> None:
    model = trained(150)
    model.trainer.should_stop = False
    model.on_train_batch_end(None, 0, 0)
    assert model.trainer.should_stop, "the env-step budget is reached: training must stop"
    extend_budget(model, 10)
    model.trainer.should_stop = False
    assert model.on_train_batch_end(None, 0, 0) is None
    assert not model.trainer.should_stop, "10 env steps of budget are left"


def test_OffPolicyAlgorithm_training_step() -> None:
    model = trained(150)
    extend_budget(model, 5)
    steps, size, critic = model.num_timesteps, len(model.replay_buffer), state(model.policy.critic)
    assert model.training_step(0, 0) is None
    # train_freq=1, gradient_steps=1: one env step collected and stored, then one critic update.
    assert model.num_timesteps == steps + 1 and len(model.replay_buffer) == size + 1
    assert changed(critic, model.policy.critic)


def test_OffPolicyAlgorithm_on_train_end() -> None:
    # Covered by a learn() run: the SB3 callback's training end fires once, last, at the final step.
    recorder = Recorder()
    model = make_model().learn(120, env=ENV_ID, callback=recorder)
    assert model.on_train_end() is None
    assert recorder.events[0] == ("training_start", 0)
    assert recorder.events[-1] == ("training_end", 120) and recorder.count("training_end") == 1


class CountingNoise(NormalActionNoise):
    def __init__(self) -> None:
        super().__init__(np.zeros(1), np.full(1, 0.1), seed=0)
        self.calls = 0

    def __call__(self) -> np.ndarray:
        self.calls += 1
        return super().__call__()


def test_OffPolicyAlgorithm_collect_rollouts() -> None:
    model = trained(200)  # one full Pendulum episode: the next one starts now
    extend_budget(model, 1_000)
    recorder, noise, dumps = Recorder(), CountingNoise(), call_log(model, "dump_logs")
    recorder.init_callback(model)
    steps, size = model.num_timesteps, len(model.replay_buffer)
    result = model.collect_rollouts(model.env, recorder, TrainFreq(5, "step"), model.replay_buffer,
                                    action_noise=noise, learning_starts=0, log_interval=None)  # fmt: skip
    assert (result.episode_timesteps, result.n_episodes, result.continue_training) == (5, 0, True)
    assert model.num_timesteps == steps + 5 and len(model.replay_buffer) == size + 5
    assert recorder.count("step") == 5
    assert noise.calls == 5, "learning_starts=0: every action is the policy's, with the given noise"
    assert dumps == []
    # Per episode, still in warm-up (uniform actions, no noise), logging after each episode.
    result = model.collect_rollouts(model.env, recorder, TrainFreq(1, "episode"), model.replay_buffer,
                                    action_noise=noise, learning_starts=10**9, log_interval=1)  # fmt: skip
    assert (result.episode_timesteps, result.n_episodes) == (195, 1)
    assert noise.calls == 5 and len(dumps) == 1


def test_OffPolicyAlgorithm_dump_logs(model: CrossQ) -> None:
    logged = call_log(model, "log_metrics")
    assert model.dump_logs() is None
    (metrics, *_), _ = logged[-1]
    assert metrics["rollout/ep_len_mean"] == 200  # Pendulum's time limit
    assert -2_000 < metrics["rollout/ep_rew_mean"] < 0 and metrics["time/fps"] > 0


@pytest.mark.parametrize("target", ["str", "Path", "BytesIO"])
def test_OffPolicyAlgorithm_save_replay_buffer(target: str, model: CrossQ, tmp_path: Path) -> None:
    path = {"str": str(tmp_path / "buffer.pt"), "Path": tmp_path / "buffer.pt", "BytesIO": io.BytesIO()}[target]
    model.save_replay_buffer(path)
    if isinstance(path, io.BytesIO):
        assert path.tell() > 0
        path.seek(0)
    else:
        assert Path(path).stat().st_size > 0
    other = trained(100, seed=1)
    other.load_replay_buffer(path)
    assert len(other.replay_buffer) == len(model.replay_buffer) == 300
    torch.testing.assert_close(other.replay_buffer.observations[:300], model.replay_buffer.observations[:300])


def test_OffPolicyAlgorithm_load_replay_buffer(model: CrossQ) -> None:
    file = io.BytesIO()
    model.save_replay_buffer(file)
    file.seek(0)
    other = trained(100, seed=1)
    assert not torch.equal(other.replay_buffer.rewards[:100], model.replay_buffer.rewards[:100])
    assert other.load_replay_buffer(file, truncate_last_traj=False) is None
    torch.testing.assert_close(other.replay_buffer.rewards[:300], model.replay_buffer.rewards[:300])
    # Training continues on the loaded transitions (the seed's learn() takes the env on every call).
    other.learn(20, env=ENV_ID, reset_num_timesteps=False)
    assert other.num_timesteps == 120 and len(other.replay_buffer) == 320


def test_OffPolicyAlgorithm_learn(tmp_path: Path) -> None:
    model, recorder = make_model(), Recorder()
    out = model.learn(total_timesteps=200, env=ENV_ID, callback=recorder, log_every_n_steps=100,
                      tb_log_name="seedrun", reset_num_timesteps=True, progress_bar=False,
                      default_root_dir=tmp_path)  # fmt: skip
    assert out is model and model.num_timesteps == 200 and len(model.replay_buffer) == 200
    assert recorder.count("step") == 200
    assert Path(model.trainer.default_root_dir) == tmp_path
    assert not any(isinstance(cb, L.pytorch.callbacks.ProgressBar) for cb in model.trainer.callbacks)
    model.learn(50, reset_num_timesteps=False, progress_bar=True)
    assert model.num_timesteps == 250 and len(model.replay_buffer) == 250
    assert any(isinstance(cb, L.pytorch.callbacks.ProgressBar) for cb in model.trainer.callbacks)
    model.learn(30, reset_num_timesteps=True)
    assert model.num_timesteps == 30


def test_learn_log_every_n_steps_sets_the_logging_frequency() -> None:
    counts = []
    for every in (40, 150):
        model = make_model(learning_starts=10_000)  # no updates: only collection and logging
        dumps = call_log(model, "dump_logs")
        model.learn(200, env=ENV_ID, log_every_n_steps=every)
        counts.append(len(dumps))
    assert counts[0] > counts[1] >= 1


def test_learn_logs_under_tensorboard_log_and_tb_log_name(tmp_path: Path) -> None:
    # CrossQ's documented tensorboard_log ("if None, no logging") with learn()'s tb_log_name, as in SB3.
    make_model(tensorboard_log=str(tmp_path)).learn(150, env=ENV_ID, tb_log_name="seedrun", log_every_n_steps=50)
    runs = [p for p in tmp_path.iterdir() if p.name.startswith("seedrun")]
    assert runs and any(f.name.startswith("events.out.tfevents") for f in runs[0].rglob("*"))
    make_model().learn(50, env=ENV_ID, tb_log_name="quiet", default_root_dir=tmp_path / "root")
    assert not any(p.name.startswith("quiet") for p in tmp_path.rglob("*")), "tensorboard_log=None: no log"


# ---------------------------------------------------------------------- CrossQ's methods
def test_CrossQ_configure_optimizers(model: CrossQ) -> None:
    groups = check_optimizers(model, model.configure_optimizers())
    actor, critic = ({id(p) for p in m.parameters()} for m in (model.policy.actor, model.policy.critic))
    # Actor, critics and the learned entropy coefficient (ent_coef="auto") each have their own optimizer.
    assert len(groups) == 3 and actor in groups and critic in groups
    (ent,) = [g for g in groups if g not in (actor, critic)]
    assert len(ent) == 1


def test_CrossQ_training_step() -> None:
    model = trained(150)
    extend_budget(model, 10)
    actor_updates = 0
    for _ in range(model.policy_delay):
        actor, critic = state(model.policy.actor), state(model.policy.critic)
        model.training_step(0, 0)
        assert changed(critic, model.policy.critic), "every step updates the critics"
        actor_updates += changed(actor, model.policy.actor)
    assert actor_updates == 1, "the actor is updated once every policy_delay=3 steps"


def test_CrossQ_learn() -> None:
    model, recorder = make_model(), Recorder()
    out = model.learn(total_timesteps=150, env=ENV_ID, callback=recorder, log_every_n_steps=4, tb_log_name="CrossQ",
                      reset_num_timesteps=True, progress_bar=False)  # fmt: skip
    assert out is model and model.num_timesteps == 150 and recorder.count("step") == 150
    obs = np.zeros((4, 3), dtype=np.float32)
    before = model.predict(obs, deterministic=True)[0]
    model.learn(100, reset_num_timesteps=False)  # learning started at step 100: the policy moves
    assert model.num_timesteps == 250 and not np.array_equal(before, model.predict(obs, deterministic=True)[0])


# ---------------------------------------------------------------------- CrossQPolicy's methods
def test_CrossQPolicy_reset_noise(spaces) -> None:
    policy = policy_for(spaces, use_sde=True)
    same_obs = torch.zeros(4, 3)
    assert policy.reset_noise(batch_size=4) is None
    first = policy(same_obs)
    torch.testing.assert_close(policy(same_obs), first)  # the noise is fixed until the next reset
    assert len(set(first.flatten().tolist())) == 4, "one exploration matrix per batch row"
    policy.reset_noise(4)
    assert not torch.equal(policy(same_obs), first)


def check_fresh_copy(built: nn.Module, existing: nn.Module) -> None:
    """``built`` has the layers of the policy's own network (net_arch=[32], BatchRenorm), freshly initialised."""
    assert type(built) is type(existing) and built is not existing
    assert {k: v.shape for k, v in built.state_dict().items()} == {k: v.shape for k, v in existing.state_dict().items()}
    assert any(isinstance(m, BatchRenorm) for m in built.modules())
    assert not all(torch.equal(a, b) for a, b in zip(built.parameters(), existing.parameters(), strict=True))


def test_CrossQPolicy_make_actor(spaces, obs: torch.Tensor) -> None:
    policy = policy_for(spaces)
    actor = policy.make_actor(features_extractor=None)
    assert isinstance(actor, Actor)
    check_fresh_copy(actor, policy.actor)
    assert actor(obs).shape == (len(obs), 1)


def test_CrossQPolicy_make_critic(spaces, obs: torch.Tensor) -> None:
    policy = policy_for(spaces, n_critics=3)
    critic = policy.make_critic(features_extractor=None)
    assert isinstance(critic, CrossQCritic)
    check_fresh_copy(critic, policy.critic)
    q = critic(obs, torch.zeros(len(obs), 1))
    assert len(q) == 3 and all(qi.shape == (len(obs), 1) for qi in q)


def test_CrossQPolicy_forward(spaces, obs: torch.Tensor) -> None:
    policy = policy_for(spaces)
    actions = policy(obs, deterministic=True)
    assert actions.shape == (len(obs), 1) and bool((actions.abs() <= 1).all())
    torch.testing.assert_close(policy(obs, True), actions)
    assert not torch.equal(policy(obs), policy(obs)), "deterministic=False samples"


def test_CrossQPolicy_set_training_mode(spaces) -> None:
    policy = policy_for(spaces)
    for mode in (False, True, False):
        assert policy.set_training_mode(mode) is None
        assert all(m.training is mode for m in policy.modules())


# ---------------------------------------------------------------------- Actor's methods
def make_actor(spaces, **kwargs: Any) -> Actor:
    torch.manual_seed(0)
    return Actor(*spaces, net_arch=[32], features_extractor=nn.Flatten(), features_dim=3, **kwargs)


def test_Actor_get_std(spaces) -> None:
    std = make_actor(spaces, use_sde=True, log_std_init=-2.0).get_std()
    assert isinstance(std, torch.Tensor) and std.shape == (32, 1)  # (latent features, actions): full_std
    torch.testing.assert_close(std, torch.full((32, 1), float(np.exp(-2.0))))


def test_Actor_reset_noise(spaces) -> None:
    actor = make_actor(spaces, use_sde=True)
    actor.set_bn_training_mode(False)
    same_obs = torch.zeros(3, 3)
    assert actor.reset_noise(3) is None
    first = actor(same_obs)
    torch.testing.assert_close(actor(same_obs), first)
    assert len(set(first.flatten().tolist())) == 3
    actor.reset_noise(3)
    assert not torch.equal(actor(same_obs), first)


def test_Actor_get_action_dist_params(spaces, obs: torch.Tensor) -> None:
    mean, log_std, extra = make_actor(spaces).get_action_dist_params(obs)
    assert mean.shape == log_std.shape == (len(obs), 1) and extra == {}
    mean, log_std, extra = make_actor(spaces, use_sde=True).get_action_dist_params(obs)
    assert mean.shape == (len(obs), 1) and log_std.shape == (32, 1)
    assert set(extra) == {"latent_sde"} and extra["latent_sde"].shape == (len(obs), 32)


def test_Actor_forward(spaces, obs: torch.Tensor) -> None:
    actor = make_actor(spaces)
    actor.set_bn_training_mode(False)
    actions = actor(obs, deterministic=True)
    assert actions.shape == (len(obs), 1) and bool((actions.abs() <= 1).all())
    torch.testing.assert_close(actor(obs, True), actions)
    assert not torch.equal(actor(obs), actor(obs))


def test_Actor_action_log_prob(spaces, obs: torch.Tensor) -> None:
    actor = make_actor(spaces)
    actions, log_prob = actor.action_log_prob(obs)
    assert actions.shape == (len(obs), 1) and log_prob.shape == (len(obs),)
    assert bool((actions.abs() < 1).all()) and bool(torch.isfinite(log_prob).all())
    log_prob.sum().backward()  # reparameterised: the log-probability reaches the actor's weights
    assert all(p.grad is not None for p in actor.parameters() if p.requires_grad)


def check_bn_training_mode(module: nn.Module, run: Any) -> None:
    """``set_bn_training_mode(False)`` freezes the BatchRenorm statistics, True lets them move; other modes stay."""
    layers = [m for m in module.modules() if isinstance(m, BatchRenorm)]
    assert layers
    module.train(True)
    assert module.set_bn_training_mode(False) is None
    assert not any(m.training for m in layers) and module.training
    frozen = state(module)
    run()
    assert not changed(frozen, module)
    module.set_bn_training_mode(True)
    assert all(m.training for m in layers)
    run()
    assert not torch.equal(frozen[next(k for k in frozen if k.endswith("running_mean"))],
                           next(v for k, v in module.state_dict().items() if k.endswith("running_mean")))  # fmt: skip


def test_Actor_set_bn_training_mode(spaces, obs: torch.Tensor) -> None:
    actor = make_actor(spaces)
    check_bn_training_mode(actor, lambda: actor(obs * 3 + 1))


# ---------------------------------------------------------------------- CrossQCritic's methods
def make_critic(spaces, **kwargs: Any) -> CrossQCritic:
    torch.manual_seed(0)
    return CrossQCritic(*spaces, net_arch=[32], features_extractor=nn.Flatten(), features_dim=3, **kwargs)


def test_CrossQCritic_forward(spaces, obs: torch.Tensor) -> None:
    critic = make_critic(spaces)
    actions = torch.linspace(-1, 1, len(obs)).unsqueeze(1)
    q = critic(obs, actions)
    assert isinstance(q, tuple) and len(q) == 2 and all(qi.shape == (len(obs), 1) for qi in q)
    assert not torch.equal(q[0], q[1]), "two independently initialised critics"
    assert not torch.equal(critic(obs, -actions)[0], q[0]), "Q depends on the action"


def test_CrossQCritic_set_bn_training_mode(spaces, obs: torch.Tensor) -> None:
    critic = make_critic(spaces)
    check_bn_training_mode(critic, lambda: critic(obs * 3 + 1, torch.ones(len(obs), 1)))
