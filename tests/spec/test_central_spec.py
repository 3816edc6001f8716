"""The spec's central target ``release.central``: parsed and checked with JSON-path errors, round-tripped, out of
every fingerprint, a metric's own replacing the collection's (and the collection's kept when a metric's release
leaves it out); ``ldp spec validate --shuffled N`` states the cumulative guarantee over the horizon."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from ldp.cli import main
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.over_time import WindowRelease, central_over_time, central_over_windows
from ldp.spec import CentralTarget, CollectionSpec, Release, SpecError


def doc(central=None, own=None) -> dict:
    d = {"spec_version": 1, "name": "ct", "budget": {"per_window": 2, "lifetime": 100},
         "metrics": {"a": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 2},
                           "budget": {"per_report": 1, "per_window": 1}},
                     "b": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 20},
                           "budget": {"per_report": 1}}}}
    if central is not None:
        d["release"] = {"central": central}
    if own is not None:
        d["metrics"]["b"]["release"] = own
    return d


def errors(data) -> list[str]:
    with pytest.raises(SpecError) as info:
        CollectionSpec.from_dict(data)
    return info.value.errors


def test_a_target_round_trips_and_moves_no_fingerprint():
    spec = CollectionSpec.from_dict(doc({"epsilon": 2, "delta": 1e-9, "windows": 365}, {"min_z": 2}))
    assert spec.release_for("a") == Release(central=CentralTarget(2.0, 1e-9, 365))
    # a metric's release without central keeps the collection's target; with one, its own
    assert spec.release_for("b") == Release(None, 2.0, CentralTarget(2.0, 1e-9, 365))
    own = CollectionSpec.from_dict(doc({"epsilon": 2, "delta": 1e-9}, {"central": {"epsilon": 0.5, "delta": 1e-7}}))
    assert own.release_for("b").central == CentralTarget(0.5, 1e-7)
    assert spec.to_dict()["release"] == {"central": {"epsilon": 2.0, "delta": 1e-9, "windows": 365}}
    assert CollectionSpec.loads(spec.to_json()) == spec
    assert spec.fingerprint == own.fingerprint == CollectionSpec.from_dict(doc()).fingerprint


@pytest.mark.parametrize(("central", "message"), [
    ([], "release.central: must be an object, got a list"),
    ({"epsilon": 1}, "release.central.delta: required"),
    ({"epsilon": 1, "delta": 1e-8, "w": 3}, "release.central.w: unknown key (expected one of delta, epsilon, windows)"),
    ({"epsilon": 0, "delta": 1e-8}, "release.central.epsilon: must be > 0, got 0"),
    ({"epsilon": math.inf, "delta": 1e-8}, "release.central.epsilon: must be a finite number > 0, got float inf"),
    ({"epsilon": True, "delta": 1e-8}, "release.central.epsilon: must be a finite number > 0, got a boolean"),
    ({"epsilon": 1, "delta": 0}, "release.central.delta: must be in (0, 1), got 0"),
    ({"epsilon": 1, "delta": 1.0}, "release.central.delta: must be in (0, 1), got 1.0"),
    ({"epsilon": 1, "delta": "1e-8"}, "release.central.delta: must be a finite number in (0, 1), got a string"),
    ({"epsilon": 1, "delta": 1e-8, "windows": 0}, "release.central.windows: must be >= 1, got 0"),
    ({"epsilon": 1, "delta": 1e-8, "windows": 2.0}, "release.central.windows: must be an integer, got float 2.0"),
    ({"epsilon": 1, "delta": 1e-8, "windows": 10**6 + 1},
     "release.central.windows: must be <= 1,000,000 (a horizon the accountant composes), got 1,000,001"),
])
def test_bad_targets_are_refused_with_their_path(central, message):
    assert errors(doc(central)) == [message]
    assert errors(doc(None, {"central": central})) == ["metrics.b." + message]


values = st.one_of(st.none(), st.booleans(), st.integers(-10, 2 * 10**6), st.floats(allow_nan=True),
                   st.text(max_size=2), st.lists(st.integers(), max_size=1))
targets = st.one_of(values, st.dictionaries(st.sampled_from(["epsilon", "delta", "windows", "x"]), values,
                                            max_size=4))


def valid(t) -> bool:
    if not isinstance(t, dict) or set(t) - {"epsilon", "delta", "windows"} or not {"epsilon", "delta"} <= set(t):
        return False
    e, d, w = t["epsilon"], t["delta"], t.get("windows", 1)
    real = (int, float)
    return (type(e) in real and math.isfinite(e) and e > 0 and type(d) in real and math.isfinite(d) and 0 < d < 1
            and type(w) is int and 1 <= w <= 10**6)


@settings(max_examples=300, deadline=None)
@given(targets)
def test_the_parser_accepts_exactly_the_valid_targets(t):
    d = doc()
    d["release"] = {"central": copy.deepcopy(t)}
    if valid(t):
        spec = CollectionSpec.from_dict(d)
        assert spec.release is not None and spec.release.central == CentralTarget(float(t["epsilon"]),
                                                                                  float(t["delta"]), t.get("windows"))
        assert CollectionSpec.loads(spec.to_json()) == spec
    else:
        found = errors(d)
        assert found and all(e.startswith("release.central") for e in found), found


def run(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_spec_validate_states_the_horizon_and_the_target(tmp_path, capsys):
    n, delta = 10**5, 1e-8
    metrics = CollectionSpec.from_dict(doc()).metrics
    structure = metrics["a"].params.shuffle_structure
    e_a = central_over_time(PrivacyCost(1.0), n, delta, 30, structure).epsilon  # one k-RR report a window
    # b: two 20-RR reports a window among 2n reports (n devices): each in a shuffle of its own among n (its blanket
    # kept), composed; below a's one binary report, above one 20-RR report a window
    b_params = metrics["b"].params
    e_b = central_over_windows([WindowRelease(PrivacyCost(1.0), 2 * n, b_params.shuffle_structure, 2)] * 30,
                               delta).epsilon
    assert central_over_time(PrivacyCost(1.0), n, delta, 30, b_params.shuffle_structure).epsilon < e_b < e_a
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc({"epsilon": (e_a + e_b) / 2, "delta": delta, "windows": 30})))
    code, out = run(capsys, "spec", "validate", str(path), "--shuffled", str(n))
    assert code == 0
    target = f"target ε={(e_a + e_b) / 2:g}, δ={delta:g} over 30 windows"
    assert f"    over 30 windows: central ε={e_a:.4g}, δ={delta:g} (naive W·ε" in out and f"{target}: NOT met" in out
    assert f"    over 30 windows: central ε={e_b:.4g}, δ={delta:g}" in out and f"{target}: met" in out
    code, out = run(capsys, "spec", "validate", str(path), "--shuffled", str(n), "--json")
    central = json.loads(out)["central"]
    assert central["a"]["windows"] == 30 and central["a"]["meets_target"] is False
    assert central["a"]["over_windows"]["epsilon"] == pytest.approx(e_a, rel=1e-12)
    assert central["b"]["meets_target"] is True and central["b"]["reports_per_window"] == 2
    assert central["b"]["over_windows"]["epsilon"] == pytest.approx(e_b, rel=1e-12)
    # --windows replaces the target's horizon
    code, out = run(capsys, "spec", "validate", str(path), "--shuffled", str(n), "--windows", "1", "--json")
    assert json.loads(out)["central"]["a"]["windows"] == 1


def test_spec_validate_refuses_windows_without_shuffled(tmp_path, capsys):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc()))
    assert main(["spec", "validate", str(path), "--windows", "3"]) == 2
    assert "--windows must be in [1, 1,000,000] and comes with --shuffled" in capsys.readouterr().err


def test_spec_validate_bounds_by_the_lifetime_cap(tmp_path, capsys):
    """The lifetime cap bounds every protocol: a composed figure above it is stated at the cap, and a memoizing
    protocol (no per-window composition) meets a target through it alone."""
    d = doc({"epsilon": 5, "delta": 1e-8, "windows": 365})
    d["budget"]["lifetime"] = 3
    d["metrics"]["r"] = {"protocol": "rappor", "params": {"num_bloombits": 8, "num_hashes": 1, "num_cohorts": 1,
                                                        "f": 0.5, "p": 0.25, "q": 0.75}, "budget": {"per_report": 2}}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(d))
    code, out = run(capsys, "spec", "validate", str(path), "--shuffled", "1000", "--json")
    central = json.loads(out)["central"]
    over = central["a"]["over_windows"]  # 365 windows among 1000 shuffled: far above 3 composed
    assert over["epsilon"] == 3 and over["bound"] == "the spec's lifetime cap" and central["a"]["meets_target"]
    assert central["r"]["over_windows"] is None and "memoizes" in central["r"]["reason"]
    assert central["r"]["lifetime_cap"]["epsilon"] == 3 and central["r"]["meets_target"] is True
    code, out = run(capsys, "spec", "validate", str(path), "--shuffled", "1000")
    assert "bounded by the spec's lifetime cap ε=3 only" in out and "; the spec's lifetime cap)" in out
