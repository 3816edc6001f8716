"""Writes (or checks) conformance/specs/poplar1.json: the spec's metric kind for strings, ``protocol: "poplar1"``
(issue 89 item 3), as the Python client reads it, for the TypeScript, Kotlin and Rust clients to match.

The cases have trust.json's format and rules (conformance/spec_vectors.py): an accepted spec gives ``canonical``,
``fingerprint``, ``trust`` and, with ``records``, each record on a fresh device given no task (a poplar1 or Prio3
two-aggregator metric refuses every value with ``trust_model``, whatever the value) and ``pending``; a refused spec
gives ``errors`` (path and Python's message; at a ``.trust`` path a client matches the message up to its ``, got``).
The params: ``bits`` an int, a multiple of 8 in [8, 256]; ``threshold`` an int >= 1; ``max_candidates`` an int in
[2, 1048576] (2^20); all required, no other key; a bool or a float (64.0 too) is no int; checked in that order, the
first failing one reported. The trust must be ``two-aggregator`` (left out it is ``local``), checked only when the
params are valid.

``measurements``: what a value of a metric of ``bits`` bits becomes on a device with its task (ldp/encoders/poplar1.py
``measurement_bytes``): ``hex``, the ``bits/8`` bytes whose bits, most significant first, are the Poplar1
measurement (text as UTF-8, right-padded with 0x00), or ``error``, the refusal's code: ``value_type`` (not text),
``value_too_long`` (over bits/8 bytes), ``not_in_alphabet`` (ends in a 0x00 byte; a NUL inside is kept). Standard
library and the ldp package only; tests/conformance/test_poplar1_spec_vectors.py checks the file is fresh.

Run from anywhere: python conformance/poplar1_spec_vectors.py [--check]"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

root = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(root))  # this checkout's ldp, whatever the environment has installed
sys.path.insert(0, str(root / "conformance"))
from spec_vectors import FORMAT, GRR, _example, _spec, _with, case_items, render, write_or_check  # noqa: E402, F401

from ldp.encoders.poplar1 import MAX_CANDIDATES, Poplar1Params  # noqa: E402  # after the path is set
from ldp.errors import Refusal  # noqa: E402
from ldp.reports import canonical_json  # noqa: E402

PATH = root / "conformance" / "specs" / "poplar1.json"
POPLAR1 = {"protocol": "poplar1", "params": {"bits": 64, "threshold": 20, "max_candidates": 1024},
           "budget": {"per_report": 1.0}, "trust": "two-aggregator"}
VALUES = ["hello", "", "日本語", "12345678", "123456789", "ab\u0000", "a\u0000b", 5, 1.5, None, True, ["a"]]
"""What each accepted case with records records: good and bad values (refused alike without a task)."""


def _params(**params: Any) -> dict[str, Any]:
    return _with(POPLAR1, params={**POPLAR1["params"], **params})


def _bad_params() -> dict[str, Any]:
    """One metric per bad value of each parameter (the others valid), missing ones, unknown keys, no object."""
    bad: dict[str, list[Any]] = {
        "bits": ["64", 64.0, 64.5, True, None, [], {}, 0, 7, 12, 63, 257, 264, -8],
        "threshold": [0, -1, 1.0, "1", True, None, [1]],
        "max_candidates": [1, 0, -2, MAX_CANDIDATES + 1, 2.0, "2", False, None],
    }
    metrics = {f"{name[0]}{i:02}": _params(**{name: v}) for name, values in bad.items() for i, v in enumerate(values)}
    for name in POPLAR1["params"]:
        metrics[f"missing_{name}"] = _with(POPLAR1, params={k: v for k, v in POPLAR1["params"].items() if k != name})
    metrics["missing_all"] = _with(POPLAR1, params={})
    metrics["unknown_key"] = _params(levels=8)
    metrics["unknown_keys"] = _params(epsilon=1.0, length=8)
    metrics["not_an_object"] = _with(POPLAR1, params=[64, 20, 1024])
    metrics["null_params"] = _with(POPLAR1, params=None)
    return metrics


def _cases() -> list[dict[str, Any]]:
    """Every case: its name, spec document and (accepted specs) the records tried on a device given no task."""
    return [
        {"name": "a poplar1 metric beside a Prio3 one and a local one",
         "spec": _spec({"new_words": POPLAR1, "dark_mode": _with(_example("rr"), trust="two-aggregator"),
                        "z_local": GRR}),
         "records": [*(["new_words", v] for v in VALUES), ["dark_mode", True], ["z_local", 1]]},
        {"name": "poplar1 at its bounds, params in another key order, with description and release",
         "spec": _spec({
             "a_low": _with(POPLAR1, params={"max_candidates": 2, "threshold": 1, "bits": 8}, description="one byte"),
             "b_high": _with(POPLAR1, params={"threshold": 1000000, "bits": 256, "max_candidates": MAX_CANDIDATES},
                             release={"min_reports": 5}),
             "c_small_budget": _with(POPLAR1, budget={"per_report": 0.01, "per_window": 0.05, "lifetime": 1}),
         }), "records": [["a_low", "a"], ["b_high", "x" * 33]]},
        {"name": "bad poplar1 params", "spec": _spec(_bad_params())},
        {"name": "poplar1 under every other trust model",
         "spec": _spec({"a_left_out": {k: v for k, v in POPLAR1.items() if k != "trust"},
                        **{f"b_{t.replace('-', '_').replace('+', '_')}": _with(POPLAR1, trust=t)
                           for t in ("local", "shuffle", "two-aggregator+local")},
                        "c_unknown": _with(POPLAR1, trust="central"), "d_number": _with(POPLAR1, trust=5)})},
        {"name": "poplar1's trust checked only for valid params, after its other keys",
         "spec": _spec({"a_bad_params": _with(_params(bits=12), trust="local"),
                        "b_no_budget": {k: v for k, v in POPLAR1.items() if k not in ("budget", "trust")},
                        "c_bad_budget": _with(POPLAR1, budget={"per_report": 0}, trust="shuffle"),
                        "d_description": _with(POPLAR1, description=5, trust="two-aggregator+local")})},
    ]


def _measurements() -> list[dict[str, Any]]:
    """Each value at bits 8, 64 and 256: its measurement's bytes in hex, or the refusal's code."""
    out = []
    for bits in (8, 64, 256):
        n = bits // 8
        params = Poplar1Params(bits, 1, 2)
        values: list[Any] = ["a", "abc", "é", "日本", "\U0001f642", "a\u0000b", "", "z" * n,
                             "é" * (n // 2) + "y" * (n % 2), "z" * (n + 1), "é" * (n // 2 + 1),
                             "ab\u0000"[:max(1, min(3, n))], "\u0000", "abc\u0000", "z" * (n - 1) + "\u0000"]
        if bits == 64:
            values += [5, 1.5, None, True, ["a"], {"a": 1}]
        for value in dict.fromkeys(map(canonical_json, values)):  # each value once, in order
            item: dict[str, Any] = {"bits": bits, "value": _decoded(value)}
            try:
                item["hex"] = params.measurement_bytes(item["value"]).hex()
            except (TypeError, ValueError) as exc:
                assert isinstance(exc, Refusal), exc
                item["error"] = exc.code
            out.append(item)
    return out


def _decoded(text: str) -> Any:
    import json

    return json.loads(text)


def document() -> dict[str, Any]:
    """The fixture: every case and what the Python client makes of it, then the measurements."""
    return {"format": FORMAT, "about": __doc__.split("\n\n")[0].replace("\n", " "), "cases": case_items(_cases()),
            "measurements": _measurements()}


def main(argv: list[str]) -> int:
    return write_or_check(argv, PATH, document())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
