"""Writes (or checks) conformance/specs/otel.json: the spec's per-metric ``otel`` key as the Python client reads it,
for the TypeScript, Kotlin and Rust clients to match.

Each case is a spec document and what the Python client makes of it (ldp/spec/otel.py):

* accepted: ``canonical`` (``canonical_json(spec.to_dict(release=False))``), ``fingerprint`` (the spec fingerprint
  every envelope carries) and ``otel`` (each metric's mapping as normalized, ``null`` without one);
* refused: ``errors``, every problem of the spec's ``SpecError`` in order, each as ``path`` and Python's
  ``message``.

A client agrees when its canonical form and fingerprint are the same bytes, its mappings are the same, and a refused
spec's errors have the same paths in the same order, each error at an ``.otel`` path with Python's message up to its
``, got`` (the whole message when it has none; the value after it is shown in the client's own notation). Standard
library and the ldp package only; tests/conformance/test_otel_vectors.py checks the file is fresh.

Run from anywhere: python conformance/otel_vectors.py [--check]"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

root = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(root))  # this checkout's ldp, whatever the environment has installed
sys.path.insert(0, str(root / "conformance"))
from spec_vectors import _example, _spec, _with, render, write_or_check  # noqa: E402, F401  # render: the test's

from ldp.errors import SpecError  # noqa: E402  # after the path is set
from ldp.reports import canonical_json  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402

PATH = root / "conformance" / "specs" / "otel.json"
FORMAT = 1

LABELLED = {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 3, "labels": ["home", "search", "profile"]},
            "budget": {"per_report": 1.0}}
GRR3 = {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 3}, "budget": {"per_report": 1.0}}
RR = _example("rr")


def _clipped(protocol: str) -> dict[str, Any]:
    """The protocol's first example with ``clip`` on."""
    m = _example(protocol)
    return {**m, "params": {**m["params"], "clip": True}}


def _otel(metric: dict[str, Any], **otel: Any) -> dict[str, Any]:
    return _with(metric, otel=otel)


