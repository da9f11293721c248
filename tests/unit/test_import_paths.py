"""Stable import paths: every documented public name imports from its documented module (the block in the
Python API guide, docs/python-api.md),
moved names warn and resolve to the same object, and no two public exports of lit_rl share a name."""

from __future__ import annotations

import ast
import importlib
import inspect
import pickle
import pkgutil
import re
import warnings
from pathlib import Path

import pytest

import lit_rl

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def documented_imports() -> dict[str, list[str]]:
    """The guide's public-imports block as {module: [names]}."""
    text = GUIDE.read_text()
    match = re.search(r"<!-- public-imports -->\n```python\n(.*?)```", text, re.S)
    assert match, "docs/python-api.md lost its <!-- public-imports --> block"
    imports: dict[str, list[str]] = {}
    for node in ast.parse(match.group(1)).body:
        assert isinstance(node, ast.ImportFrom), (
            f"the block holds only 'from ... import ...' lines: {ast.unparse(node)}"
        )
        imports.setdefault(node.module, []).extend(alias.name for alias in node.names)
    return imports


DOCUMENTED = documented_imports()
# The package faces a user imports from; each must be in the guide's block.
PUBLIC_FACES = [
    "lit_rl",
    "lit_rl.algorithms",
    "lit_rl.noise",
    "lit_rl.logger",
    "lit_rl.evaluation",
    "lit_rl.buffers",
    "lit_rl.callbacks",
    "lit_rl.callbacks.sb3",
    "lit_rl.policies",
    "lit_rl.nets",
    "lit_rl.envs",
    "lit_rl.data",
]


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_every_documented_name_imports_from_its_documented_module(module):
    face = importlib.import_module(module)
    for name in DOCUMENTED[module]:
        assert hasattr(face, name), f"docs/python-api.md documents 'from {module} import {name}', which fails"
        assert name in face.__all__, f"{module}.{name} is documented but not in {module}.__all__"


def test_the_readme_block_names_every_export_of_every_public_face():
    documented_objects = {
        (name, id(getattr(importlib.import_module(m), name))) for m, names in DOCUMENTED.items() for name in names
    }
    assert set(PUBLIC_FACES) <= set(DOCUMENTED), (
        f"faces missing from the docs/python-api.md block: {set(PUBLIC_FACES) - set(DOCUMENTED)}"
    )
    missing = [
        f"{module}.{name}"
        for module in PUBLIC_FACES
        for name in importlib.import_module(module).__all__
        if (name, id(getattr(importlib.import_module(module), name))) not in documented_objects
    ]
    assert not missing, f"exported but not in docs/python-api.md's import block: {missing}"


def test_action_noises_have_the_short_path_and_the_sb3_names():
    from lit_rl.collect import noise as home
    from lit_rl.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    assert (
        NormalActionNoise is home.NormalActionNoise
        and OrnsteinUhlenbeckActionNoise is home.OrnsteinUhlenbeckActionNoise
    )
    noise = NormalActionNoise(mean=[0.0, 0.0], sigma=[0.1, 0.1])
    assert noise().shape == (2,)


MOVED = [
    # (old module, old name, new module, new name)
    *[
        ("lit_rl.algorithms.noise", name, "lit_rl.noise", name)
        for name in ["ActionNoise", "NormalActionNoise", "OrnsteinUhlenbeckActionNoise", "VectorizedActionNoise"]
    ],
    *[
        ("lit_rl.algorithms.noise", name, "lit_rl.collect.noise", name)
        for name in ["ACTION_NOISE_TYPES", "check_action_noise", "make_action_noise"]
    ],
    ("lit_rl.callbacks.evaluation", "EvalCallback", "lit_rl.callbacks", "PeriodicEvaluation"),
]


@pytest.mark.parametrize(("old_module", "old_name", "new_module", "new_name"), MOVED)
def test_a_moved_name_warns_with_its_new_path_and_is_the_same_object(old_module, old_name, new_module, new_name):
    new = getattr(importlib.import_module(new_module), new_name)
    with pytest.warns(DeprecationWarning, match=re.escape(new_module)) as caught:
        old = getattr(importlib.import_module(old_module), old_name)
    assert old is new
    assert caught[0].filename == __file__  # points at the user's line, not at lit_rl


