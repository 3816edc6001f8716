"""The spec's ``otel`` key (ldp.spec.otel) beyond the conformance fixture: any document is refused with errors at
its own paths or accepted as written, and ``ldp spec validate`` lists the instruments and what a window costs."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from ldp.errors import SpecError
from ldp.spec import CollectionSpec
from ldp.spec.cli import summary

BASE = {"spec_version": 1, "name": "t", "budget": {"per_window": 100, "lifetime": 1000}}
METRICS = [{"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
           {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3, "labels": ["a", "b", "c"]},
            "budget": {"per_report": 1}},
           {"protocol": "duchi", "params": {"epsilon": 1, "low": 0, "high": 1, "clip": True},
            "budget": {"per_report": 1}},
           {"protocol": "cms", "params": {"epsilon": 1, "num_hashes": 2, "width": 16}, "budget": {"per_report": 1}}]
_leaf = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False) | \
    st.sampled_from(["counter", "updown_counter", "histogram", "gauge", "any", "sum", "last", "mean", "bucket",
                     "attribute", "a", "x.y", "", "9"])
_value = st.recursive(_leaf, lambda c: st.lists(c, max_size=4), max_leaves=8)
_otel = st.dictionaries(st.sampled_from(["instrument", "kind", "value", "attribute", "values", "buckets", "zz"]),
                        _value, max_size=7)


@settings(max_examples=400, deadline=None)
@given(metric=st.sampled_from(METRICS), otel=_otel | _value)
def test_any_otel_document_is_accepted_as_written_or_refused_at_its_own_paths(metric: dict[str, Any], otel: Any):
    doc = {**BASE, "metrics": {"m": {**metric, "otel": otel}}}
    try:
        spec = CollectionSpec.from_dict(doc)
    except SpecError as exc:
        assert exc.errors and all(e.startswith("metrics.m.otel") for e in exc.errors), exc.errors
        return
    source = spec.metrics["m"].otel
    assert source is not None
    back = source.to_dict()
    assert json.loads(json.dumps(back)) == {k: [float(b) for b in v] if k == "buckets" else v
                                            for k, v in otel.items()}
    assert CollectionSpec.from_dict(spec.to_dict()).fingerprint == spec.fingerprint


def test_spec_validate_lists_the_instruments_and_the_cost_of_a_window():
    doc = {**BASE, "metrics": {
        "crashed": {**METRICS[0], "otel": {"instrument": "app.crashes", "kind": "counter", "value": "any"}},
        "screen": {**METRICS[1], "otel": {"instrument": "ui.views", "kind": "counter", "value": "attribute",
                                          "attribute": "screen"}},
        "plain": METRICS[2]}}
    text = summary(CollectionSpec.from_dict(doc))
    assert "app.crashes (counter) -> crashed: whether it counted anything, by rr" in text
    assert "ui.views (counter) -> screen: the 'screen' value counted most, by grr (ε=1)" in text
    assert "one window of these costs a device at most ε=2.09861" in text
    assert "OpenTelemetry" not in summary(CollectionSpec.from_dict({**BASE, "metrics": {"plain": METRICS[2]}}))


def test_the_page_lists_each_protocol_under_its_value_class():
    import re
    from pathlib import Path

    from ldp.spec.otel import value_classes

    page = (Path(__file__).resolve().parents[2] / "docs" / "opentelemetry.md").read_text(encoding="utf-8")
    listed = {}
    for name, cls in (("Booleans", "boolean"), ("Categories", "category"), ("Numbers", "number"),
                      ("Strings", "string")):
        sentence = re.search(rf"{name}: ([^.]*)\.", page)
        assert sentence is not None, name
        listed.update({p: cls for p in re.findall(r"`([a-z-]+)`", sentence.group(1))})
    assert listed == {p: c for p, c in value_classes().items() if c is not None}
