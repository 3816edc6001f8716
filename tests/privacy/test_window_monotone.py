"""One window's central ε (issue 72, items 3 and 4): total over the box, no numpy warning, non-increasing in n and
in δ (binary RR's fixed intervals, the k-RR clone structure, the generic bound), the grids it rests on."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings, strategies as st

from ldp.encoders.randomized_response import GRRParams
from ldp.errors import RefusalValueError
from ldp.privacy.binary_intervals import interval_cuts
from ldp.privacy.shuffle import ShuffleStructure, canonical_n, geometric_n, shuffled_epsilon
from ldp.privacy.window_grid import eps_at, eps_index, floor_delta

_VALUES = {"binary": 2, "k-RR": 10, "k-RR100": 100}


def _structure(kind: str, eps0: float) -> ShuffleStructure | None:
    return None if kind == "generic" else GRRParams(eps0, _VALUES[kind]).shuffle_structure


def _quiet(eps0: float, n: int, delta: float, kind: str) -> float:
    structure = _structure(kind, eps0)
    if structure is not None:  # the channel's realized ε (its p and q rounded), which its structure may not exceed
        eps0 = GRRParams(eps0, _VALUES[kind]).privacy_cost.epsilon
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = shuffled_epsilon(eps0, n, delta, structure)
    assert 0.0 <= g.epsilon <= eps0
    return g.epsilon


def test_the_grids() -> None:
    for eps in (1e-9, 0.0123, 1.0, 7.5):
        j = eps_index(eps)
        assert eps_at(j - 1) < eps <= eps_at(j)
    for delta in (1e-300, 3.7e-8, 1e-8, 0.49):
        d = floor_delta(delta)
        assert d <= delta < d * 10 ** (1 / 1000) * (1 + 1e-12)


def test_cuts_grow_by_at_most_one() -> None:
    """Every cut of the fixed intervals is non-decreasing in n, by at most 1 per user (what makes the binary figure
    non-increasing in n), and the intervals cover [0, (n - 1)/2]."""
    prev = interval_cuts(2)
    for n in range(3, 3000):
        cuts = interval_cuts(n)
        assert cuts[0] == 0 and cuts[-1] == (n + 1) // 2
        assert cuts == sorted(set(cuts))
        for c in prev:  # each old cut c, as a function of n: its successor is c or c + 1
            assert c in cuts or c + 1 in cuts
        prev = cuts


@pytest.mark.parametrize("delta", [0.0, 1e-301, 1.0, -1e-9])
def test_delta_outside_the_box_is_refused(delta: float) -> None:
    with pytest.raises(RefusalValueError, match="δ must") as exc:
        shuffled_epsilon(1.0, 1000, delta)
    assert exc.value.code == "param_range"


def test_the_binary_figure_at_consecutive_n_which_rose() -> None:
    """The issue: binary RR at ε₀ = 4, δ = 10⁻⁸ rose from n = 1,000 to 1,001 (2.6180 to 2.6697)."""
    got = [_quiet(4.0, n, 1e-8, "binary") for n in range(995, 1012)]
    assert got == sorted(got, reverse=True)
    assert got[5] < 2.618 * 1.03


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["binary", "k-RR", "k-RR100", "generic"]), eps0=st.floats(0.05, 8.0),
       n=st.one_of(st.integers(2, 3000), st.integers(3000, 10**6)), log_delta=st.floats(-20, math.log10(0.49)))
def test_non_increasing_in_n(kind: str, eps0: float, n: int, log_delta: float) -> None:
    """Consecutive n, and n next to its fixed intervals' boundaries (n + 1 a multiple of 40)."""
    delta = 10**log_delta
    for m in (n, 40 * (n // 40) + 39):
        a, b = _quiet(eps0, m, delta, kind), _quiet(eps0, m + 1, delta, kind)
        assert b <= a


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["binary", "k-RR", "k-RR100", "generic"]), eps0=st.floats(0.05, 8.0),
       n=st.integers(2, 10**6), log_delta=st.floats(-30, math.log10(0.45)), ratio=st.floats(1.0, 1.01))
def test_non_increasing_in_delta(kind: str, eps0: float, n: int, log_delta: float, ratio: float) -> None:
    delta = 10**log_delta
    assert _quiet(eps0, n, delta * ratio, kind) <= _quiet(eps0, n, delta, kind)


