"""Typed reads of the ``Trainer`` attributes Lightning sets at run time without declaring them on the class.

Lightning's connectors assign ``trainer.callbacks`` and ``trainer.datamodule`` to the instance
(``callback_connector.py``, ``data_connector.py``), so type checkers do not see them on ``lightning.Trainer``.
"""

from __future__ import annotations

import lightning as L

from lit_rl.data.datamodule import RLDataModule


def trainer_callbacks(trainer: L.Trainer) -> list[L.Callback]:
    """``trainer.callbacks``: every callback of the Trainer, in Lightning's order."""
    callbacks = getattr(trainer, "callbacks", None)
    if not isinstance(callbacks, list):
        raise TypeError(f"trainer.callbacks is {type(callbacks).__name__}, not Lightning's list of callbacks")
    return callbacks


def trainer_datamodule(trainer: L.Trainer) -> RLDataModule:
    """``trainer.datamodule``: the run's :class:`RLDataModule` (set by ``trainer.fit(..., datamodule=...)``)."""
    datamodule = getattr(trainer, "datamodule", None)
    if not isinstance(datamodule, RLDataModule):
        raise TypeError(f"trainer.datamodule is {type(datamodule).__name__}; lit_rl runs fit with an RLDataModule")
    return datamodule
