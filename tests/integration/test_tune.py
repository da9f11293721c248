"""``python -m lit_rl.tune``: Optuna trials through the normal train() path, pruning, resuming, retraining."""

from __future__ import annotations

import json

import optuna
import pytest
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from lit_rl.callbacks.pruning import OptunaPruning
from lit_rl.launcher.train import train
from lit_rl.launcher.tune import (
    Tuner,
    compose_train_config,
    load_tune_config,
    main,
    parse_search_space,
    split_overrides,
)
from lit_rl.launcher.tune_workers import open_storage

# Tiny trials: 300 env steps, an evaluation every 100, 32-unit networks pinned on the command line
# (a key given on the command line is fixed, not searched).
TINY = [
    "env=Pendulum-v1", "trainer=smoke", "trainer.enable_progress_bar=false", "eval.freq=100",
    "algo.policy_kwargs.net_arch.qf=[32,32]", "algo.policy_kwargs.net_arch.pi=[32,32]",
]  # fmt: skip


@pytest.fixture(autouse=True)
def clear_hydra_config():
    """Trials set Hydra's global run config in this process; later tests in the worker start without it."""
    yield
    HydraConfig.instance().cfg = None


def test_search_space_follows_the_hydra_optuna_sweeper_syntax():
    space = parse_search_space(
        {"lr": "tag(log, interval(1e-4, 1e-2))", "n": "int(interval(1, 4))", "qf": "choice([64,64], [256,256])"}
    )
    assert space["lr"] == optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    assert space["n"] == optuna.distributions.IntDistribution(1, 4)
    assert space["qf"] == optuna.distributions.CategoricalDistribution(("[64,64]", "[256,256]"))
    with pytest.raises(ValueError, match=r"hparams_search.params.gamma='0.99' is not a search dimension"):
        parse_search_space({"gamma": "0.99"})


def test_command_line_splits_into_tuner_and_train_overrides():
    tuner, trial = split_overrides(["n_trials=3", "pruner.name=none", "env=Hopper-v4", "algo.gamma=0.98", "seed=2"])
    assert tuner == ["n_trials=3", "pruner.name=none"]
    assert trial == ["env=Hopper-v4", "algo.gamma=0.98", "seed=2"]


def test_pruning_callback_stops_the_run_at_the_first_bad_evaluation(tmp_path):
    # Pendulum returns are negative: a threshold pruner at 0 prunes at the first report.
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.ThresholdPruner(lower=0.0))
    trial = study.ask()
    pruning = OptunaPruning(trial)
    cfg = compose_train_config(["algo=crossq", *TINY, "total_timesteps=400"], tmp_path / "run")
    train(cfg, callbacks=[pruning])
    assert pruning.pruned
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["env_steps"] == 100  # stopped at the first evaluation, not at 400
    frozen = study.trials[0]
    assert list(frozen.intermediate_values) == [100]
    assert frozen.intermediate_values[100] == pytest.approx(summary["final_eval_return"])

    # An evaluation at total_timesteps is reported but does not prune: the run is complete.
    last = OptunaPruning(study.ask())
    cfg = compose_train_config(["algo=crossq", *TINY, "total_timesteps=100"], tmp_path / "short")
    train(cfg, callbacks=[last])
    assert not last.pruned and last.trial.should_prune()  # the pruner would have pruned it


def test_study_runs_resumes_and_retrains_the_best_trial(tmp_path):
    study_dir = tmp_path / "study"
    common = [f"study_dir={study_dir}", "sampler.seed=0", "sampler.n_startup_trials=2", "pruner.n_startup_trials=1"]
    best = main(["hparams_search=crossq_optuna", "n_trials=3", *common, *TINY])
    storage = f"sqlite:///{study_dir / 'study.db'}"
    study = optuna.load_study(study_name="crossq_optuna_Pendulum-v1", storage=storage)
    assert len(study.trials) == 3
    assert {t.state for t in study.trials} <= {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}
    for t in study.trials:
        run = study_dir / f"trial_{t.number}"
        summary = json.loads((run / "summary.json").read_text())
        assert summary["optuna"] == {
            "study": "crossq_optuna_Pendulum-v1",
            "trial": t.number,
            "pruned": t.state.name == "PRUNED",
        }
        assert summary["env_steps"] == (300 if t.state.name == "COMPLETE" else max(t.intermediate_values))
        assert t.state.name == "COMPLETE" or summary["env_steps"] < 300  # the last evaluation never prunes
        # Each trial is an ordinary run folder: its config holds the sampled learning rate.
        config = OmegaConf.load(run / ".hydra" / "config.yaml")
        assert config.algo.learning_rate == pytest.approx(t.params["algo.learning_rate"])
        assert config.algo.policy_kwargs.net_arch.qf == [32, 32]  # pinned, not searched
        assert "algo.policy_kwargs.net_arch.qf" not in t.params
    saved = OmegaConf.to_container(OmegaConf.load(study_dir / "best_overrides.yaml"))
    assert saved["trial"] == study.best_trial.number == best["trial"]
    assert f"algo.learning_rate={study.best_trial.params['algo.learning_rate']!r}" in saved["overrides"]

    # Same study name and storage: the study continues its trial count (here with the other sampler and pruner).
    other = ["sampler.name=random", "pruner.name=successive_halving", "pruner.min_resource=100"]
    main(["hparams_search=crossq_optuna", "n_trials=2", *common, *other, *TINY])
    study = optuna.load_study(study_name="crossq_optuna_Pendulum-v1", storage=storage)
    assert [t.number for t in study.trials] == [0, 1, 2, 3, 4]
    assert (study_dir / "trial_4" / "summary.json").exists()

    # n_trials=0 retrain_best=true: no new trial, one run of the best trial's overrides.
    best = main(["hparams_search=crossq_optuna", "n_trials=0", "retrain_best=true", *common, *TINY])
    assert len(optuna.load_study(study_name="crossq_optuna_Pendulum-v1", storage=storage).trials) == 5
    retrained = study_dir / f"best_trial_{best['trial']}_s0"
    assert json.loads((retrained / "summary.json").read_text())["status"] == "completed"
    assert OmegaConf.load(retrained / ".hydra" / "config.yaml").algo.learning_rate == pytest.approx(
        best["params"]["algo.learning_rate"]
    )


