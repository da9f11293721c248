"""``python -m lit_rl.plot``: learning curves and an IQM table of run folders (:mod:`lit_rl.launcher.plot`)."""

from lit_rl.launcher.plot import main as main  # re-exported
from lit_rl.launcher.plot import plot_learning_curves as plot_learning_curves
from lit_rl.launcher.plot import results_table as results_table

if __name__ == "__main__":
    main()
