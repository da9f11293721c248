"""mypy on small SB3-style user scripts: lit_rl's typed API catches what SB3's does.

Each script is written to ``tmp_path`` and checked by one mypy run against this
checkout (``MYPYPATH``), with lit_rl's own modules analysed but not reported
(``--follow-imports=silent``: ``make lint`` checks those). A misspelt keyword and
a wrong argument type must be reported, ``CrossQ.load`` must return a
``CrossQ``, and a correct script must check clean.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[2]

SCRIPTS = {
    "misspelt_keyword": """
        from lit_rl import SAC

        SAC("MlpPolicy", "Pendulum-v1", learnin_rate=1e-3)
    """,
    "wrong_type": """
        from lit_rl import SAC

        model = SAC("MlpPolicy", "Pendulum-v1")
        model.learn(total_timesteps="1000")
    """,
    "reveal_load": """
        from lit_rl import CrossQ

        reveal_type(CrossQ.load("x"))
        reveal_type(CrossQ("MlpPolicy", "Pendulum-v1").learn(10))
    """,
    "correct": """
        from __future__ import annotations

        import gymnasium as gym
        import numpy as np

        from lit_rl import SAC, TD3, CrossQ
        from lit_rl.buffers import ReplayBuffer
        from lit_rl.callbacks.sb3 import CheckpointCallback, EvalCallback
        from lit_rl.collect.noise import NormalActionNoise


        def schedule(progress_remaining: float) -> float:
            return 3e-4 * progress_remaining


        env = gym.make("Pendulum-v1")
        noise = NormalActionNoise(mean=np.zeros(1), sigma=0.1 * np.ones(1))
        td3 = TD3("MlpPolicy", env, action_noise=noise, train_freq=(1, "episode"), device="cpu", verbose=1)
        model = SAC(
            "MlpPolicy",
            "Pendulum-v1",
            learning_rate=schedule,
            buffer_size=10_000,
            learning_starts=100,
            batch_size=64,
            tau=0.01,
            gamma=0.98,
            train_freq=4,
            gradient_steps=-1,
            ent_coef="auto_0.1",
            replay_buffer_class=ReplayBuffer,
            policy_kwargs={"net_arch": [64, 64]},
            seed=0,
        )
        callbacks = [CheckpointCallback(save_freq=1000, save_path="checkpoints"), EvalCallback(gym.make("Pendulum-v1"))]
        model = model.learn(total_timesteps=1000, callback=callbacks, progress_bar=False)
        obs, _ = env.reset(seed=0)
        action, state = model.predict(obs, deterministic=True)
        model.save("sac_pendulum")
        loaded: SAC = SAC.load("sac_pendulum", env=env, device="cpu")
        loaded.set_env(env)
        vec_env = loaded.get_env()
        crossq: CrossQ = CrossQ.load("crossq.zip")
        crossq.learn(500, reset_num_timesteps=False)
        loaded.save_replay_buffer("buffer.pkl")
    """,
}


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """mypy's messages per script (one run for all scripts: lit_rl and torch are analysed once)."""
    folder = tmp_path_factory.mktemp("user_scripts")
    for name, text in SCRIPTS.items():
        lines = text.strip("\n").splitlines()
        indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
        (folder / f"{name}.py").write_text("\n".join(line[indent:] for line in lines) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
               "--no-error-summary", "--show-error-codes", "--cache-dir", str(ROOT / ".mypy_cache"),
               *sorted(str(p) for p in folder.glob("*.py"))]  # fmt: skip
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    result = subprocess.run(command, capture_output=True, text=True, cwd=folder, env=env, timeout=600)
    assert "error: " not in result.stderr and result.returncode in (0, 1), result.stdout + result.stderr
    per_script: dict[str, str] = {name: "" for name in SCRIPTS}
    for line in result.stdout.splitlines():
        name = Path(line.split(":", 1)[0]).stem
        if name in per_script:
            per_script[name] += line + "\n"
    return per_script


def test_misspelt_keyword_is_reported(mypy_output: dict[str, str]) -> None:
    out = mypy_output["misspelt_keyword"]
    assert re.search(
        r'error: Unexpected keyword argument "learnin_rate" for "SAC"; did you mean "learning_rate"\?  \[call-arg\]',
        out,
    ), out


def test_wrong_argument_type_is_reported(mypy_output: dict[str, str]) -> None:
    out = mypy_output["wrong_type"]
    expected = r'error: Argument "total_timesteps" to "learn" of "\w+" has incompatible type "str"; expected "int"'
    assert re.search(expected, out), out


def test_load_and_learn_return_the_algorithm(mypy_output: dict[str, str]) -> None:
    revealed = re.findall(r'note: Revealed type is "([\w.]+)"', mypy_output["reveal_load"])
    assert revealed == ["lit_rl.algorithms.crossq.CrossQ"] * 2, mypy_output["reveal_load"]


def test_correct_sb3_style_script_checks_clean(mypy_output: dict[str, str]) -> None:
    assert mypy_output["correct"] == "", mypy_output["correct"]
