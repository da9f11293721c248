"""SB3's logger output formats (``stable_baselines3.common.logger``): the documented import path.

``model.logger`` is an :class:`SB3Logger`; its ``output_formats`` hold a :class:`HumanOutputFormat` (the stdout
table, at ``verbose >= 1``) and one format per Lightning logger of the run: a :class:`TensorBoardOutputFormat`
(``.writer`` is the run's SummaryWriter) for TensorBoard, a :class:`LightningOutputFormat` for the others.
The classes live in :mod:`lit_rl.core.sb3_logger`, next to the algorithm that owns the logger.
"""

from lit_rl.core.sb3_logger import HumanOutputFormat, LightningOutputFormat, SB3Logger, TensorBoardOutputFormat

__all__ = ["HumanOutputFormat", "LightningOutputFormat", "SB3Logger", "TensorBoardOutputFormat"]
