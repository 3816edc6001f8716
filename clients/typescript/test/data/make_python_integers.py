"""Writes ``python_integers.json``: what the Python client does with integers at the edge of a double's exact range,
for the TypeScript client's integer rule (test/integers.test.mjs; docs/typescript-client.md, "Numbers").

Run from this folder with the repository's Python environment (it imports ``ldp``)::

    python make_python_integers.py

For each client protocol, on its first conformance parameter set (the vector files' metric ``m0``), the encoder's
``prepare`` is given the ints 1, 2^53 - 1, 2^53, 2^53 + 1, 2^64, -2^53 and -2^53 - 1 and the floats 2^53 - 1,
2^53 and 2^64; for ``multi``, a record of its first audit input with each attribute in turn set to each of them.
Each outcome is ``"accepted"`` or the refusal's ``type``, ``code`` and ``fields`` (``ldp.conformance.refusals``).
Numbers are typed so that JavaScript reads them exactly: an int as ``{"int": "digits"}``, a float as
``{"float": "repr"}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ldp.conformance.refusals import refusal_of
from ldp.conformance.vectors import _probe_extra, client_protocols

HERE = Path(__file__).resolve().parent
INTS = [1, 2**53 - 1, 2**53, 2**53 + 1, 2**64, -(2**53), -(2**53) - 1]
FLOATS = [float(2**53 - 1), float(2**53), float(2**64)]


def typed(v: Any) -> Any:
    """``v`` with every number typed (``{"int": ...}``, ``{"float": ...}``); bools, strings and null as they are."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, float):
        return {"float": repr(v)}
    if isinstance(v, dict):
        return {k: typed(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [typed(x) for x in v]
    raise TypeError(type(v))


def outcome(encoder: Any, rules: Any, value: Any) -> Any:
    try:
        encoder.prepare(value)
    except Exception as exc:  # noqa: BLE001 - every refusal is recorded, anything else stops the script
        error = refusal_of(exc, "values", rules)
        error.pop("message")
        return typed(error)
    return "accepted"


def main() -> None:
    out: dict[str, Any] = {}
    values = [*INTS, *FLOATS]
    for protocol in sorted(client_protocols()):
        params_type, encoder_type = client_protocols()[protocol]
        params = params_type.conformance_examples()[0]
        encoder = encoder_type(params, rng=0, simulation=True, **_probe_extra(encoder_type, params))
        rules = params_type.declared_rules()
        cases = [{"value": typed(v), "outcome": outcome(encoder, rules, v)} for v in values]
        if protocol == "multi":
            base = params.audit_inputs()[0]
            for name in base:
                for v in values:
                    record = {**base, name: v}
                    cases.append({"value": typed(record), "outcome": outcome(encoder, rules, record)})
        out[protocol] = {"params": params.to_dict(), "cases": cases}
    text = json.dumps(out, indent=1, sort_keys=True) + "\n"
    (HERE / "python_integers.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
