"""ldp.jobs.release: the release thresholds applied to the decoders' result objects, at their boundaries
(exactly min_reports reports; an estimate of exactly min_z standard errors), on counts, means and multi
results, and released + withheld = every item (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.decoders.mean_results import MeanEstimate
from ldp.decoders.multi import MultiEstimates
from ldp.decoders.results import Estimates
from ldp.jobs.release import release, release_info, z_scores
from ldp.spec import Release


def counts(count, se, n=100, **extra) -> Estimates:
    items = [f"i{k}" for k in range(len(count))]
    return Estimates("grr", items, n, np.asarray(count, float), np.asarray(se, float),
                     extra={k: np.asarray(v) for k, v in extra.items()})


def test_min_reports_boundary():
    est = counts([50.0], [1.0])
    held = release(est, Release(min_reports=101), 100)
    assert held.estimates is None and not held.released
    assert held.to_dict()["reason"] == held.text == "not enough reports yet — 100 of 101"
    exact = release(est, Release(min_reports=100), 100)
    assert exact.released and exact.estimates is est and exact.text == ""
    assert release(None, Release(min_reports=0), 0).released  # 0 of 0: nothing withheld


def test_min_z_boundary_and_the_count_line():
    # z = 4/2 = 2 exactly (released), 3.9/2 = 1.95 (withheld), -1 (withheld), 0/0 (z 0, withheld at 2)
    est = counts([4.0, 3.9, -2.0, 0.0, 10.0], [2.0, 2.0, 2.0, 0.0, 0.0], detected=[1, 0, 0, 0, 1])
    out = release(est, Release(min_z=2.0), 100)
    assert out.estimates.items == ["i0", "i4"] and out.withheld_items == 3
    assert out.estimates.extra["detected"].tolist() == [1, 1]
    assert out.text == "3 items below 2 SE withheld"
    assert release(est, Release(min_z=2.0000001), 100).estimates.items == ["i4"]
    one = release(counts([1.0, 9.0], [1.0, 1.0]), Release(min_z=2.5), 100)
    assert one.text == "1 item below 2.5 SE withheld"
    # min_z 0: only the negative estimates go
    assert release(est, Release(min_z=0.0), 100).estimates.items == ["i0", "i1", "i3", "i4"]


def test_missing_estimates_are_withheld():
    z = z_scores([1.0, math.nan, 2.0, 1.0, -1.0], [math.nan, 1.0, math.inf, 0.0, 0.0])
    assert np.isnan(z[:3]).all() and z[3] == math.inf and z[4] == -math.inf
    out = release(counts([1.0, math.nan, 5.0], [math.nan, 1.0, 1.0]), Release(min_z=1.0), 10)
    assert out.estimates.items == ["i2"] and out.withheld_items == 2


def test_a_mean_only_knows_min_reports():
    mean = MeanEstimate("duchi", 10, 5.0, 100.0)  # z = 0.05: min_z does not apply to a mean
    assert release(mean, Release(min_reports=10, min_z=3.0), 10).estimates is mean
    assert release(mean, Release(min_reports=11, min_z=3.0), 10).estimates is None


def test_multi_results_are_released_per_attribute_item():
    multi = MultiEstimates({"a": counts([10.0, 1.0], [1.0, 1.0], n=40), "m": MeanEstimate("duchi", 40, 1.0, 9.0)})
    out = release(multi, Release(min_reports=40, min_z=2.0), 40)
    assert isinstance(out.estimates, MultiEstimates) and out.withheld_items == 1
    assert out.estimates["a"].items == ["i0"] and out.estimates["m"] is multi["m"]
    assert release(multi, Release(min_reports=41), 40).estimates is None


def test_the_basis_decides_for_a_post_processed_estimate():
    raw = counts([5.0, -3.0, 1.0], [1.0, 1.0, 1.0])
    clipped = raw.clipped()
    out = release(clipped, Release(min_z=2.0), 100, basis=raw)
    assert out.estimates.items == ["i0"] and out.estimates.count.tolist() == [5.0]
    with pytest.raises(ValueError, match="basis"):
        release(raw, Release(min_z=1.0), 100, basis=counts([1.0], [1.0]))


def test_not_applied_is_said():
    est = counts([1.0], [1.0])
    out = release(est, Release(min_reports=10**6, min_z=9.0), 3, apply=False)
    assert out.estimates is est and out.to_dict()["applied"] is False and "--no-release" in out.text
    assert release_info(Release(), 0) == {"applied": True, "min_reports": None, "min_z": None, "n": 0,
                                          "released": True, "withheld_items": 0, "reason": None, "text": ""}


finite = st.floats(-1e6, 1e6, allow_nan=False)
cells = st.tuples(st.one_of(finite, st.just(math.nan)), st.one_of(st.floats(0, 1e4), st.just(math.nan)))


@settings(max_examples=200, deadline=None)
@given(st.lists(cells, max_size=30), st.floats(0, 10), st.integers(0, 50), st.integers(0, 60))
def test_released_plus_withheld_is_every_item(rows, min_z, min_reports, n):
    est = counts([r[0] for r in rows], [r[1] for r in rows], n=n, detected=[i % 2 for i in range(len(rows))])
    out = release(est, Release(min_reports, min_z), n)
    if n < min_reports:
        assert out.estimates is None and out.to_dict()["withheld_items"] is None
        return
    kept = out.estimates
    assert len(kept.items) + out.withheld_items == len(est.items)
    assert set(kept.items) | set(i for i in est.items if i not in kept.items) == set(est.items)
    for i, item in enumerate(est.items):
        c, se = rows[i]
        with np.errstate(over="ignore"):
            z = np.float64(c) / se if se > 0 else (0.0 if c == 0 else math.copysign(math.inf, c))
        shown = not (math.isnan(c) or math.isnan(se)) and z >= min_z
        assert (item in kept.items) == shown, (c, se, min_z)
    assert len(kept.extra["detected"]) == len(kept.items) == len(kept.count) == len(kept.std_error)
