"""The SB3-style callbacks, split by family into ``lit_rl/callbacks/sb3/``, keep the import paths users have."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

# Every public name lit_rl.callbacks.sb3 had as one file, and the module that holds it now.
SB3_CALLBACKS = {
    "BaseCallback": "base",
    "EventCallback": "base",
    "CallbackList": "base",
    "ConvertCallback": "base",
    "as_sb3_callback": "base",
    "SB3CallbackAdapter": "adapter",
    "EveryNTimesteps": "events",
    "LogEveryNTimesteps": "events",
    "CheckpointCallback": "checkpoint",
    "EvalCallback": "evaluation",
    "EpisodeSuccesses": "evaluation",
    "StopTrainingOnMaxEpisodes": "stop_training",
    "StopTrainingOnRewardThreshold": "stop_training",
    "StopTrainingOnNoModelImprovement": "stop_training",
}


@pytest.mark.parametrize("name", SB3_CALLBACKS)
def test_each_name_imports_from_lit_rl_callbacks_sb3(name):
    face = importlib.import_module("lit_rl.callbacks.sb3")
    home = importlib.import_module(f"lit_rl.callbacks.sb3.{SB3_CALLBACKS[name]}")
    assert getattr(face, name) is getattr(home, name)
    assert name in face.__all__


def test_lit_rl_callbacks_exports_the_lightning_callbacks_and_sb3s_eval_callback():
    from lit_rl.callbacks import EnvStepProgressBar, EvalCallback, PeriodicEvaluation, evaluate_episodes  # noqa: F401
    from lit_rl.callbacks.evaluation import PeriodicEvaluation as LightningEval
    from lit_rl.callbacks.sb3 import EvalCallback as SB3Eval

    assert PeriodicEvaluation is LightningEval and EvalCallback is SB3Eval


def test_a_family_imported_first_works_without_stable_baselines3():
    """The deepest file imported first (no import circle through the package face); SB3 stays optional."""
    code = "import sys, lit_rl.callbacks.sb3.stop_training; print('stable_baselines3' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_old_name_of_evaluate_episodes_warns_and_names_both_functions():
    import lit_rl.callbacks as callbacks
    from lit_rl.callbacks import evaluate_episodes

    with pytest.warns(DeprecationWarning, match="lit_rl.evaluation.evaluate_policy"):
        old = callbacks.evaluate_policy
    assert old is evaluate_episodes
