"""``python -m lit_rl.tune``: an Optuna study over training runs (:mod:`lit_rl.launcher.tune`)."""

from lit_rl.launcher.tune import Tuner as Tuner  # re-exported
from lit_rl.launcher.tune import main as main

if __name__ == "__main__":
    main()
