"""Every bad input: the launcher exits non-zero in seconds, naming the key, the value and what is allowed,
and writes no summary, checkpoint or metrics; errors of the config itself (those in ``BEFORE_THE_FOLDER``) leave no
run folder at all."""

from __future__ import annotations

import pytest
import torch

from lit_rl import SAC
from tests.helpers import run_launcher

# (overrides, words the error must contain). "{sac}" etc. are files made by the `files` fixture.
BAD_INPUTS = [
    # Config composition: unknown options, keys, wrong types
    (["algo=nope"], ["algo", "nope"]),
    (["algo.learning_rat=0.1"], ["learning_rat"]),
    (["algo.batch_size=abc"], ["batch_size", "abc"]),
    (["logger=nope"], ["logger", "nope"]),
    # Sizes and rates out of range
    (["buffer.buffer_size=0"], ["buffer_size=0"]),
    (["algo.batch_size=-4"], ["batch_size=-4"]),
    (["algo.learning_starts=-1"], ["learning_starts=-1"]),
    (["algo.gradient_steps=-2"], ["gradient_steps=-2", "-1"]),
    (["algo.train_freq=0"], ["train_freq=0", ">= 1"]),
    (["algo.train_freq=[1,hour]"], ["train_freq", "'hour'", "episode"]),
    (["algo.gamma=1.5"], ["gamma=1.5", "(0.0, 1.0]"]),
    (["algo.gamma=0"], ["gamma=0", "(0.0, 1.0]"]),
    (["algo=sac", "algo.tau=1.5"], ["tau=1.5", "[0.0, 1.0]"]),  # tau=0 is allowed (frozen targets, as SB3)
    (["algo=sac", "algo.tau=-0.1"], ["tau=-0.1", "[0.0, 1.0]"]),
    (["algo.learning_rate=-0.001"], ["learning_rate=-0.001"]),
    (["total_timesteps=0"], ["total_timesteps=0"]),
    (["eval.episodes=0"], ["eval.episodes=0"]),
    (["algo=td3", "algo.action_noise=pink"], ["action_noise", "pink", "normal"]),
    # Envs
    (["env.id=HalfCheeta-v4"], ["HalfCheeta-v4", "HalfCheetah-v4"]),
    (["env.id=ALE/Pnog-v5"], ["ALE/Pnog-v5", "ALE/Pong-v5"]),
    (["env.n_envs=0"], ["n_envs=0"]),
    (["env.vectorization=threads"], ["vectorization='threads'", "sync", "async"]),
    (["buffer=her"], ["buffer=her", "goal-conditioned", "Pendulum-v1", "observation space Box", "buffer=replay"]),
    (["buffer.augmentation=random_shift"], ["buffer.augmentation='random_shift'", "shape (3,)", "image observations"]),
    (["buffer.augmentation=flip"], ["buffer.augmentation='flip'", "random_shift"]),
    # Algorithm and spaces that do not fit
    (["env.id=CartPole-v1"], ["CrossQ", "Discrete", "Box"]),
    (["algo=sac", "env.id=CartPole-v1"], ["SAC", "Discrete", "Box"]),
    (["algo=ddpg", "env.id=CartPole-v1"], ["DDPG", "Discrete", "Box"]),
    (["algo=dqn"], ["DQN", "Box", "Discrete"]),
    (["algo=dqn", "env.id=Blackjack-v1"], ["DQN", "Tuple observations", "allowed", "MultiDiscrete"]),
    # Checkpoints
    (["ckpt_path={missing}"], ["ckpt_path=", "does not exist"]),
    (["ckpt_path={text}"], ["ckpt_path=", "cannot be read as a checkpoint"]),
    (["ckpt_path={truncated}"], ["ckpt_path=", "truncated"]),
    (["ckpt_path={foreign}"], ["ckpt_path=", "not a lit_rl checkpoint"]),
    (["ckpt_path={sac}"], ["holds a SAC model", "CrossQ"]),
    (["algo=sac", "env.id=MountainCarContinuous-v0", "ckpt_path={sac}"], ["trained on observation space", "Box([-1.2"]),
    (["resume={missing}"], ["resume=", "not a run folder"]),
    (["resume={folder}", "ckpt_path={sac}"], ["resume=", "ckpt_path=", "one of them"]),
    # Hardware
    (["trainer=gpu"], ["trainer.accelerator='gpu'", "no CUDA GPU", "'cpu'"]),
]

# Checked by the launcher's config validation before Hydra creates the run folder.
BEFORE_THE_FOLDER = [["env.id=HalfCheeta-v4"], ["env.id=ALE/Pnog-v5"], ["buffer=her"], ["trainer=gpu"]]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("files")
    sac = SAC("MlpPolicy", learning_starts=20, batch_size=8, buffer_size=100, policy_kwargs={"net_arch": [8]}, seed=0)
    sac.learn(40, env="Pendulum-v1").save(root / "sac.pt")
    (root / "text.ckpt").write_text("not a checkpoint\n")
    data = (root / "sac.pt").read_bytes()
    (root / "truncated.ckpt").write_bytes(data[: len(data) // 3])
    torch.save({"state_dict": {}}, root / "foreign.ckpt")
    (root / "folder").mkdir()
    return {
        "sac": root / "sac.pt",
        "text": root / "text.ckpt",
        "truncated": root / "truncated.ckpt",
        "foreign": root / "foreign.ckpt",
        "missing": root / "missing.ckpt",
        "folder": root / "folder",
    }


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU case needs a machine without a GPU")
@pytest.mark.parametrize(("overrides", "words"), BAD_INPUTS, ids=[" ".join(o) for o, _ in BAD_INPUTS])
def test_bad_input_fails_early_with_a_clear_error(tmp_path, files, overrides, words):
    run_dir = tmp_path / "run"
    before_the_folder = overrides in BEFORE_THE_FOLDER
    overrides = [o.format(**files) for o in overrides]
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", *overrides, timeout=120)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    for word in words:
        assert word in output, output[-3000:]
    assert not (run_dir / "summary.json").exists()
    assert not (run_dir / "checkpoints").exists()
    metrics = run_dir / "metrics.csv"
    assert not metrics.exists() or "rollout" not in metrics.read_text()
    if before_the_folder:
        assert not run_dir.exists()  # no .hydra/, no train.log


def test_the_table_covers_at_least_25_cases():
    assert len(BAD_INPUTS) >= 25
