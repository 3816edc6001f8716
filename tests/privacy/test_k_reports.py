"""k reports of a metric per device and window (issue 88, items 1 and 2): one figure per window, never above the
local k·ε₀, over windows never above W·k·ε₀ nor the lifetime cap, whatever the segments; the randomizer's structure
kept (each report in a shuffle of its own among ⌊n/k⌋), never below an exact lower bound, within 2× of it."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from k_reports_exact import k_reports_epsilon, krr3_k_reports_epsilon, worst_k_reports_epsilon

from ldp.encoders.randomized_response import GRRParams
from ldp.ingest.central import decide
from ldp.pipeline.guarantee import over_windows, window_guarantee
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.over_time import WindowRelease, central_over_windows
from ldp.privacy.target import metric_loss, window_releases
from ldp.spec import CollectionSpec

LN4 = math.log(4.0)


def spec(eps0: float, k: int, d: int = 2, lifetime: float = 1000.0) -> CollectionSpec:
    """A spec of one GRR metric of ε₀ over ``d`` values whose caps allow ``k`` reports a window."""
    per_window = k * eps0 * (1 + 1e-9)
    return CollectionSpec.from_dict({"spec_version": 1, "name": "k", "budget": {"per_window": per_window,
                                                                                "lifetime": lifetime},
                                     "metrics": {"m": {"protocol": "grr",
                                                       "params": {"epsilon": eps0, "domain_size": d},
                                                       "budget": {"per_report": eps0 * (1 + 1e-9)}}}})


def exported(s: CollectionSpec, windows: dict[int, list[tuple[bool, int]]], tmp_path) -> dict:
    """The metric's ``central`` entry as the ingest service computes it for /v1/estimates, the exporter's
    ``ldp_estimate_central_epsilon`` and the dashboard's cumulative line."""
    m = s.metrics["m"]
    out = decide(tmp_path, {s.fingerprint: s}, {("m", m.params_fingerprint): windows}, now=0.0)
    return out[("m", m.params_fingerprint)]


@pytest.mark.parametrize("n", [20, 1000, 10**5])
def test_the_issues_case_eight_reports_in_eight_segments_never_above_local(n, tmp_path):
    # issue 88: ε₀ = ln 4 (1.386), caps allowing k = 8 (local 11.09 a window), 8 shuffled segments: the exported
    # central ε said 88.72 for one window and 177.45 after two (k counted twice)
    s = spec(LN4, 8)
    assert s.reports_per_window("m") == 8
    one = exported(s, {1: [(True, n)] * 8}, tmp_path / "one")
    assert one["local"] == pytest.approx(8 * LN4) == pytest.approx(11.0904, abs=1e-4)
    assert one["epsilon"] <= 8 * LN4 * (1 + 1e-12)
    two = exported(s, {1: [(True, n)] * 8, 2: [(True, n)] * 8}, tmp_path / "two")
    assert two["epsilon"] <= 16 * LN4 * (1 + 1e-12) and two["local"] == pytest.approx(16 * LN4)
    # one window reads the same in the window line (window_guarantee) and the cumulative figure
    g = window_guarantee(s.metrics["m"].params, n, two["delta"], 8)
    assert g is not None and one["epsilon"] == pytest.approx(g.epsilon, rel=1e-12)
    if n >= 1000:  # shuffling proves a gain there: far below the local figure
        assert one["epsilon"] < 0.3 * 8 * LN4


def test_the_lifetime_cap_bounds_the_exported_figure(tmp_path):
    s = spec(LN4, 8, lifetime=12.0)
    got = exported(s, {w: [(True, 20)] * 3 for w in range(1, 4)}, tmp_path)
    assert got["epsilon"] == pytest.approx(12.0) and got["bound"] == "the spec's lifetime cap"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(1, 10), windows=st.integers(1, 4), segments=st.integers(1, 12),
       n=st.integers(1, 60_000), eps0=st.floats(0.2, 6.0), d=st.sampled_from([2, 4, 40]),
       lifetime=st.floats(0.5, 200.0))
def test_never_above_the_local_guarantee_for_every_k_windows_and_segments(k, windows, segments, n, eps0, d, lifetime):
    s = spec(eps0, k, d)
    loss = metric_loss(s.metrics["m"].params, k, PrivacyCost(lifetime))
    delta = 1e-8
    one = over_windows(window_releases(loss, n, segments), delta)
    assert one.epsilon <= k * eps0 * (1 + 1e-9)
    assert one.local.epsilon == pytest.approx(k * eps0)
    over = over_windows(window_releases(loss, n, segments) * windows, delta)
    assert over.epsilon <= windows * k * eps0 * (1 + 1e-9)
    assert over.local.epsilon == pytest.approx(windows * k * eps0)
    capped, _ = loss.bound(over.epsilon, delta)
    assert capped is not None and capped <= min(lifetime, windows * k * eps0) * (1 + 1e-9)
    assert over.epsilon >= one.epsilon * (1 - 1e-3)  # more windows never read below one


@pytest.mark.parametrize(("eps0", "k", "n", "delta"), [
    (1.0, 2, 200, 1e-6), (2.0, 3, 500, 1e-8), (3.38, 7, 2000, 1e-8), (4.0, 5, 3000, 1e-6), (0.5, 4, 400, 1e-4),
])
def test_binary_rr_k_reports_valid_and_within_twice_an_exact_lower_bound(eps0, k, n, delta):
    # the exact ε of the shuffled count for datasets of the others (a lower bound on the worst case)
    params = spec(eps0, k).metrics["m"].params
    g = window_guarantee(params, n, delta, k)
    exact = worst_k_reports_epsilon(eps0, k, n, delta)
    assert g is not None and exact > 0.0
    assert g.epsilon >= exact, (g.epsilon, exact)
    assert g.epsilon <= 2.0 * exact, (g.epsilon, exact)


def test_the_issues_k7_case_keeps_the_structure():
    # issue 88: ε₀ 3.38, k = 7, n = 1.7·10⁵ was stated at k·ε₀ = 23.67; the exact ε of the others all 0 is 0.445
    params = spec(3.38, 7).metrics["m"].params
    g = window_guarantee(params, 170_000, 1e-8, 7)
    exact = k_reports_epsilon(3.38, 7, 170_000, 0, 1e-8)
    assert g is not None and exact == pytest.approx(0.4453, abs=1e-3)
    assert exact <= g.epsilon <= 1.1 * exact


def test_the_k_reports_release_composes_like_its_parts():
    # two windows of k reports: the composed figure is below twice one window's and at least one window's
    r = WindowRelease(PrivacyCost(1.0), 10**4, None, 4)
    one = over_windows([r], 1e-8).epsilon
    two = central_over_windows([r, r], 1e-8).epsilon
    assert one <= two <= 2 * one


@pytest.mark.parametrize(("eps0", "k", "n", "delta"), [(1.0, 3, 300, 1e-6), (4.0, 2, 1000, 1e-8), (3.0, 5, 600, 1e-6)])
def test_three_valued_rr_k_reports_valid_and_within_twice_an_exact_lower_bound(eps0, k, n, delta):
    # 3-RR (k-RR's blanket and clone structure, d = 3): the exact ε of the shuffled histogram with the others all on
    # the third value or all on the device's other value, a lower bound on the worst case
    g = window_guarantee(GRRParams(eps0, 3), n, delta, k)
    exact = max(krr3_k_reports_epsilon(eps0, k, n, others, delta) for others in ("third", "x1"))
    assert g is not None and exact > 0.0
    assert exact <= g.epsilon <= 2.0 * exact, (g.epsilon, exact)
