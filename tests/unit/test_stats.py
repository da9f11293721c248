"""IQM and bootstrap confidence intervals against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from lit_rl.stats import bootstrap_ci, iqm


def test_iqm_drops_a_quarter_from_each_end():
    # 8 values: drop 2 lowest (-100, 1) and 2 highest (7, 1000); mean of 2, 3, 4, 5 = 3.5
    assert iqm([1000, 2, -100, 3, 4, 5, 7, 1]) == pytest.approx(3.5)
    # 4 values: drop 1 each end; mean of 2 and 3
    assert iqm([4, 1, 3, 2]) == pytest.approx(2.5)
    # 5 values: int(1.25) = 1 each end (2 and 100); mean of 3, 4, 5
    assert iqm([5, 4, 3, 2, 100]) == pytest.approx(4.0)


def test_iqm_of_fewer_than_four_values_is_the_mean():
    assert iqm([1.0, 2.0, 6.0]) == pytest.approx(3.0)
    assert iqm([-7.5]) == pytest.approx(-7.5)


def test_iqm_matches_scipy_trim_mean_on_random_data():
    scipy_stats = pytest.importorskip("scipy.stats")
    values = np.random.default_rng(0).normal(size=37)
    assert iqm(values) == pytest.approx(scipy_stats.trim_mean(values, 0.25))


def test_bootstrap_ci_of_identical_values_collapses():
    assert bootstrap_ci([2.0, 2.0, 2.0], np.mean, n_resamples=50) == (2.0, 2.0)
    assert bootstrap_ci([5.0], iqm) == (5.0, 5.0)


def test_bootstrap_ci_of_two_values_spans_their_range():
    # Resampled means of {0, 1} (n=2) are 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4:
    # the 2.5% and 97.5% quantiles are 0 and 1.
    low, high = bootstrap_ci([0.0, 1.0], np.mean, n_resamples=4000, seed=1)
    assert (low, high) == (0.0, 1.0)
    # At 40% confidence (quantiles 30% and 70%) only the middle value 0.5 remains.
    assert bootstrap_ci([0.0, 1.0], np.mean, n_resamples=4000, confidence=0.4, seed=1) == (0.5, 0.5)


def test_bootstrap_ci_contains_the_statistic_and_is_reproducible():
    values = np.random.default_rng(3).normal(10.0, 2.0, size=20)
    low, high = bootstrap_ci(values, iqm, n_resamples=2000, seed=7)
    assert low < iqm(values) < high
    assert bootstrap_ci(values, iqm, n_resamples=2000, seed=7) == (low, high)
    narrower = bootstrap_ci(values, iqm, n_resamples=2000, confidence=0.5, seed=7)
    assert low < narrower[0] < narrower[1] < high


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"values": []}, "values is empty"),
        ({"values": [1.0, float("nan")]}, "NaN or inf"),
        ({"values": [1.0], "n_resamples": 0}, "n_resamples=0"),
        ({"values": [1.0], "confidence": 1.0}, "confidence=1.0"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(statistic=np.mean, **kwargs)