@settings(max_examples=6, deadline=None)
@given(kind=st.sampled_from(["binary", "k-RR", "k-RR100", "generic"]), eps0=st.floats(0.05, 30.0),
       n=st.integers(1, 10**5))
def test_tiny_delta_is_total_and_quiet(kind: str, eps0: float, n: int) -> None:
    _quiet(eps0, n, 1e-300, kind)


@pytest.mark.parametrize("n,delta", [(10**4, 1e-250), (10**5, 1e-150), (10**6, 1e-50), (10**7, 1e-9)])
def test_binary_monotone_across_its_caps_in_n(n: int, delta: float) -> None:
    """Consecutive n at each cap of the exact search (ldp.privacy.binary_shuffle.exact_max: 10⁷ users at δ >= 10⁻¹⁰
    down to 10⁴ below 10⁻²⁰⁰), where the figure stops following n."""
    from ldp.privacy.binary_shuffle import exact_max

    assert exact_max(floor_delta(delta)) == n
    got = [_quiet(1.0, m, delta, "binary") for m in (n - 1, n, n + 1, n + 2)]
    assert got == sorted(got, reverse=True)


@pytest.mark.parametrize("threshold", [1e-10, 1e-100, 1e-200])
def test_binary_monotone_across_its_caps_in_delta(threshold: float) -> None:
    """δ just below and at each threshold of the caps, at n above them: the larger δ gets more users computed, and
    never a larger figure."""
    below, at = _quiet(1.0, 2 * 10**7, threshold * 0.999, "binary"), _quiet(1.0, 2 * 10**7, threshold, "binary")
    assert at <= below


@pytest.mark.parametrize("kind,n", [("binary", 10**9), ("generic", 10**12 - 2)])
def test_huge_n_monotone_in_n_and_delta(kind: str, n: int) -> None:
    """Past every cap (the vectorised clone bound answers): consecutive n, and δ on neighbouring grid points. (k-RR
    over d = 10 also runs the blanket pair of ldp.privacy.krr_shuffle, seconds a call at this n: not here.)"""
    got = [_quiet(1.0, m, 1e-8, kind) for m in (n, n + 1, n + 2)]
    assert got == sorted(got, reverse=True)
    assert _quiet(1.0, n, 1e-8 * 10 ** (1 / 1000), kind) <= got[0]


def test_huge_n_figure_is_above_a_real_datasets_exact_epsilon() -> None:
    """The figure at n = 10¹⁰ (the k-RR clone bound wins) is no smaller than the exact ε of one real dataset of the
    others (all hold 0): a valid figure cannot be, and a broken bound would be."""
    from ldp.privacy.binary_shuffle import binary_pair

    eps0, n, delta = 1.0, 10**10, 1e-8
    p = 1.0 / (1.0 + math.exp(-eps0))
    exact = binary_pair(0, n - 1, p, 1e-18).epsilon(delta)
    got = _quiet(eps0, n, delta, "binary")
    assert exact <= got <= 1.6 * exact


@pytest.mark.parametrize("d,eps0,delta,n", [(3, 1.0, 1e-300, 10**5), (10, 4.0, 1e-8, 10**6), (100, 1.0, 1e-300, 10**7),
                                            (3, 1.0, 1e-8, 99_990), (10, 0.05, 1e-20, 1_639)])
def test_k_rr_blanket_monotone_across_the_canonical_steps(d: int, eps0: float, delta: float, n: int) -> None:
    """k-RR over d >= 3 values (the privacy blanket, whose bands move with n: it wanders by up to ~6·10⁻³ of
    itself from n to n + 1) is evaluated on a 2 % grid of n, the clone bounds at n's canonical value: constant between
    their steps, lower at each step."""
    g = GRRParams(eps0, d)
    assert canonical_n(n + 3) <= n + 3 and canonical_n(12_345_678) == 12_340_000 and canonical_n(9_999) == 9_999
    assert geometric_n(n) <= n < geometric_n(n) * 1.0201 and [geometric_n(m) for m in range(1, 50)] == \
        list(range(1, 50))
    step = geometric_n(int(geometric_n(n) * 1.0201) + 1) - geometric_n(n)  # past the next grid point
    for start in (n - 3, geometric_n(n) + step - 3):
        got = [shuffled_epsilon(g.privacy_cost.epsilon, m, delta, g.shuffle_structure).epsilon
               for m in range(start, start + 6)]
        assert got == sorted(got, reverse=True)


