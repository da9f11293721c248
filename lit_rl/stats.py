"""Robust summary statistics of RL results: interquartile mean and bootstrap confidence intervals.

Follows Agarwal et al. (2021), "Deep RL at the Edge of the Statistical Precipice"
(rliable): report the IQM of final returns across runs with a percentile
bootstrap confidence interval, not the mean of a handful of seeds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _as_1d(values, name: str = "values") -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise ValueError(f"{name} is empty; at least one value is needed")
    if not np.isfinite(array).all():
        raise ValueError(f"{name}={array.tolist()} holds NaN or inf; allowed: finite numbers")
    return array


def iqm(values) -> float:
    """Interquartile mean: the mean of the middle 50% of the sorted values.

    Drops ``int(0.25 * n)`` values from each end (``scipy.stats.trim_mean(values, 0.25)``,
    as rliable), so with fewer than 4 values it is the plain mean.
    """
    array = np.sort(_as_1d(values))
    cut = int(0.25 * array.size)
    return float(array[cut : array.size - cut].mean())


def bootstrap_ci(
    values,
    statistic: Callable[[np.ndarray], float] = iqm,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval ``(low, high)`` of ``statistic(values)``.

    Resamples the values with replacement ``n_resamples`` times; with one value
    (or all equal) the interval collapses to that value.
    """
    array = _as_1d(values)
    if not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples!r} must be a positive integer")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence!r} must lie strictly between 0 and 1")
    rng = np.random.default_rng(seed)
    samples = array[rng.integers(0, array.size, size=(n_resamples, array.size))]
    stats = np.array([statistic(row) for row in samples], dtype=float)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)
