"""One observation or a batch: ``observation_batch`` (used by the models' and the policies' ``predict``) side by
side with Stable-Baselines3's ``is_vectorized_observation`` / ``maybe_transpose``."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.preprocessing import maybe_transpose
from stable_baselines3.common.utils import is_vectorized_observation

from lit_rl import DQN, SAC
from lit_rl.nets.preprocessing import channels_first_space
from lit_rl.policies.sb3_methods import observation_batch

SPACES = {
    "box": spaces.Box(-1.0, 1.0, (3,), np.float32),
    "box2d": spaces.Box(-1.0, 1.0, (2, 3), np.float32),
    "discrete": spaces.Discrete(4),
    "multidiscrete": spaces.MultiDiscrete([2, 3, 4]),
    "multibinary": spaces.MultiBinary(5),
}
SHAPES = [(), (1,), (2,), (3,), (4,), (5,), (1, 3), (4, 3), (2, 3), (4, 2, 3), (3, 5), (1, 5, 1), (2, 2, 2, 2)]


def sb3_vectorized(observation: np.ndarray, space: spaces.Space) -> bool | None:
    """SB3's answer: True (batch), False (one observation) or None (it raises)."""
    try:
        return is_vectorized_observation(observation, space)
    except ValueError:
        return None


@pytest.mark.parametrize("name", SPACES)
@pytest.mark.parametrize("shape", SHAPES)
def test_single_or_batch_as_sb3_decides(name, shape):
    space, obs = SPACES[name], np.zeros(shape, dtype=np.int64)
    expected = sb3_vectorized(obs, space)
    if expected is None:
        with pytest.raises(ValueError, match=r"Unexpected observation shape .* allowed"):
            observation_batch(space, obs)
        return
    batch, single = observation_batch(space, obs)
    assert single is (not expected)
    assert batch.shape == (1 if single else shape[0], *space.shape)


def test_a_python_int_is_one_discrete_observation():
    batch, single = observation_batch(spaces.Discrete(4), 2)
    assert single and batch.shape == (1,) and sb3_vectorized(2, spaces.Discrete(4)) is False


@pytest.mark.parametrize("space_shape", [(84, 84, 3), (3, 84, 84)])
@pytest.mark.parametrize("shape", [(84, 84, 3), (3, 84, 84), (5, 84, 84, 3), (5, 3, 84, 84), (84, 3, 84)])
def test_images_in_either_channel_layout_as_sb3(space_shape, shape):
    """lit_rl keeps the env's space; SB3 predicts in its channel-first one: both take either layout."""
    ours = spaces.Box(0, 255, space_shape, np.uint8)
    theirs = channels_first_space(ours)
    obs = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    expected = sb3_vectorized(maybe_transpose(obs, theirs), theirs)
    if expected is None:
        with pytest.raises(ValueError, match="Unexpected observation shape"):
            observation_batch(ours, obs)
        return
    batch, single = observation_batch(ours, obs)
    assert single is (not expected) and batch.shape[1:] == ours.shape
    # the same pixels: ours in channels first is SB3's batch
    sb3_batch = maybe_transpose(obs, theirs).reshape((-1, *theirs.shape))
    assert np.array_equal(batch if ours == theirs else np.moveaxis(batch, -1, -3), sb3_batch)


DICT = spaces.Dict({"goal": spaces.Box(-1, 1, (2,)), "obs": spaces.Box(-1, 1, (3,)), "n": spaces.Discrete(3)})


def test_dict_observations_checked_key_by_key():
    one = {"goal": np.zeros(2), "obs": np.zeros(3), "n": 1}
    batch, single = observation_batch(DICT, one)
    assert single and {k: v.shape for k, v in batch.items()} == {"goal": (1, 2), "obs": (1, 3), "n": (1,)}
    four = {"goal": np.zeros((4, 2)), "obs": np.zeros((4, 3)), "n": np.zeros(4, np.int64)}
    batch, single = observation_batch(DICT, four)
    assert not single and batch["obs"].shape == (4, 3)
    with pytest.raises(ValueError, match=r"Unexpected observation shape \(4, 5\) for key 'obs'"):
        observation_batch(DICT, {**four, "obs": np.zeros((4, 5))})
    with pytest.raises(ValueError, match=r"mix of single and batched"):
        observation_batch(DICT, {**four, "obs": np.zeros(3)})
    with pytest.raises(ValueError, match=r"keys \['goal', 'obs'\] do not match .* allowed: \['goal', 'n', 'obs'\]"):
        observation_batch(DICT, {"goal": np.zeros(2), "obs": np.zeros(3)})
    with pytest.raises(ValueError, match="Dict"):
        observation_batch(DICT, np.zeros(5))


def test_gym_reset_tuple_is_named_as_sb3_does():
    with pytest.raises(ValueError, match="mixing Gym API"):
        observation_batch(SPACES["box"], (np.zeros(3), {}))


@pytest.fixture(scope="module")
def sac():
    return SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, learning_starts=0, seed=0)


def test_model_and_policy_predict_share_the_checks(sac):
    obs = np.zeros((2, 3), np.float32)
    assert np.allclose(sac.predict(obs, deterministic=True)[0], sac.policy.predict(obs, deterministic=True)[0])
    assert sac.predict(obs[0])[0].shape == sac.policy.predict(obs[0])[0].shape == (1,)
    for predict in (sac.predict, sac.policy.predict, sac.actor.predict):
        with pytest.raises(ValueError, match=r"Unexpected observation shape \(2, 4\).*allowed: \(3,\)"):
            predict(np.zeros((2, 4), np.float32))
        with pytest.raises(ValueError, match="mixing Gym API"):
            predict((obs[0], {}))  # what gymnasium's env.reset() returns


def test_dqn_takes_an_int_observation_of_a_discrete_space():
    from stable_baselines3.common.envs import IdentityEnv

    model = DQN("MlpPolicy", IdentityEnv(3), policy_kwargs={"net_arch": [8]}, learning_starts=0, seed=0)
    action, _ = model.predict(1, deterministic=True)
    assert action.shape == () and model.action_space.contains(action)
    actions, _ = model.policy.predict(np.array([0, 1, 2]), deterministic=True)
    assert actions.shape == (3,)
