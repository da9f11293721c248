"""gymnasium-robotics as lit_rl imports it (lit_rl.envs.robotics): joint helpers under MuJoCo 4, seeded Fetch envs."""

from __future__ import annotations

import logging

import gymnasium as gym
import mujoco
import numpy as np
import pytest

pytest.importorskip("gymnasium_robotics")

from gymnasium_robotics.utils import mujoco_utils  # noqa: E402

from lit_rl.envs import robotics  # noqa: E402


def fetch_push_model() -> tuple[mujoco.MjModel, mujoco.MjData]:
    env = gym.make("FetchPush-v4")
    return env.unwrapped.model, env.unwrapped.data


def joint_values(model: mujoco.MjModel, data: mujoco.MjData, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A joint's qpos and qvel read straight from MuJoCo's arrays (the width from its type's numbers of dofs)."""
    joint = model.joint(name)
    width_qpos, width_qvel = {0: (7, 6), 1: (4, 3), 2: (1, 1), 3: (1, 1)}[int(joint.type[0])]
    qpos_start, qvel_start = int(joint.qposadr[0]), int(joint.dofadr[0])
    return data.qpos[qpos_start : qpos_start + width_qpos], data.qvel[qvel_start : qvel_start + width_qvel]


def test_the_fix_is_applied_exactly_when_mujoco_needs_it(monkeypatch):
    model, data = fetch_push_model()  # built with the fix in place (its constructor sets joints)
    monkeypatch.setattr(mujoco_utils, "mujoco", mujoco)  # gymnasium-robotics as it ships
    mismatch = not robotics.joint_types_match_model_arrays()
    slide = np.int32(int(mujoco.mjtJoint.mjJNT_SLIDE))
    assert mismatch == (slide not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE))
    if mismatch:  # MuJoCo 4: the shipped helpers fail on a slide joint
        with pytest.raises(AssertionError):
            mujoco_utils.get_joint_qpos(model, data, "robot0:slide0")
    assert robotics.fix_joint_type_checks() is mismatch
    assert (mujoco_utils.mujoco is not mujoco) is mismatch
    assert robotics.fix_joint_type_checks() is mismatch  # applying it again changes nothing
    assert mujoco_utils.mujoco.mjtJoint.mjJNT_SLIDE == mujoco.mjtJoint.mjJNT_SLIDE
    assert mujoco_utils.mujoco.mj_forward is mujoco.mj_forward  # the rest of the module is the real one


@pytest.mark.parametrize(
    ("joint", "kind"),
    [("robot0:slide0", "slide"), ("robot0:shoulder_pan_joint", "hinge"), ("object0:joint", "free")],
)
def test_set_and_get_joint_qpos_and_qvel_work(joint, kind):
    model, data = fetch_push_model()
    assert {"slide": 2, "hinge": 3, "free": 0}[kind] == int(model.joint(joint).type[0])
    qpos_width, qvel_width = (7, 6) if kind == "free" else (1, 1)
    qpos = np.linspace(0.1, 0.7, qpos_width) if kind == "free" else 0.25
    qvel = np.linspace(-0.3, 0.3, qvel_width) if kind == "free" else -0.5
    mujoco_utils.set_joint_qpos(model, data, joint, qpos)
    mujoco_utils.set_joint_qvel(model, data, joint, qvel)
    direct_qpos, direct_qvel = joint_values(model, data, joint)
    np.testing.assert_array_equal(direct_qpos, np.atleast_1d(qpos))
    np.testing.assert_array_equal(direct_qvel, np.atleast_1d(qvel))
    np.testing.assert_array_equal(mujoco_utils.get_joint_qpos(model, data, joint), np.atleast_1d(qpos))
    np.testing.assert_array_equal(mujoco_utils.get_joint_qvel(model, data, joint), np.atleast_1d(qvel))


@pytest.mark.parametrize("env_id", ["FetchReach-v4", "FetchPush-v4", "FetchPickAndPlace-v4"])
def test_fetch_reset_and_step_are_deterministic_for_a_seed(env_id):
    def rollout(seed: int) -> list[np.ndarray]:
        env = gym.make(env_id)
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        steps = [np.concatenate([obs[k] for k in ("observation", "achieved_goal", "desired_goal")])]
        for _ in range(20):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            steps.append(np.concatenate([obs["observation"], obs["desired_goal"], [reward, info["is_success"]]]))
        env.close()
        return steps

    first, again, other = rollout(3), rollout(3), rollout(4)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])  # another seed, another start or goal
    assert not np.array_equal(first[0], first[-1])  # the arm moved


def test_the_import_notice_goes_to_the_debug_log(caplog, capfd):
    import gymnasium_robotics
    from farama_notifications import notifications

    expected = notifications.get(robotics.NOTICE_KEY, {}).get(gymnasium_robotics.__version__)
    with caplog.at_level(logging.DEBUG, logger=robotics.__name__):
        robotics.import_gymnasium_robotics()
    logged = [r.getMessage() for r in caplog.records if r.name == robotics.__name__]
    if expected:  # gymnasium-robotics 1.4.2 has one (about AdroitHand reward functions)
        assert any(expected.strip() in message for message in logged), logged
    assert capfd.readouterr().err == ""
    assert notifications.get(robotics.NOTICE_KEY, {}).get(gymnasium_robotics.__version__) == expected  # restored
