"""W&B unreachable or without credentials: the logger falls back to offline and says so once."""

from __future__ import annotations

import pytest

from lit_rl.launcher.loggers import make_wandb_logger, wandb_reachable


def test_unreachable_server_falls_back_to_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)  # credentials present, so only reachability decides
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    assert not wandb_reachable(timeout=1.0)
    for mode in ("auto", "online"):
        with pytest.warns(UserWarning, match="unreachable, logging offline") as record:
            logger = make_wandb_logger(mode=mode, save_dir=str(tmp_path))
        assert len(record) == 1 and logger._wandb_init["mode"] == "offline"


def test_no_credentials_is_offline_with_one_warning(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    with pytest.warns(UserWarning, match="no credentials found") as record:
        logger = make_wandb_logger(mode="auto", save_dir=str(tmp_path))
    assert len(record) == 1 and logger._wandb_init["mode"] == "offline"


def test_unknown_mode_names_the_allowed_ones(tmp_path):
    with pytest.raises(ValueError, match="logger.wandb.mode='sometimes'.*offline"):
        make_wandb_logger(mode="sometimes", save_dir=str(tmp_path))
