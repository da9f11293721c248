"""The datamodule and its token stream."""

from lit_rl.data.datamodule import RLDataModule, TokenStream

__all__ = ["RLDataModule", "TokenStream"]
