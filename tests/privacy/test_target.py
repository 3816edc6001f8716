"""ldp.privacy.target: k reports a window are one k·ε₀ report (generic bound, no k-RR structure) among ⌈n/k⌉
devices; split over j segments, min(k, j) such releases; no bound for δ₀ > 0 or memoizing protocols."""

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


def test_one_report_keeps_the_structure_and_several_use_the_generic_bound():
    grr = params("grr", {"epsilon": 1, "domain_size": 4})
    one, three = metric_loss(grr, 1), metric_loss(grr, 3)
    assert one.per_report == PrivacyCost(1.0) and one.structure == grr.shuffle_structure is not None
    assert three.per_report == PrivacyCost(3.0) and three.structure is None
    assert window_releases(one, 1000, 5) == [WindowRelease(PrivacyCost(1.0), 1000, grr.shuffle_structure)]
    # 1,000 reports of at most 3 a device: 334 devices at least, the crowd the bound counts
    assert window_releases(three, 1000, 5) == [WindowRelease(PrivacyCost(3.0), 334, None)] * 3
    assert window_releases(three, 1000, 2) == [WindowRelease(PrivacyCost(3.0), 334, None)] * 2
    assert window_releases(three, None, 2) == [WindowRelease(PrivacyCost(3.0), None, None)]


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