def test_bad_tuner_values_name_the_key(tmp_path):
    with pytest.raises(ValueError, match=r"sampler.name='grid' is not allowed; allowed: \['tpe', 'random'\]"):
        main(["sampler.name=grid", f"study_dir={tmp_path}", *TINY])
    with pytest.raises(ValueError, match=r"pruner.name='hyperband' is not allowed"):
        main(["pruner.name=hyperband", f"study_dir={tmp_path}", *TINY])
    with pytest.raises(ValueError, match="n_trials=-1"):
        main(["n_trials=-1", *TINY])


def test_bad_worker_values_name_the_key(tmp_path):
    with pytest.raises(
        ValueError, match=r"workers.launcher='kubernetes' is not allowed; allowed: \['slurm', 'local'\]"
    ):
        main(["workers.n=2", "workers.launcher=kubernetes", f"study_dir={tmp_path}", *TINY])
    with pytest.raises(ValueError, match=r"workers.n=-1 must be an integer >= 0"):
        main(["workers.n=-1", f"study_dir={tmp_path}", *TINY])
    with pytest.raises(ValueError, match=r"workers.grace_period=5 must exceed workers.heartbeat_interval=10"):
        main(["workers.n=2", "workers.heartbeat_interval=10", "workers.grace_period=5", f"study_dir={tmp_path}", *TINY])
    with pytest.raises(ValueError, match=r"retrain_best=true needs workers.wait=true"):
        main(["workers.n=2", "workers.wait=false", "retrain_best=true", f"study_dir={tmp_path}", *TINY])
    with pytest.raises(ValueError, match=r"storage='studies/sac' is not a storage; allowed: sqlite:///path.db"):
        main(["storage=studies/sac", f"study_dir={tmp_path}", *TINY])


def test_local_workers_share_a_journal_study(tmp_path):
    # workers.launcher=local: the same worker loop as on SLURM, as local processes (submitit's LocalExecutor).
    study_dir = tmp_path / "study"
    storage = f"{study_dir / 'study.log'}"  # a path ending .log is a journal file
    workers = ["workers.n=2", "workers.launcher=local", "workers.heartbeat_interval=1", "workers.grace_period=5"]
    main(["hparams_search=sac_optuna", f"storage={storage}", f"study_dir={study_dir}", "n_trials=3", *workers, *TINY])
    study = optuna.load_study(study_name="sac_optuna_Pendulum-v1", storage=open_storage(storage))
    assert sorted(t.number for t in study.trials) == [0, 1, 2]
    assert all(t.user_attrs["worker"].startswith("local:") for t in study.trials)
    report = json.loads((study_dir / "workers.json").read_text())
    assert set(report["outcomes"].values()) == {"ok"}
    assert sum(len(trials) for trials in report["trials_by_worker"].values()) == 3


def test_the_default_study_is_named_after_the_env_name_in_one_folder(tmp_path, monkeypatch):
    # env=dmc's id is namespaced (lit_rl/DMC-v0): the study and its folder take the task's name instead.
    monkeypatch.chdir(tmp_path)
    tune_cfg, search_name = load_tune_config(["hparams_search=sac_optuna"])
    tuner = Tuner(tune_cfg, ["env=dmc", "env.kwargs.task=walker-walk"], search_name)
    assert tuner.study_name == "sac_optuna_dmc-walker-walk"
    assert tuner.study_dir.resolve() == tmp_path / "outputs" / "optuna" / "sac_optuna_dmc-walker-walk"
    assert tuner.study_dir.is_dir() and not (tmp_path / "outputs" / "optuna" / "sac_optuna_lit_rl").exists()
