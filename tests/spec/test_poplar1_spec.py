"""The spec's metric kind for strings, ``protocol: "poplar1"`` (issue 89, item 3; ldp/encoders/poplar1.py): its params
accepted exactly when the design says (by hypothesis, against a rule written here from the design, not from the
code), refused at the first failing param's path, its trust only ``two-aggregator``; its canonical form; the value's
measurement (by hypothesis, against ``ldp.prio.poplar1.bits_of``); what ``ldp spec validate`` says of it; no
envelope routed to it; its task written as Poplar1 with the spec's bits, max_candidates and threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from support import call_main

from ldp.encoders.poplar1 import Poplar1Params
from ldp.errors import Refusal
from ldp.hashing import value_bytes
from ldp.protocols import builtin_client_protocols
from ldp.reports import Report
from ldp.spec import CollectionSpec, Envelope, EnvelopeError, SpecError

PARAMS = {"bits": 64, "threshold": 20, "max_candidates": 1024}


def _doc(params: Any = None, **metric: Any) -> dict[str, Any]:
    m = {"protocol": "poplar1", "params": PARAMS if params is None else params, "budget": {"per_report": 1.0},
         "trust": "two-aggregator", **metric}
    return {"spec_version": 1, "name": "words", "budget": {"per_window": 10, "lifetime": 100},
            "metrics": {"w": {k: v for k, v in m.items() if v is not None}}}


def _errors(doc: dict[str, Any]) -> list[str]:
    try:
        CollectionSpec.from_dict(doc)
    except SpecError as exc:
        return list(exc.errors)
    return []


def _first_bad(params: dict[str, Any]) -> str | None:
    """The design's rule (docs/string-discovery.md), written independently of the code: the first param, in the
    order bits, threshold, max_candidates, that is not an int (bools are not) in its range."""
    rules = {"bits": lambda v: 8 <= v <= 256 and v % 8 == 0, "threshold": lambda v: v >= 1,
             "max_candidates": lambda v: 2 <= v <= 2 ** 20}
    for name, ok in rules.items():
        v = params[name]
        if isinstance(v, bool) or not isinstance(v, int) or not ok(v):
            return name
    return None


ANY_VALUE = st.one_of(st.integers(-300, 2 ** 21), st.sampled_from([0, 1, 2, 8, 255, 256, 264, 2 ** 20, 2 ** 20 + 1]),
                      st.booleans(), st.floats(allow_nan=False, max_value=1e7), st.none(), st.text(max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({k: ANY_VALUE for k in PARAMS}))
def test_params_are_accepted_exactly_when_the_design_says(params: dict[str, Any]) -> None:
    """Breaks if a bound, the multiple of 8, the bool or float rule, or the order of the checks moves."""
    errors = _errors(_doc(params))
    bad = _first_bad(params)
    if bad is None:
        assert errors == []
        spec = CollectionSpec.from_dict(_doc(dict(reversed(list(params.items())))))  # key order does not matter
        assert spec.params("w").to_dict() == params and spec.fingerprint == CollectionSpec.from_dict(
            _doc(params)).fingerprint
    else:
        assert len(errors) == 1 and errors[0].startswith(f"metrics.w.params.{bad}: must be "), errors


def test_the_canonical_form_sorts_the_params_and_keeps_the_trust() -> None:
    spec = CollectionSpec.from_dict(_doc())
    metric = json.dumps(spec.to_dict(release=False)["metrics"]["w"], sort_keys=True, separators=(",", ":"))
    assert '"params":{"bits":64,"max_candidates":1024,"threshold":20}' in metric
    assert '"protocol":"poplar1"' in metric and '"trust":"two-aggregator"' in metric
    assert spec.report_charge("w").epsilon == 1.0  # the charge is per_report: no local ε
    with pytest.raises(ValueError, match="no local randomizer"):
        _ = spec.params("w").privacy_cost


@pytest.mark.parametrize("trust", ["local", "shuffle", "two-aggregator+local", None])
def test_every_other_trust_is_refused_at_its_path(trust: str | None) -> None:
    """``None``: the key left out (local)."""
    assert _errors(_doc(trust=trust)) == [f"metrics.w.trust: must be two-aggregator for poplar1 (its devices share "
                                          f"the exact value: no local randomizer), got {trust or 'local'!r}"]


def test_unknown_and_missing_params_and_a_budget_below_nothing() -> None:
    assert _errors(_doc({**PARAMS, "levels": 8})) == [
        "metrics.w.params.levels: unknown key (expected one of bits, max_candidates, threshold)"]
    assert _errors(_doc({"bits": 64})) == ["metrics.w.params.max_candidates: required",
                                           "metrics.w.params.threshold: required"]
    assert _errors(_doc(budget={"per_report": 0.001})) == []  # no local cost to compare per_report with


def test_poplar1_is_no_registered_protocol() -> None:
    """The registry lists protocols with an encoder (their vectors, planner, decoders); poplar1 has none."""
    assert "poplar1" not in builtin_client_protocols()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([8, 16, 64, 256]), st.one_of(st.text(max_size=40), st.binary(max_size=40)))
def test_a_value_is_its_bytes_zero_padded_unless_too_long_or_ending_in_nul(bits: int, value: str | bytes) -> None:
    """Breaks if the padding side, the byte bound, the NUL rule or the bit order (against ``bits_of``) moves."""
    from ldp.prio.poplar1 import bits_of, bits_to_bytes  # pure Python: no binding needed

    params = Poplar1Params(bits, 1, 2)
    try:
        raw = value_bytes(value)
    except ValueError:  # a lone surrogate: no UTF-8 form
        with pytest.raises(ValueError):
            params.measurement_bytes(value)
        return
    if len(raw) > bits // 8 or raw.endswith(b"\0"):
        with pytest.raises(ValueError) as exc:
            params.measurement_bytes(value)
        assert isinstance(exc.value, Refusal)
        assert exc.value.code == ("value_too_long" if len(raw) > bits // 8 else "not_in_alphabet")
    else:
        out = params.measurement_bytes(value)
        assert out == raw + bytes(bits // 8 - len(raw))
        assert bits_to_bytes(bits_of(value, bits)) == out


def test_spec_validate_explains_the_metric_and_skips_its_shuffled_figure(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_doc()))
    code, out, err = call_main(["spec", "validate", str(path), "--shuffled", "1000"])
    assert code == 0, err
    assert "poplar1   none (exact)" in out and "(Poplar1, {'bits': 64" in out
    assert "w: no local randomizer (the exact value is shared between two aggregators): no shuffled figure" in out
    code, out, err = call_main(["spec", "validate", str(path), "--shuffled", "1000", "--json"])
    assert code == 0 and json.loads(out)["central"]["w"]["guarantee"] is None


def test_no_envelope_is_routed_to_a_poplar1_metric() -> None:
    spec = CollectionSpec.from_dict(_doc())
    params = spec.params("w")
    report = Report.trusted("poplar1", params.fingerprint, {})
    with pytest.raises(EnvelopeError) as exc:
        spec.route(Envelope(spec.fingerprint, "w", 0, report))
    assert exc.value.reason == "wrong_protocol"


def test_its_task_is_poplar1_with_the_specs_bits_candidates_and_threshold() -> None:
    from ldp.aggregators.task import Noise, Task

    spec = CollectionSpec.from_dict(_doc())
    task = Task.for_metric(spec, "w", leader_url="http://l.test", helper_url="http://h.test",
                           collector_hpke_config=b"\1" * 9, min_batch_size=2, noise=Noise())
    assert (task.vdaf, task.vdaf_params, task.trust, task.local) == ("Poplar1", {**PARAMS}, "two-aggregator", None)
    with pytest.raises(ValueError, match="Poplar1 task is of VDAF draft 18"):
        Task.for_metric(spec, "w", leader_url="http://l.test", helper_url="http://h.test",
                        collector_hpke_config=b"\1" * 9, min_batch_size=2, noise=Noise(), vdaf_draft=8)


def test_the_example_spec_declares_a_poplar1_metric() -> None:
    """examples/new_words.json (docs/string-discovery.md) stays valid, with the design's metric."""
    from support import ROOT

    spec = CollectionSpec.load(ROOT / "examples" / "new_words.json")
    m = spec.metric("new_words")
    assert (m.protocol, m.trust, m.params.to_dict()) == ("poplar1", "two-aggregator", PARAMS)


