"""IQM and bootstrap confidence intervals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lit_rl.stats import bootstrap_ci, iqm


def test_iqm_drops_the_outer_quarters():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx(4.5)  # keeps 3, 4, 5, 6
    assert iqm([10, 0, 1000, 5]) == pytest.approx(7.5)  # keeps 5, 10
    assert iqm([3.0]) == 3.0
    assert iqm([1.0, 2.0, 6.0]) == pytest.approx(3.0)  # under four values: the plain mean


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40))
def test_iqm_lies_between_the_extremes_and_matches_a_quarter_trimmed_mean(values):
    x = np.sort(np.array(values))
    cut = len(x) // 4
    assert min(values) - 1e-6 <= iqm(values) <= max(values) + 1e-6
    assert iqm(values) == pytest.approx(x[cut : len(x) - cut].mean(), rel=1e-9, abs=1e-6)


def test_bootstrap_ci_brackets_the_statistic_and_is_reproducible():
    rng = np.random.default_rng(0)
    values = rng.normal(100.0, 10.0, size=50)
    low, high = bootstrap_ci(values, np.mean, n_resamples=2000, confidence=0.95, seed=1)
    assert low < values.mean() < high
    assert 2.0 < high - low < 10.0  # about 2 * 1.96 * 10 / sqrt(50) = 5.5
    assert bootstrap_ci(values, np.mean, n_resamples=2000, confidence=0.95, seed=1) == (low, high)
    narrow = bootstrap_ci(values, np.mean, n_resamples=2000, confidence=0.5, seed=1)
    assert low < narrow[0] < narrow[1] < high
    iqm_low, iqm_high = bootstrap_ci(values, seed=1)  # the default statistic is the IQM
    assert iqm_low < iqm(values) < iqm_high


def test_a_constant_sample_has_a_zero_width_interval():
    assert bootstrap_ci([7.0] * 5, np.mean, n_resamples=100) == (7.0, 7.0)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: iqm([]), ["empty"]),
        (lambda: iqm([1.0, float("nan")]), ["NaN"]),
        (lambda: bootstrap_ci([1.0, 2.0], n_resamples=0), ["n_resamples=0"]),
        (lambda: bootstrap_ci([1.0, 2.0], confidence=1.5), ["confidence=1.5"]),
    ],
)
def test_bad_input_is_a_value_error_naming_it(call, words):
    with pytest.raises(ValueError) as err:
        call()
    for word in words:
        assert word in str(err.value)
