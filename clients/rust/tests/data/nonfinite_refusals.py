"""Writes nonfinite_refusals.json: how Python refuses NaN, inf and -inf for every metric of every conformance vector
file (no vector file holds them: their JSON is strict). tests/c_api.rs replays them through the C interface's
``ldp_client_record_double``. A non-finite ``got`` is written as ``null`` (what ``ldp_last_error_fields`` gives).

    python clients/rust/tests/data/nonfinite_refusals.py   # from the repository's root
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ldp.conformance.refusals import builtin_type, check_refusal
from ldp.conformance.vectors import _probe_extra
from ldp.errors import Refusal
from ldp.protocols import client_protocols
from ldp.spec import CollectionSpec

ROOT = Path(__file__).resolve().parents[4]
VALUES = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def strict(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: strict(x) for k, x in v.items()}
    if isinstance(v, list):
        return [strict(x) for x in v]
    return v


def main() -> None:
    out = {}
    for path in sorted((ROOT / "conformance" / "vectors").glob("*.json")):
        doc = json.loads(path.read_text())
        if "spec" not in doc:
            continue
        protocol = doc["protocol"]
        params_type, encoder_type = client_protocols()[protocol]
        spec = CollectionSpec.from_dict(doc["spec"])
        items = []
        for metric, m in doc["spec"]["metrics"].items():
            params = params_type.from_dict(m["params"])
            rules = params_type.declared_rules()
            probe = encoder_type(params, rng=0, simulation=True, **_probe_extra(encoder_type, params))
            for name, value in VALUES.items():
                try:
                    probe.prepare(value)
                except (ValueError, TypeError) as exc:
                    assert isinstance(exc, Refusal), f"{protocol} {metric}: {name}: {exc!r} has no code"
                    assert not check_refusal(exc.code, exc.fields, "values", rules), (protocol, metric, name)
                    error = {"type": builtin_type(exc), "code": exc.code, "fields": strict(dict(exc.fields)),
                             "message": str(exc)}
                    items.append({"metric": metric, "value": name, "error": error})
                else:
                    raise AssertionError(f"{protocol} {metric}: {name} accepted")
        out[protocol] = {"spec_fingerprint": spec.fingerprint, "refusals": items}
    text = json.dumps(out, indent=1, ensure_ascii=True, allow_nan=False, sort_keys=True) + "\n"
    (Path(__file__).parent / "nonfinite_refusals.json").write_text(text)


if __name__ == "__main__":
    main()
