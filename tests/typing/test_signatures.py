"""The algorithms' typed constructor signatures are the single source of their defaults.

The Hydra ``algo`` schemas (:mod:`lit_rl.launcher.config`) are generated from
``inspect.signature``; these tests check that each schema default equals the
signature's, that the signatures are explicit (no ``*args``/``**kwargs``) and
that the constructor still refuses a misspelt or pinned argument by name.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.launcher.config import ALGORITHMS, NOT_IN_ALGO_CONFIG, algo_schema


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_schema_defaults_equal_signature_defaults(name: str) -> None:
    algo_class = ALGORITHMS[name]
    signature = inspect.signature(algo_class).parameters
    fields = {f.name: f for f in dataclasses.fields(algo_schema(algo_class))}
    hyperparameters = [n for n, p in signature.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    expected = set(hyperparameters) - NOT_IN_ALGO_CONFIG
    assert expected <= set(fields), f"{name}: schema lacks {sorted(expected - set(fields))}"
    for key in sorted(expected - {"policy_kwargs"}):  # policy_kwargs: a nested schema from the policy's signature
        default = signature[key].default
        assert fields[key].default == default and type(fields[key].default) in (type(default), float), (
            f"{name}: schema default {key}={fields[key].default!r}, signature default {default!r}"
        )
    assert set(fields) - expected == {"_target_", "policy_kwargs", "steps_per_batch"} - expected


@pytest.mark.parametrize("algo_class", [OffPolicyAlgorithm, *ALGORITHMS.values()], ids=lambda c: c.__name__)
def test_constructor_signature_is_explicit_and_typed(algo_class: type) -> None:
    params = inspect.signature(algo_class.__init__).parameters
    kinds = {p.kind for p in params.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds
    untyped = [n for n, p in params.items() if n != "self" and p.annotation is inspect.Parameter.empty]
    assert not untyped, f"{algo_class.__name__}.__init__ has untyped parameters {untyped}"
    assert params["learning_rate"].annotation == "float | Schedule"
    assert params["train_freq"].annotation == "int | tuple[int, str]"


def test_off_policy_signature_shows_tau() -> None:
    params = inspect.signature(OffPolicyAlgorithm.__init__).parameters
    assert params["tau"].default == 0.005 and params["tau"].annotation == "float"


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("sac", {"learnin_rate": 1e-3}, r"SAC got unknown arguments \['learnin_rate'\]; allowed: \['policy'"),
        ("crossq", {"tau": 0.01}, r"CrossQ does not take \['tau'\]: it fixes \{'tau': 0.005\}"),
        ("dqn", {"use_sde": True}, r"DQN does not take \['use_sde'\].*SAC or CrossQ"),
    ],
)
def test_bad_arguments_name_the_key(name: str, kwargs: dict, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        ALGORITHMS[name](**kwargs)
