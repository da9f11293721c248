"""A study's journal file on a disk that fills: lit_rl's journal backend leaves it readable, Optuna's does not.

Optuna appends with buffered writes; on a full disk the last block takes part of a line, the next append
continues it and every later read fails. ``WholeLinesJournalFileBackend`` cuts a failed append back.
"""

from __future__ import annotations

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from lit_rl.launcher.tune_workers import open_storage
from tests.helpers import fill_disk, mounted_tmpfs


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs."""
    with mounted_tmpfs(tmp_path / "disk", "size=1m") as folder:
        yield folder


def append_on_a_full_disk(storage: optuna.storages.BaseStorage, folder) -> Exception | None:
    """Three trials, then a fourth with a large attribute on a full disk (the journal's last block has room for a
    part of its line only); returns what that append raised, after freeing the disk."""
    study = optuna.create_study(study_name="s", storage=storage)
    x = optuna.distributions.FloatDistribution(0, 9)
    for value in range(3):
        study.add_trial(optuna.trial.create_trial(params={"x": float(value)}, distributions={"x": x}, value=value))
    fill_disk(folder)
    try:
        study.add_trial(optuna.trial.create_trial(value=1.0, user_attrs={"note": "n" * 20_000}))
        raised = None
    except Exception as error:
        raised = error
    (folder / "ballast").unlink()
    return raised


def reopened_trials(folder) -> int:
    """The study's trials as a new process sees them, after it appends one more."""
    study = optuna.load_study(study_name="s", storage=JournalStorage(JournalFileBackend(str(folder / "j.log"))))
    study.add_trial(optuna.trial.create_trial(value=2.0))
    return len(optuna.load_study(study_name="s", storage=open_storage(str(folder / "j.log"))).trials)


def test_a_full_disk_leaves_lit_rls_journal_readable(small_disk):
    raised = append_on_a_full_disk(open_storage(str(small_disk / "j.log")), small_disk)
    assert isinstance(raised, OSError) and raised.errno == 28  # ENOSPC reaches the worker, which fails its trial
    assert reopened_trials(small_disk) == 4


def test_optunas_own_journal_breaks_on_a_full_disk(small_disk):
    # The case the backend exists for: with Optuna's plain file backend the study cannot be read any more.
    append_on_a_full_disk(JournalStorage(JournalFileBackend(str(small_disk / "j.log"))), small_disk)
    # The next append continues the half line, so the new trial's own record cannot be read back: Optuna 5.1 fails
    # with an AttributeError there (a JSON error where a later read meets the broken line).
    with pytest.raises((ValueError, AttributeError)):
        reopened_trials(small_disk)
