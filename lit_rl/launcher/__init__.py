"""The pieces of ``python -m lit_rl.train``: resuming, the run's log, building the run's objects."""
