"""The helpers' floor: argument checks, atomic file writes, statistics, measurement, signatures, moved paths.

Imports nothing above it in lit_rl.
"""
