"""The collection loop side by side with SB3: what a step callback sees, and where a False return stops."""

from __future__ import annotations

import pytest
import stable_baselines3 as sb3
from stable_baselines3.common.callbacks import BaseCallback as SB3BaseCallback

import lit_rl
from lit_rl.callbacks.sb3 import BaseCallback

STOP_AT = 7  # the callback's n-th call returns False
NETS = {"net_arch": [8, 8]}


def _observe(callback, stored: int) -> bool:
    callback.seen.append((callback.n_calls, callback.num_timesteps, stored, bool(callback.locals["dones"].any())))
    return callback.n_calls < STOP_AT


class LitRecorder(BaseCallback):
    """Records (call, env steps, transitions stored) at every step; stops at STOP_AT."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple] = []

    def _on_step(self) -> bool:
        return _observe(self, len(self.model.replay_buffer))


class SB3Recorder(SB3BaseCallback):
    """The same recorder on SB3's callback API."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple] = []

    def _on_step(self) -> bool:
        return _observe(self, self.model.replay_buffer.size() * self.model.n_envs)


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_step_callback_sees_the_step_before_it_is_stored_and_false_stops_there(algo):
    kwargs = dict(learning_starts=1_000, buffer_size=1_000, seed=0)
    lit_cb, ref_cb = LitRecorder(), SB3Recorder()
    lit_model = getattr(lit_rl, algo)("MlpPolicy", policy_kwargs=dict(NETS), **kwargs)
    lit_model.learn(50, env="Pendulum-v1", callback=lit_cb)
    # SB3 adds keys to the policy_kwargs it is given: a copy each.
    ref_model = getattr(sb3, algo)("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(NETS), **kwargs)
    ref_model.learn(50, callback=ref_cb)
    assert lit_cb.seen == ref_cb.seen
    assert [stored for _, _, stored, _ in lit_cb.seen] == list(range(STOP_AT))  # the step is not stored yet
    assert lit_model.num_timesteps == ref_model.num_timesteps == STOP_AT
    assert len(lit_model.replay_buffer) == ref_model.replay_buffer.size() == STOP_AT - 1
