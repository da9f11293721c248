"""HER as SB3 users write it: GoalSelectionStrategy members, copy_info_dict infos reaching compute_reward."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv as SB3BitFlippingEnv
from stable_baselines3.her.goal_selection_strategy import GoalSelectionStrategy as SB3Strategy

import lit_rl
from lit_rl import DQN, GoalSelectionStrategy, HerReplayBuffer
from lit_rl.buffers import GoalSelectionStrategy as BuffersStrategy

GOAL = spaces.Box(-np.inf, np.inf, (1,), np.float32)
SPACE = spaces.Dict({"observation": GOAL, "achieved_goal": GOAL, "desired_goal": GOAL})


def info_reward(achieved, desired, infos):
    """A reward that only the stored infos can give: the step number the env wrote into its info."""
    rewards = np.array([info["step"] for info in infos], dtype=np.float32)
    for info in infos:
        info["step"] = -999  # compute_reward may edit its infos; the buffer's stay intact
    return rewards


def filled_buffer(**kwargs) -> HerReplayBuffer:
    """Two episodes (6 and 4 steps) in each of 2 envs; obs["observation"] and info["step"] both hold the step."""
    buf = HerReplayBuffer(64, SPACE, spaces.Discrete(2), n_envs=2, seed=0, compute_reward=info_reward, **kwargs)
    for t in range(10):
        obs = {k: np.full((2, 1), t, np.float32) for k in ("observation", "achieved_goal", "desired_goal")}
        done = np.full(2, t in (5, 9))
        buf.add(obs, obs, np.zeros(2), np.zeros(2), np.zeros(2, bool), done, [{"step": t}, {"step": t}])
    return buf


def test_goal_selection_strategy_is_sb3s_enum_exported_where_sb3_users_import_it():
    assert GoalSelectionStrategy is BuffersStrategy is lit_rl.buffers.her.GoalSelectionStrategy
    assert [(s.name, s.value) for s in GoalSelectionStrategy] == [(s.name, s.value) for s in SB3Strategy]


@pytest.mark.parametrize("given", ["final", "FINAL", GoalSelectionStrategy.FINAL, SB3Strategy.FINAL])
def test_names_and_enum_members_select_the_same_strategy(given):
    buf = filled_buffer(goal_selection_strategy=given)
    assert buf.goal_selection_strategy is GoalSelectionStrategy.FINAL
    rows = torch.tensor([0, 3, 6, 8])
    goals = buf.sample_goals(rows, torch.zeros_like(rows))[:, 0]
    assert goals.tolist() == [5.0, 5.0, 9.0, 9.0]  # the last achieved goal of each episode


def test_bad_strategy_names_the_key_and_the_allowed_values():
    with pytest.raises(ValueError, match=r"goal_selection_strategy='past'.*allowed: \['future', 'final', 'episode'\]"):
        filled_buffer(goal_selection_strategy="past")
    with pytest.raises(TypeError, match="copy_info_dict=1 must be a bool"):
        filled_buffer(copy_info_dict=1)


def test_copy_info_dict_passes_each_transitions_stored_info_to_compute_reward():
    buf = filled_buffer(copy_info_dict=True, n_sampled_goal=4)
    batch = buf.sample(200)
    n_virtual = int(buf.her_ratio * 200)
    # relabelled rewards come from the infos of exactly the sampled transitions
    np.testing.assert_array_equal(batch.rewards[:n_virtual].numpy(), batch.observations[:n_virtual, 0].numpy())
    assert all(info["step"] != -999 for info in buf.infos[:10].ravel())
    # the infos travel with the buffer's state (save_replay_buffer / checkpoints)
    state = io.BytesIO()
    torch.save(buf.state_dict(), state)
    state.seek(0)
    restored = HerReplayBuffer(64, SPACE, spaces.Discrete(2), n_envs=2, compute_reward=info_reward, copy_info_dict=True)
    restored.load_state_dict(torch.load(state, weights_only=False))
    assert [info["step"] for info in restored.infos[:10, 1]] == list(range(10))


def test_without_copy_info_dict_compute_reward_gets_empty_dicts_as_in_sb3():
    buf = filled_buffer()
    assert buf.infos is None
    with pytest.raises(KeyError, match="step"):
        buf.sample(16)


class RecordingBitFlipping(SB3BitFlippingEnv):
    """SB3's BitFlippingEnv that records the infos compute_reward receives."""

    seen_infos: list = []

    def compute_reward(self, achieved_goal, desired_goal, info):
        if len(np.shape(achieved_goal)) > 1:  # the buffer's batched call (the env's own step passes one goal)
            RecordingBitFlipping.seen_infos.extend(info)
        return super().compute_reward(achieved_goal, desired_goal, info)


def test_dqn_with_her_on_an_sb3_vec_env_as_sb3s_test_her():
    RecordingBitFlipping.seen_infos = []
    env = make_vec_env(lambda: RecordingBitFlipping(n_bits=4), n_envs=1)
    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={
            "n_sampled_goal": 2,
            "goal_selection_strategy": SB3Strategy.FUTURE,
            "copy_info_dict": True,
        },
        train_freq=4,
        policy_kwargs={"net_arch": [16]},
        learning_starts=40,
        buffer_size=1000,
        seed=0,
    )
    model.learn(80)
    assert model.replay_buffer.goal_selection_strategy is GoalSelectionStrategy.FUTURE
    # the infos BitFlippingEnv wrote at each step (is_success), ended episodes with SB3's extra keys
    assert RecordingBitFlipping.seen_infos and all("is_success" in info for info in RecordingBitFlipping.seen_infos)
    stored = [
        info for info in model.replay_buffer.infos[: model.replay_buffer.pos, 0] if "terminal_observation" in info
    ]
    assert stored and all(info["TimeLimit.truncated"] for info in stored if not info["is_success"])
    assert len(model.ep_success_buffer) == model.collector.episode_num > 0
