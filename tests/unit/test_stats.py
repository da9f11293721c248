"""IQM, bootstrap confidence intervals and the Mann-Whitney U test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lit_rl.utils.stats import bootstrap_ci, holm, iqm, mann_whitney_u


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


def test_iqm_of_fewer_than_four_values_is_the_mean():
    assert iqm([1.0, 2.0, 6.0]) == pytest.approx(3.0)
    assert iqm([-7.5]) == pytest.approx(-7.5)


def test_bootstrap_ci_of_two_values_spans_their_range():
    # Resampled means of {0, 1} (n=2) are 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4:
    # the 2.5% and 97.5% quantiles are 0 and 1.
    low, high = bootstrap_ci([0.0, 1.0], np.mean, n_resamples=4000, seed=1)
    assert (low, high) == (0.0, 1.0)
    # At 40% confidence (quantiles 30% and 70%) only the middle value 0.5 remains.
    assert bootstrap_ci([0.0, 1.0], np.mean, n_resamples=4000, confidence=0.4, seed=1) == (0.5, 0.5)


def test_mann_whitney_u_of_separated_samples_by_hand():
    # x all below y: U = 0 of 9 pairs; mean 4.5, variance 3*3/12 * 7 = 5.25;
    # z = (4.5 - 0.5) / sqrt(5.25) = 1.7457, p = 2 * (1 - Phi(1.7457)) = 0.0809 (scipy: 0.08085559837).
    u, p = mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert u == 0.0
    assert p == pytest.approx(0.0808555984, rel=1e-8)
    u, p_swapped = mann_whitney_u([4.0, 5.0, 6.0], [1.0, 2.0, 3.0])
    assert u == 9.0 and p_swapped == pytest.approx(p)


def test_mann_whitney_u_with_ties_by_hand():
    # Ranks of 1,2,2,2,3,4: 1, 3, 3, 3, 5, 6; x = {1, 2, 2} has rank sum 7, U = 7 - 6 = 1
    # (pairs x > y: none; ties 2=2 twice: 2 * 1/2). Tie term (3^3 - 3) / (6 * 5) = 0.8;
    # variance 9/12 * (7 - 0.8) = 4.65; z = (3.5 - 0.5) / sqrt(4.65) = 1.3912, p = 0.16416.
    u, p = mann_whitney_u([1.0, 2.0, 2.0], [2.0, 3.0, 4.0])
    assert u == 1.0
    assert p == pytest.approx(0.1641597285, rel=1e-8)


def test_mann_whitney_u_of_identical_samples_is_not_significant():
    assert mann_whitney_u([5.0, 5.0], [5.0, 5.0, 5.0]) == (3.0, 1.0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=16)
    u, p = mann_whitney_u(x, x)
    assert u == 128.0 and p == 1.0
    _, p_far = mann_whitney_u(x, x + 10.0)
    assert p_far < 1e-4


def test_mann_whitney_u_refuses_empty_or_non_finite_samples():
    with pytest.raises(ValueError, match="y is empty"):
        mann_whitney_u([1.0], [])
    with pytest.raises(ValueError, match="x contains NaN"):
        mann_whitney_u([float("nan")], [1.0])


def test_holm_rejects_what_the_published_example_rejects():
    # The worked example of the Holm-Bonferroni method (four hypotheses, alpha 0.05): p = 0.01, 0.04, 0.03, 0.005
    # rejects H1 and H4 only (0.005 < 0.05/4, 0.01 < 0.05/3, then 0.03 > 0.05/2 stops the procedure).
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert [p <= 0.05 for p in adjusted] == [True, False, False, True]
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.2]) == [0.2] and holm([0.6, 0.6]) == [1.0, 1.0]  # one test: unchanged; capped at 1
    with pytest.raises(ValueError, match="p_values"):
        holm([0.5, 1.5])