@pytest.mark.parametrize("eps0,delta", [(1.0, 1e-8), (4.0, 1e-8), (1.0, 1e-150)])
def test_binary_monotone_where_its_search_stops(eps0: float, delta: float) -> None:
    """Past ten times its cap of users binary RR's search is not run (the clone bounds are below its figure there):
    consecutive n across that point never rise."""
    from ldp.privacy.binary_shuffle import exact_max

    edge = 10 * exact_max(floor_delta(delta), eps0)
    got = [_quiet(eps0, m, delta, "binary") for m in (edge - 1, edge, edge + 1, edge + 2)]
    assert got == sorted(got, reverse=True)


def test_a_larger_eps0_is_searched_exactly_to_more_users() -> None:
    """The search's cap grows as 1/(p(1 − p)) above ε₀ = 1 (issue 88, item 3): at ε₀ = 5.9, n = 10⁸ the figure is
    the worst dataset's, within 1.1× of a real dataset's exact ε (the k-RR clone bound said 1.435×), never below."""
    from ldp.privacy.binary_shuffle import binary_pair, exact_max

    assert exact_max(1e-8, 5.9) > 7 * 10**8 and exact_max(1e-8, 1.0) == exact_max(1e-8, 0.3) == 10**7
    assert exact_max(1e-150, 5.9) < exact_max(1e-8, 5.9)  # still non-increasing as δ falls
    eps0, n, delta = 5.9, 10**8, 1e-8
    p = 1.0 / (1.0 + math.exp(-eps0))
    exact = binary_pair(0, n - 1, p, 1e-18).epsilon(delta)
    assert exact <= _quiet(eps0, n, delta, "binary") <= 1.1 * exact


@pytest.mark.parametrize(("eps0", "d", "delta", "top"), [(0.05, 100, 1e-14, 260), (0.09375, 10, 1e-14, 160),
                                                        (0.3, 100, 1e-14, 200)])
def test_the_k_rr_blanket_never_rises_where_its_bands_moved(eps0: float, d: int, delta: float, top: int) -> None:
    """k-RR's grouped blanket rose along its grid of n when U's bands were placed about U's marginal mean rather than
    each group's (CI's stored example: ε₀ = 0.09375, d = 10, δ = 10⁻¹⁴, 0.028160 at n = 119 and 0.028191 at 120; at
    d = 100, ε₀ = 0.05, 90 rises from n = 113 to 4,000, up to 1.9 % each). The old bands fail every row."""
    figures = [_quiet(eps0, n, delta, "k-RR100" if d == 100 else "k-RR") for n in range(100, top)]
    rises = [(100 + i, a, b) for i, (a, b) in enumerate(zip(figures, figures[1:], strict=False)) if b > a]
    assert not rises, rises[:5]


@pytest.mark.parametrize(("eps0", "d", "delta"), [(0.05, 100, 1e-14), (1.0, 10, 1e-6)])
def test_the_grouped_blanket_is_near_the_exact_sum_just_past_100_users(monkeypatch: pytest.MonkeyPatch, eps0: float,
                                                                       d: int, delta: float) -> None:
    """Against the blanket pair summed over every outcome (valid at any n; allowed past 100 users here): the
    grouped pair is never below it (both bound the same pair; the grouped one from above) and within 5 %. Bands
    about U's marginal mean were 1.17× at n = 107 and 130 in the first row."""
    from ldp.privacy import krr_small
    from ldp.privacy.krr_shuffle import krr_epsilon

    monkeypatch.setattr(krr_small, "SMALL_MAX", 200)
    for n in (107, 130):
        exact = krr_small.small_blanket(eps0, d, n).epsilon(delta)
        grouped = krr_epsilon(eps0, d, n, delta)
        assert grouped is not None and exact * (1 - 1e-9) <= grouped[0] <= 1.05 * exact, (n, grouped, exact)