def test_an_envelope_naming_a_poplar1_metric_is_rejected_not_folded(tmp_path: Path) -> None:
    """A device may send anything: before ``envelope_metric``, a well-formed envelope named the metric's aggregate
    (which no protocol has: the whole ``ldp fold`` stopped), and a line the empty payload's fast path matched did
    too. Both are now rejected lines, and the fold finishes."""
    spec = CollectionSpec.from_dict(_doc())
    fp, pfp = spec.fingerprint, spec.params("w").fingerprint
    lines = [json.dumps({"spec": fp, "metric": "w", "window": 3, "report": {"v": 1, "protocol": "poplar1",
                                                                         "params": pfp, "payload": {"x": 1}}}),
             '{"spec":"' + fp + '","metric":"w","window":3}}}']
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "spec.json").write_text(json.dumps(_doc()))
    code, out, err = call_main(["fold", "--spec", str(tmp_path / "spec.json"), "--out", str(tmp_path / "out"),
                                str(tmp_path / "r.jsonl")])
    assert code == 0, err
    reasons = [json.loads(line)["reason"] for line in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert reasons == ["unknown_metric", "not_json"]
    assert spec.envelope_metric("w") is None and spec.metric("w").protocol == "poplar1"


def test_the_bounds_are_the_bindings_and_the_walks() -> None:
    """The spec's 256 bits is the native client's bound (ldp.prio.poplar1.MAX_BITS), not a second number."""
    from ldp.encoders.poplar1 import MAX_BITS, MAX_CANDIDATES
    from ldp.prio.poplar1 import MAX_BITS as BINDING_MAX_BITS

    assert MAX_BITS == BINDING_MAX_BITS == 256 and MAX_CANDIDATES == 2 ** 20
