"""Dict observation spaces: flattening, buffer storage shapes, algorithm acceptance."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lit_rl.algorithms import DQN, SAC
from lit_rl.buffers import DictObservationFlattener, NStepReplayBuffer, ReplayBuffer

SPACE = spaces.Dict(
    {"pos": spaces.Box(-1.0, 1.0, (2, 2)), "mode": spaces.Discrete(3, start=1), "bits": spaces.MultiBinary(2)}
)
ACT = spaces.Discrete(2)


def dict_obs(t: int, n_envs: int) -> dict[str, np.ndarray]:
    return {
        "pos": np.full((n_envs, 2, 2), t, np.float32),
        "mode": np.full(n_envs, 1 + t % 3),
        "bits": np.tile(np.array([1, 0], np.int8), (n_envs, 1)),
    }


def test_flattener_orders_keys_and_one_hot_encodes_discrete():
    flattener = DictObservationFlattener(SPACE)
    assert list(flattener.slices) == ["bits", "mode", "pos"]  # gymnasium sorts Dict keys
    assert flattener.dim == 2 + 3 + 4 and flattener.flat_space.shape == (9,)
    flat = flattener.flatten(dict_obs(4, 2))  # mode = 2 -> one-hot index 1 (start=1)
    assert flat.dtype == np.float32 and flat.shape == (2, 9)
    np.testing.assert_array_equal(flat[0], [1, 0, 0, 1, 0, 4, 4, 4, 4])
    assert flattener.key(torch.as_tensor(flat), "pos").shape == (2, 4)


@pytest.mark.parametrize(("buffer_class", "kwargs"), [(ReplayBuffer, {}), (NStepReplayBuffer, {"n_steps": 1})])
def test_buffers_store_dict_observations_flat(buffer_class, kwargs):
    buf = buffer_class(48, SPACE, ACT, n_envs=3, seed=0, **kwargs)  # 16 rows of 3 envs
    assert buf.observations.shape == (16, 3, 9)
    for t in range(5):
        buf.add(dict_obs(t, 3), dict_obs(t + 1, 3), np.zeros(3), np.zeros(3), np.zeros(3, bool), np.zeros(3, bool))
    batch = buf.sample(32)
    assert batch.observations.shape == batch.next_observations.shape == (32, 9)
    # the next observation is the following step: its "pos" entries are one larger
    torch.testing.assert_close(batch.next_observations[:, 5:], batch.observations[:, 5:] + 1)


def test_dict_with_unsupported_key_space_is_rejected_naming_the_key():
    bad = spaces.Dict({"obs": spaces.Box(-1, 1, (2,)), "seq": spaces.Tuple([spaces.Discrete(2)])})
    with pytest.raises(ValueError, match="'seq'"):
        DQN("MultiInputPolicy").check_spaces(bad, ACT)
    with pytest.raises(TypeError, match="'seq'"):
        ReplayBuffer(4, bad, ACT)


def test_networks_are_mlps_over_the_concatenated_keys():
    algo = SAC("MultiInputPolicy", policy_kwargs={"net_arch": [8]})
    algo.check_spaces(SPACE, spaces.Box(-1, 1, (2,)))
    algo.build_networks_for(SPACE, spaces.Box(-1, 1, (2,)))
    single = {k: v[0] for k, v in dict_obs(1, 1).items()}
    algo.observation_space, algo.action_space = SPACE, spaces.Box(-1, 1, (2,))
    assert algo.predict(single, deterministic=True)[0].shape == (2,)
    assert algo.predict(dict_obs(1, 5), deterministic=True)[0].shape == (5, 2)


def test_unknown_policy_names_the_allowed_ones():
    with pytest.raises(ValueError, match="MultiInputPolicy"):
        DQN("CnnLstmPolicy")
