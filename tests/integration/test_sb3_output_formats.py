"""``model.logger.output_formats`` as in SB3: the stdout table at ``verbose >= 1`` and the run's TensorBoard writer."""

from __future__ import annotations

import io

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from lit_rl import SAC
from lit_rl.callbacks.sb3 import BaseCallback
from lit_rl.logger import HumanOutputFormat, SB3Logger, TensorBoardOutputFormat

TINY = {"learning_starts": 50, "policy_kwargs": {"net_arch": [16]}, "seed": 0, "device": "cpu"}


class SummaryWriterCallback(BaseCallback):
    """SB3's documented example ("Directly Accessing The Summary Writer"): write through the formatter's writer."""

    def _on_training_start(self) -> None:
        self.formats = list(self.logger.output_formats)
        self.tb_formatter = next(f for f in self.logger.output_formats if isinstance(f, TensorBoardOutputFormat))

    def _on_step(self) -> bool:
        if self.n_calls % 50 == 0:
            self.tb_formatter.writer.add_scalar("custom/n_calls", self.n_calls, self.num_timesteps)
            self.tb_formatter.writer.add_text("direct_access", "this is a value", self.num_timesteps)
            self.tb_formatter.writer.flush()
        return True


def test_tensorboard_format_writes_through_the_runs_summary_writer(tmp_path):
    model = SAC("MlpPolicy", "Pendulum-v1", tensorboard_log=str(tmp_path), **TINY)
    callback = SummaryWriterCallback()
    model.learn(200, callback=callback, log_every_n_steps=100)
    assert callback.tb_formatter.writer is model.trainer.logger.experiment  # the run's own SummaryWriter
    assert [type(f) for f in callback.formats] == [TensorBoardOutputFormat]  # verbose=0: no stdout table
    events = EventAccumulator(str(tmp_path / "SAC_1"))
    events.Reload()
    scalars = events.Tags()["scalars"]
    assert "custom/n_calls" in scalars and "train/critic_loss" in scalars  # the callback's and lit_rl's, one run
    assert [e.value for e in events.Scalars("custom/n_calls")] == [50.0, 100.0, 150.0, 200.0]
    assert [e.step for e in events.Scalars("custom/n_calls")] == [50, 100, 150, 200]
    assert "direct_access/text_summary" in events.Tags()["tensors"]


class DocumentedSummaryWriterCallback(BaseCallback):
    """SB3's "Directly Accessing The Summary Writer" callback as its documentation has it (the imports aside)."""

    def _on_training_start(self):
        self._log_freq = 25  # log every 25 calls
        output_formats = self.logger.output_formats
        # Save reference to tensorboard formatter object
        self.tb_formatter = next(
            formatter for formatter in output_formats if isinstance(formatter, TensorBoardOutputFormat)
        )

    def _on_step(self) -> bool:
        if self.n_calls % self._log_freq == 0:
            self.tb_formatter.writer.add_scalar("direct/reward_sum", 2.0 * self.n_calls, self.num_timesteps)
            self.tb_formatter.writer.flush()
        return True


def test_sb3s_documented_summary_writer_callback_runs_with_the_public_logger_path(tmp_path):
    sb3 = pytest.importorskip("stable_baselines3")

    kwargs = {"learning_starts": 50, "policy_kwargs": {"net_arch": [16]}, "seed": 0, "verbose": 1}
    reference = sb3.SAC("MlpPolicy", "Pendulum-v1", tensorboard_log=str(tmp_path / "sb3"), device="cpu", **kwargs)
    reference.learn(10)
    model = SAC("MlpPolicy", "Pendulum-v1", tensorboard_log=str(tmp_path / "lit"), device="cpu", **kwargs)
    model.learn(100, callback=DocumentedSummaryWriterCallback())
    # SB3's formats at verbose=1 with tensorboard_log: the stdout table first, then TensorBoard; the same here
    assert [type(f).__name__ for f in model.logger.output_formats] == [
        type(f).__name__ for f in reference.logger.output_formats
    ] == ["HumanOutputFormat", "TensorBoardOutputFormat"]
    assert type(model.logger) is SB3Logger
    events = EventAccumulator(str(tmp_path / "lit" / "SAC_1"))
    events.Reload()
    scalars = events.Scalars("direct/reward_sum")
    assert [(e.step, e.value) for e in scalars] == [(25, 50.0), (50, 100.0), (75, 150.0), (100, 200.0)]


class DumpingCallback(BaseCallback):
    """Records values and dumps them itself, as an SB3 callback may."""

    def _on_step(self) -> bool:
        if self.n_calls == 60:
            self.logger.record("custom/shown", 1.5)
            self.logger.record("custom/hidden", 2.5, exclude="stdout")
            self.logger.dump(self.num_timesteps)
        return True


def test_dump_prints_the_table_at_verbose_1_and_the_formats_follow_verbose(tmp_path, capsys):
    model = SAC("MlpPolicy", "Pendulum-v1", verbose=1, **TINY)
    capsys.readouterr()  # the constructor's "Using cpu device"
    model.learn(100, callback=DumpingCallback(), log_interval=None, logger=True, default_root_dir=str(tmp_path))
    formats = model.logger.output_formats
    assert isinstance(formats[0], HumanOutputFormat) and formats[1].name == "csv"
    lines = capsys.readouterr().out.splitlines()
    # SB3's table, without the record excluded from "stdout"; log_interval=None: no periodic table
    assert lines == ["-" * 23, "| custom/  |          |", "|    shown | 1.5      |", "-" * 23]
    header = (tmp_path / "SAC" / "version_0" / "metrics.csv").read_text().splitlines()[0]
    assert "custom/hidden" in header and "custom/shown" in header  # the CSV format gets both
    model.verbose = 0
    assert not any(isinstance(f, HumanOutputFormat) for f in model.logger.output_formats)


def test_table_layout_equals_sb3s_human_output_format():
    sb3_logger = pytest.importorskip("stable_baselines3.common.logger")
    values = {
        "rollout/ep_rew_mean": np.float64(-1234.5678),
        "rollout/ep_len_mean": 200.0,
        "time/fps": 512,
        "time/episodes": 4,
        "train/learning_rate": 0.0003,
        "train/a_very_long_metric_name_that_sb3_cuts_short": 1e-9,
        "train/note": "text",
        "train/skipped": 3.0,
        "eval/count": np.float32(2.5),
    }
    excluded = {key: (("stdout",) if key == "train/skipped" else ()) for key in values}
    theirs, ours = io.StringIO(), io.StringIO()
    sb3_logger.HumanOutputFormat(theirs).write(values, excluded, step=7)
    HumanOutputFormat(ours).write(values, excluded, step=7)
    assert ours.getvalue() == theirs.getvalue()
    assert "skipped" not in ours.getvalue()
