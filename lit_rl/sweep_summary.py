"""``python -m lit_rl.sweep_summary <sweep dir>``: a sweep's summary table (:mod:`lit_rl.launcher.sweep_summary`)."""

import sys

from lit_rl.launcher.sweep_summary import SweepSummaryCallback as SweepSummaryCallback  # re-exported
from lit_rl.launcher.sweep_summary import main as main
from lit_rl.launcher.sweep_summary import write_sweep_summary as write_sweep_summary

if __name__ == "__main__":
    sys.exit(main())
