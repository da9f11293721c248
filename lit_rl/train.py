"""``python -m lit_rl.train``: the launcher's training entrypoint (:mod:`lit_rl.launcher.train`)."""

from lit_rl.launcher.train import main as main  # re-exported
from lit_rl.launcher.train import train as train

if __name__ == "__main__":
    main()