def test_from_import_of_a_moved_name_warns():
    with pytest.warns(DeprecationWarning, match=r"lit_rl\.noise"):
        from lit_rl.algorithms.noise import NormalActionNoise  # noqa: F401


def test_unknown_names_of_an_alias_module_still_fail():
    import lit_rl.algorithms.noise as old

    with pytest.raises(AttributeError, match="no attribute 'NoSuchNoise'"):
        old.NoSuchNoise  # noqa: B018
    with pytest.raises(ImportError):
        from lit_rl.callbacks.evaluation import SomethingElse  # noqa: F401


def test_a_pickle_written_under_the_old_module_path_loads():
    """Models and noises pickled before the move name lit_rl.algorithms.noise: they still load (with the warning)."""
    from lit_rl.noise import OrnsteinUhlenbeckActionNoise

    noise = OrnsteinUhlenbeckActionNoise(mean=[0.0], sigma=[0.2], seed=0)
    new_path = b"lit_rl.collect.noise\nOrnsteinUhlenbeckActionNoise\n"
    data = pickle.dumps(noise, protocol=0)
    assert data.count(new_path) == 1
    data = data.replace(new_path, b"lit_rl.algorithms.noise\nOrnsteinUhlenbeckActionNoise\n")
    with pytest.warns(DeprecationWarning, match=r"lit_rl\.noise"):
        restored = pickle.loads(data)
    assert type(restored) is OrnsteinUhlenbeckActionNoise and restored._sigma.tolist() == [0.2]


def test_eval_callback_is_sb3s_everywhere_it_is_exported():
    from lit_rl.callbacks import EvalCallback, PeriodicEvaluation
    from lit_rl.callbacks.sb3 import EvalCallback as SB3EvalCallback

    assert EvalCallback is SB3EvalCallback
    # SB3's signature, the call that failed before the rename
    callback = EvalCallback("Pendulum-v1", best_model_save_path="best", eval_freq=500, n_eval_episodes=2)
    assert callback.eval_freq == 500 and callback.n_eval_episodes == 2
    assert "best_model_save_path" not in inspect.signature(PeriodicEvaluation).parameters


def test_checkpoints_of_the_old_evaluation_callback_name_restore_its_state():
    """Lightning keys callback state by ``state_key``; runs saved when the class was EvalCallback resume their
    evaluation history."""
    from lit_rl.callbacks import PeriodicEvaluation

    saved = PeriodicEvaluation(eval_freq=100)
    saved.best_mean_reward, saved.last_eval_step = -150.0, 300
    saved.evaluations = [{"step": 300, "mean_reward": -150.0, "std_reward": 3.0}]
    old_checkpoint_callbacks = {"EvalCallback": saved.state_dict()}  # what a checkpoint of the old class holds
    restored = PeriodicEvaluation(eval_freq=100)
    assert restored.state_key in old_checkpoint_callbacks
    restored.load_state_dict(old_checkpoint_callbacks[restored.state_key])
    assert restored.best_mean_reward == -150.0 and restored.evaluations == saved.evaluations


def public_exports() -> dict[str, dict[str, object]]:
    """{name: {module: object}} over every lit_rl module: its ``__all__``, else the public classes it defines."""
    found: dict[str, dict[str, object]] = {}
    for info in pkgutil.walk_packages(lit_rl.__path__, "lit_rl."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(info.name)
        names = getattr(module, "__all__", None)
        if names is None:
            names = [
                n
                for n, obj in vars(module).items()
                if not n.startswith("_") and inspect.isclass(obj) and obj.__module__ == module.__name__
            ]
        for name in names:
            found.setdefault(name, {})[info.name] = getattr(module, name)
    return found


def test_no_two_public_exports_share_a_name_while_being_different_objects():
    exports = public_exports()
    assert "PeriodicEvaluation" in exports and "NormalActionNoise" in exports  # the walk reached them
    clashes = {
        name: {module: f"{obj.__module__}.{obj.__qualname__}" for module, obj in where.items()}
        for name, where in exports.items()
        if len({id(obj) for obj in where.values()}) > 1
    }
    assert not clashes, f"one name, several classes: {clashes}"
