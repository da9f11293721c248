"""SB3's ``CheckpointCallback``: the model (and optionally its replay buffer and VecNormalize) every n calls."""

from __future__ import annotations

from pathlib import Path

from lit_rl.callbacks.sb3.base import BaseCallback
from lit_rl.envs.sb3_vec_env import sb3_vec_normalize


class CheckpointCallback(BaseCallback):
    """Save the model every ``save_freq`` calls to ``save_path/<name_prefix>_<steps>_steps.zip`` (SB3's names).

    ``save_replay_buffer=True`` also writes ``<name_prefix>_replay_buffer_<steps>_steps.pkl``,
    ``save_vecnormalize=True`` the statistics of an SB3 ``VecNormalize`` training env to
    ``<name_prefix>_vecnormalize_<steps>_steps.pkl`` (``VecNormalize.load`` reads it).
    Model and buffer files are written atomically.
    """

    def __init__(
        self,
        save_freq: int,
        save_path: str | Path,
        name_prefix: str = "rl_model",
        save_replay_buffer: bool = False,
        save_vecnormalize: bool = False,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose)
        if save_freq < 1:
            raise ValueError(f"save_freq={save_freq} must be >= 1")
        self.save_freq, self.save_path, self.name_prefix = save_freq, Path(save_path), name_prefix
        self.save_replay_buffer, self.save_vecnormalize = save_replay_buffer, save_vecnormalize

    def _init_callback(self) -> None:
        self.save_path.mkdir(parents=True, exist_ok=True)

    def _checkpoint_path(self, checkpoint_type: str = "", extension: str = "zip") -> Path:
        return self.save_path / f"{self.name_prefix}_{checkpoint_type}{self.num_timesteps}_steps.{extension}"

    def _on_step(self) -> bool:
        if self.n_calls % self.save_freq == 0:
            path = self.model.save(self._checkpoint_path())
            if self.verbose >= 2:
                print(f"Saving model checkpoint to {path}")
            if self.save_replay_buffer and self.model.replay_buffer is not None:
                path = self.model.save_replay_buffer(self._checkpoint_path("replay_buffer_", "pkl"))
                if self.verbose >= 2:
                    print(f"Saving model replay buffer checkpoint to {path}")
            vec_normalize = sb3_vec_normalize(self.training_env) if self.save_vecnormalize else None
            if vec_normalize is not None:
                path = self._checkpoint_path("vecnormalize_", "pkl")
                vec_normalize.save(path)
                if self.verbose >= 2:
                    print(f"Saving model VecNormalize to {path}")
        return True