def _cases() -> list[dict[str, Any]]:
    """Every case: its name and spec document."""
    counter = {"instrument": "app.events", "kind": "counter", "value": "any"}
    return [
        {"name": "otel left out: not in the canonical form", "spec": _spec({"m": RR})},
        {"name": "every value mapped, beside trust and description", "spec": _spec({
            "a_any": _otel(RR, instrument="app.crashes", kind="counter", value="any"),
            "b_any2": _otel(_example("sue"), instrument="App/Errors_Total", kind="histogram", value="any"),
            "c_attr": _otel(LABELLED, instrument="ui.screen.views", kind="counter", value="attribute",
                            attribute="screen"),
            "d_values": _otel(GRR3, instrument="ui.theme", kind="histogram", value="attribute", attribute="theme",
                              values=["dark", "light", "caf\u00e9"]),
            "e_bucket": _otel(GRR3, instrument="http.client.duration", kind="histogram", value="bucket",
                              buckets=[100, 250.5]),
            "f_sum": _otel(_clipped("duchi"), instrument="files.opened", kind="counter", value="sum"),
            "g_updown": _otel(_clipped("hybrid"), instrument="queue.depth", kind="updown_counter", value="sum"),
            "h_last": _otel(_clipped("piecewise"), instrument="battery.level", kind="gauge", value="last"),
            "i_mean": _otel(_clipped("bucket-grr"), instrument="startup.seconds", kind="histogram", value="mean"),
            "j_string": _otel(_example("cms"), instrument="search.queries", kind="counter", value="attribute",
                              attribute="query"),
            "k_sfp": _otel(_example("sfp"), instrument="words", kind="histogram", value="attribute",
                           attribute="w"),
            "l_shuffle": _with(_otel(_example("olh"), instrument="x" * 255, kind="counter", value="attribute",
                                     attribute="k" * 255, values=[str(i) for i in range(4)]),
                               trust="shuffle", description="255-character names"),
            "m_two": _with(_otel(RR, instrument="a", kind="counter", value="any"), trust="two-aggregator"),
            "n_same": _otel(_clipped("duchi"), instrument="APP.CRASHES", kind="counter", value="sum"),
        })},
        {"name": "each protocol class against each value", "spec": _spec({
            f"{value}_{p.replace('-', '_')}": _otel(_clipped(p) if p in ("duchi", "hh") else _example(p),
                                                   **{**counter, "value": value,
                                                      "kind": "histogram" if value in ("mean", "bucket") else
                                                      "gauge" if value == "last" else "counter"},
                                                   **({"attribute": "a"} if value == "attribute" else {}),
                                                   **({"buckets": [1.0]} if value == "bucket" else {}))
            for value in ("any", "sum", "last", "mean", "bucket", "attribute")
            for p in ("rr", "grr", "oue", "duchi", "hh", "cms", "rappor", "multi")})},
        {"name": "bad instruments, kinds and values", "spec": _spec({
            **{f"i{i:02}": _otel(RR, instrument=bad, kind="counter", value="any") for i, bad in enumerate(
                ["", "9lives", "_x", "a b", "a" * 256, "\u00e9t\u00e9", "a\n", 5, None, ["a"], True, "a:b"])},
            **{f"k{i:02}": _otel(RR, instrument="a", kind=bad, value="any") for i, bad in enumerate(
                ["Counter", "observable_counter", "up_down_counter", "", 1, None])},
            **{f"v{i:02}": _otel(RR, instrument="a", kind="counter", value=bad) for i, bad in enumerate(
                ["count", "ANY", "", 0, None, ["any"]])},
            **{f"w{i:02}": _otel(_clipped("duchi") if value in ("sum", "last", "mean") else RR, instrument="a",
                                 kind=kind, value=value)
               for i, (kind, value) in enumerate([("gauge", "any"), ("updown_counter", "any"), ("gauge", "sum"),
                                                  ("histogram", "sum"), ("counter", "last"), ("counter", "mean"),
                                                  ("gauge", "mean")])},
            "x_kind_and_fit": _otel(GRR3, instrument="a", kind="gauge", value="mean"),
        })},
        {"name": "bad attributes, values and buckets", "spec": _spec({
            "a_missing": _otel(LABELLED, instrument="a", kind="counter", value="attribute"),
            "b_extra": _otel(RR, instrument="a", kind="counter", value="any", attribute="x"),
            "c_empty": _otel(LABELLED, instrument="a", kind="counter", value="attribute", attribute=""),
            "d_long": _otel(LABELLED, instrument="a", kind="counter", value="attribute", attribute="k" * 256),
            "e_type": _otel(LABELLED, instrument="a", kind="counter", value="attribute", attribute=3),
            "f_no_labels": _otel(GRR3, instrument="a", kind="counter", value="attribute", attribute="x"),
            "g_count": _otel(GRR3, instrument="a", kind="counter", value="attribute", attribute="x",
                             values=["a", "b"]),
            "h_twice": _otel(GRR3, instrument="a", kind="counter", value="attribute", attribute="x",
                             values=["a", "b", "a"]),
            "i_types": _otel(GRR3, instrument="a", kind="counter", value="attribute", attribute="x",
                             values=["a", "b", 3]),
            "j_empty_values": _otel(GRR3, instrument="a", kind="counter", value="attribute", attribute="x",
                                    values=[]),
            "k_values_string": _otel(_example("cms"), instrument="a", kind="counter", value="attribute",
                                     attribute="x", values=["a"]),
            "l_values_extra": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets=[1, 2],
                                    values=["a", "b", "c"]),
            "m_buckets_missing": _otel(GRR3, instrument="a", kind="histogram", value="bucket"),
            "n_buckets_extra": _otel(LABELLED, instrument="a", kind="counter", value="attribute", attribute="x",
                                     buckets=[1]),
            "o_buckets_count": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets=[1, 2, 3]),
            "p_buckets_order": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets=[2, 1]),
            "q_buckets_equal": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets=[1, 1.0]),
            "r_buckets_type": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets=[1, "2"]),
            "s_buckets_bool": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets=[True, 2]),
            "t_buckets_empty": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets=[]),
            "u_buckets_object": _otel(GRR3, instrument="a", kind="histogram", value="bucket", buckets={"a": 1}),
            "v_any_three": _otel(GRR3, instrument="a", kind="counter", value="any"),
            "w_no_clip": _otel(_example("duchi"), instrument="a", kind="gauge", value="last"),
            "x_unknown": _otel(RR, instrument="a", kind="counter", value="any", unit="ms"),
            "y_not_object": _with(RR, otel="app.crashes"),
            "z_nothing": _with(RR, otel={}),
        })},
        {"name": "otel checked after the metric's other keys, its fit only for valid params", "spec": _spec({
            "a_params": _otel(_with(GRR3, params={"epsilon": -1.0, "domain_size": 3}), instrument="a",
                              kind="gauge", value="sum"),
            "b_after": _with(_otel(RR, instrument="", kind="counter", value="any"), trust="nope", description=5),
            "c_budget": {"protocol": "rr", "params": RR["params"], "otel": {"instrument": "a", "kind": "counter",
                                                                            "value": "mean"}},
        })},
    ]


def document() -> dict[str, Any]:
    """The fixture: every case and what the Python client makes of it."""
    out = []
    for case in _cases():
        item: dict[str, Any] = {"name": case["name"], "spec": case["spec"]}
        try:
            spec = CollectionSpec.from_dict(case["spec"])
        except SpecError as exc:
            item["errors"] = [dict(zip(("path", "message"), e.split(": ", 1), strict=True)) for e in exc.errors]
            out.append(item)
            continue
        item["canonical"] = canonical_json(spec.to_dict(release=False))
        item["fingerprint"] = spec.fingerprint
        item["otel"] = {name: None if m.otel is None else m.otel.to_dict() for name, m in spec.metrics.items()}
        out.append(item)
    return {"format": FORMAT, "about": __doc__.split("\n\n")[0].replace("\n", " "), "cases": out}


def main(argv: list[str]) -> int:
    return write_or_check(argv, PATH, document())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
