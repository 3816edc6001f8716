"""ldp.privacy.target: a window of k reports of ε₀ a device is one release (the k reports, the randomizer's
structure kept), whatever the segments; no bound for δ₀ > 0 or memoizing protocols."""

from __future__ import annotations

import pytest

from ldp.privacy.cost import PrivacyCost
from ldp.privacy.over_time import WindowRelease
from ldp.privacy.target import devices_among, meets, metric_loss, window_releases
from ldp.spec import CentralTarget, CollectionSpec


def params(protocol: str, p: dict):
    return CollectionSpec.from_dict({"spec_version": 1, "name": "t", "budget": {"per_window": 9, "lifetime": 99},
                                     "metrics": {"m": {"protocol": protocol, "params": p,
                                                       "budget": {"per_report": 9}}}}).metrics["m"].params


def test_a_window_is_one_release_of_its_k_reports_with_the_structure_whatever_the_segments():
    grr = params("grr", {"epsilon": 1, "domain_size": 4})
    one, three = metric_loss(grr, 1), metric_loss(grr, 3)
    assert one.per_report == PrivacyCost(1.0) and one.structure == grr.shuffle_structure is not None
    assert three.per_report == PrivacyCost(3.0) and three.report == PrivacyCost(1.0)
    assert three.structure == grr.shuffle_structure
    assert window_releases(one, 1000, 5) == [WindowRelease(PrivacyCost(1.0), 1000, grr.shuffle_structure)]
    for segments in (1, 2, 5):  # one release; the segments the k reports can be split among kept (at most k)
        assert window_releases(three, 1000, segments) == [WindowRelease(PrivacyCost(1.0), 1000,
                                                                        grr.shuffle_structure, 3, min(3, segments))]
    assert window_releases(three, None, 2)[0].local == PrivacyCost(3.0)
    with pytest.raises(ValueError, match="segments"):
        window_releases(three, 1000, 0)
    with pytest.raises(ValueError, match="reports"):
        WindowRelease(PrivacyCost(1.0), 1000, None, 0)


def test_the_crowd_is_the_fewest_devices_the_reports_can_come_from():
    assert [devices_among(n, 3) for n in (1, 2, 3, 4, 999, 1000)] == [1, 1, 1, 2, 333, 334]
    assert devices_among(7, 1) == 7 and devices_among(None, 3) is None
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="reports"):
            devices_among(10, bad)  # type: ignore[arg-type]


def test_no_bound_without_a_cap_or_for_memoizing_protocols():
    assert metric_loss(params("grr", {"epsilon": 1, "domain_size": 4}), None).reason.startswith("no per-window cap")
    rappor = params("rappor", {"num_bloombits": 16, "num_hashes": 2, "num_cohorts": 4, "f": 0.5, "p": 0.5, "q": 0.75})
    loss = metric_loss(rappor, 1)
    assert loss.per_report is None and "memoizes" in loss.reason
    with pytest.raises(ValueError, match="no central bound"):
        window_releases(loss, 1000)


def test_meets_is_inclusive():
    t = CentralTarget(1.0, 1e-8)
    assert meets(1.0, 1e-8, t) and not meets(1.0 + 1e-9, 1e-8, t) and not meets(0.5, 2e-8, t)


def test_the_k_tuple_argument_is_composed_once_per_segment_it_can_be_split_among():
    """The k reports as one k·ε₀ report hold per segment only (each segment's multiset is a function of its devices'
    parts): with j segments that pair is composed min(k, j) times, never taken once for the whole window."""
    from ldp.privacy.over_time import _laws, reports_window
    from ldp.privacy.shuffle import shuffled_epsilon

    for k, segments in ((3, 1), (3, 2), (3, 7), (1, 4)):
        release = WindowRelease(PrivacyCost(0.5), 3000, None, k, min(k, segments))
        laws = _laws(release, 1e-8, 1)
        if k > 1:  # the last law is the k-tuple's generic pair, composed once per part
            assert laws[-1][1] == min(k, segments)
            whole = shuffled_epsilon(0.5 * k, 1000, 1e-8 / min(k, segments)).epsilon * min(k, segments)
            assert reports_window(release, 1e-8).epsilon <= min(whole, 0.5 * k) + 1e-12
        else:
            assert all(m == 1 for _, m in laws)
