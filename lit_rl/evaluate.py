"""``python -m lit_rl.evaluate``: evaluate a checkpoint (:mod:`lit_rl.launcher.evaluate`)."""

from lit_rl.launcher.evaluate import evaluate_checkpoint as evaluate_checkpoint  # re-exported
from lit_rl.launcher.evaluate import main as main

if __name__ == "__main__":
    main()
