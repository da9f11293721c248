"""Robust aggregate statistics over runs: interquartile mean, bootstrap confidence intervals, Mann-Whitney U."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np


def _as_finite_1d(values: Sequence[float] | np.ndarray, name: str = "values") -> np.ndarray:
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0:
        raise ValueError(f"{name} is empty; need at least one value")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or inf ({x[~np.isfinite(x)][:3].tolist()}...); pass finite values only")
    return x


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% of the values.

    Cuts ``floor(n/4)`` values from each end, as ``scipy.stats.trim_mean(x, 0.25)``
    (the estimator rliable uses); with fewer than four values this is the plain mean.
    """
    x = np.sort(_as_finite_1d(values))
    cut = int(0.25 * x.size)
    return float(x[cut : x.size - cut].mean())


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = iqm,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval ``(low, high)`` of ``statistic`` over ``values``.

    Resamples the values with replacement ``n_resamples`` times; ``seed`` makes the
    interval reproducible.
    """
    x = _as_finite_1d(values)
    if not isinstance(n_resamples, int) or isinstance(n_resamples, bool) or n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples!r} is not allowed; need an int >= 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence!r} is not allowed; need 0 < confidence < 1")
    rng = np.random.default_rng(seed)
    samples = x[rng.integers(0, x.size, size=(n_resamples, x.size))]
    stats = np.array([statistic(s) for s in samples], dtype=float)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def mann_whitney_u(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mann-Whitney U of ``x`` against ``y`` and its two-sided p-value.

    ``U`` counts the pairs with ``x_i > y_j`` (ties count 1/2). The p-value uses the
    normal approximation with tie correction and continuity correction, as
    ``scipy.stats.mannwhitneyu(x, y, method="asymptotic")``; it is 1 when all values are equal.
    """
    a, b = _as_finite_1d(x, "x"), _as_finite_1d(y, "y")
    n1, n2 = a.size, b.size
    both = np.concatenate([a, b])
    _, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2.0  # ties share the mean of their ranks
    u = float(average_rank[inverse[:n1]].sum() - n1 * (n1 + 1) / 2.0)
    n = n1 + n2
    variance = n1 * n2 / 12.0 * ((n + 1) - float((counts**3 - counts).sum()) / (n * (n - 1)))
    if variance <= 0.0:
        return u, 1.0
    z = (abs(u - n1 * n2 / 2.0) - 0.5) / math.sqrt(variance)
    return u, float(min(1.0, math.erfc(z / math.sqrt(2.0))))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the given order: reject hypothesis i at family-wise level alpha when
    ``holm(p)[i] <= alpha``. Step-down: the k-th smallest p (k from 0) is multiplied by ``m - k``, made
    non-decreasing along that order and capped at 1."""
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise ValueError(f"p_values={list(p_values)!r}: need finite values in [0, 1]")
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))))
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return [float(x) for x in out]
