"""The spec's ``release`` field: parsed and checked with clear messages, kept by to_dict/to_json, left out of
every fingerprint (a server-side policy), and a metric's own replacing the collection's."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ldp.spec import CollectionSpec, Release, SpecError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "collection.json"
# docs/client.md (`ldp spec validate examples/collection.json`): these must not move
EXAMPLE_FP = "3455db860d356e46"
EXAMPLE_METRIC_FPS = {"app_category": "5d7a57dcb369e581", "dark_mode": "da06040663d6e5fd",
                      "homepage": "62fee08fd7d8ea0b"}


def doc(**top) -> dict:
    d = {"spec_version": 1, "name": "rel", "budget": {"per_window": 10, "lifetime": 100},
         "metrics": {"a": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 4},
                           "budget": {"per_report": 1}},
                     "b": {"protocol": "duchi", "params": {"epsilon": 1, "low": 0, "high": 1},
                           "budget": {"per_report": 1}}}}
    d.update(top)
    return d


def errors(data) -> list[str]:
    with pytest.raises(SpecError) as info:
        CollectionSpec.from_dict(data)
    return info.value.errors


def test_a_spec_without_release_is_byte_identical_to_before():
    spec = CollectionSpec.load(EXAMPLE)
    assert spec.fingerprint == EXAMPLE_FP
    assert {n: m.fingerprint for n, m in spec.metrics.items()} == EXAMPLE_METRIC_FPS
    assert "release" not in spec.to_dict() and all("release" not in m for m in spec.to_dict()["metrics"].values())
    assert spec.release is None and spec.release_for("homepage") == Release()


def test_release_moves_no_fingerprint_and_round_trips():
    raw = json.loads(EXAMPLE.read_text())
    raw["release"] = {"min_reports": 100, "min_z": 2}
    raw["metrics"]["homepage"]["release"] = {"min_z": 3.5}
    spec = CollectionSpec.from_dict(raw)
    plain = CollectionSpec.load(EXAMPLE)
    assert spec.fingerprint == plain.fingerprint == EXAMPLE_FP
    assert {n: m.fingerprint for n, m in spec.metrics.items()} == EXAMPLE_METRIC_FPS
    out = spec.to_dict()
    assert out["release"] == {"min_reports": 100, "min_z": 2.0}
    assert out["metrics"]["homepage"]["release"] == {"min_z": 3.5}
    again = CollectionSpec.loads(spec.to_json())
    assert again == spec and again.fingerprint == EXAMPLE_FP and again.to_dict() == out
    assert spec != plain  # the policy is part of the spec, only not of its fingerprint
    assert spec.to_dict(release=False) == plain.to_dict()


def test_a_metric_release_replaces_the_collection_default():
    d = doc(release={"min_reports": 50, "min_z": 2})
    d["metrics"]["b"]["release"] = {"min_reports": 10}
    spec = CollectionSpec.from_dict(d)
    assert spec.release_for("a") == Release(50, 2.0)
    assert spec.release_for("b") == Release(10, None)  # min_z not inherited: the metric's object replaces
    d["metrics"]["b"]["release"] = {}
    assert CollectionSpec.from_dict(d).release_for("b") == Release()


@pytest.mark.parametrize(("release", "message"), [
    ({"min_report": 3}, "release.min_report: unknown key (expected one of central, min_reports, min_z)"),
    ([], "release: must be an object, got a list"),
    ({"min_reports": -1}, "release.min_reports: must be >= 0, got -1"),
    ({"min_reports": 2.0}, "release.min_reports: must be an integer, got float 2.0"),
    ({"min_reports": True}, "release.min_reports: must be an integer, got a boolean"),
    ({"min_reports": None}, "release.min_reports: must be an integer, got null"),
    ({"min_reports": 10**70}, "release.min_reports: must be <= 4,611,686,018,427,387,904 (a count of reports), "
                              "got a 71-digit number"),
    ({"min_z": -0.5}, "release.min_z: must be >= 0, got -0.5"),
    ({"min_z": math.nan}, "release.min_z: must be a finite number >= 0, got float nan"),
    ({"min_z": math.inf}, "release.min_z: must be a finite number >= 0, got float inf"),
    ({"min_z": False}, "release.min_z: must be a finite number >= 0, got a boolean"),
    ({"min_z": "2"}, "release.min_z: must be a finite number >= 0, got a string"),
    ({"min_z": 10**400}, "release.min_z: must be a finite number >= 0, got int "),
])
def test_bad_release_values_are_refused_with_their_path(release, message):
    found = errors(doc(release=release))
    assert len(found) == 1 and found[0].startswith(message), found
    d = doc()
    d["metrics"]["a"]["release"] = release
    found = errors(d)
    assert len(found) == 1 and found[0].startswith("metrics.a." + message), found


def test_zero_thresholds_are_allowed():
    spec = CollectionSpec.from_dict(doc(release={"min_reports": 0, "min_z": 0}))
    assert spec.release == Release(0, 0.0)


values = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                   st.text(max_size=3), st.lists(st.integers(), max_size=2))
releases = st.one_of(values, st.dictionaries(st.sampled_from(["min_reports", "min_z", "x", "min"]), values,
                                             max_size=3))


@settings(max_examples=300, deadline=None)
@given(releases, releases)
def test_the_parser_accepts_exactly_the_valid_documents(top, own):
    def valid(r) -> bool:
        if not isinstance(r, dict) or set(r) - {"min_reports", "min_z"}:
            return False
        n, z = r.get("min_reports", 0), r.get("min_z", 0.0)
        n_ok = type(n) is int and 0 <= n <= 1 << 62
        z_ok = type(z) in (int, float) and math.isfinite(z) and z >= 0
        return n_ok and z_ok

    d = doc(release=copy.deepcopy(top))
    d["metrics"]["a"]["release"] = copy.deepcopy(own)
    if valid(top) and valid(own):
        spec = CollectionSpec.from_dict(d)
        assert spec.release_for("a") == Release(own.get("min_reports"), None if "min_z" not in own
                                                else float(own["min_z"]))
        assert spec.fingerprint == CollectionSpec.from_dict(doc()).fingerprint
        assert CollectionSpec.loads(spec.to_json()) == spec
    else:
        found = errors(d)
        assert found and all(e.startswith(("release", "metrics.a.release")) for e in found), found
        assert any(e.startswith("metrics.a.release") for e in found) == (not valid(own))
