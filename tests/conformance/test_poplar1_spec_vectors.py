"""conformance/specs/poplar1.json, the spec's ``poplar1`` metric kind as the Python client reads it (replayed by the
TypeScript, Kotlin and Rust clients' suites), is what conformance/poplar1_spec_vectors.py writes from this version,
and covers what the design asks (docs/string-discovery.md): every param's bad values, every other trust, records
without a task, and measurements at 8, 64 and 256 bits of each refusal."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "conformance" / "specs" / "poplar1.json"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("poplar1_spec_vectors", ROOT / "conformance" /
                                                  "poplar1_spec_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_poplar1_fixture_is_what_this_version_writes() -> None:
    """Fails when the spec's checks, their messages, the canonical form or a measurement change without the file."""
    gen = _generator()
    assert gen.PATH == DOC
    assert gen.PATH.read_bytes() == gen.render(gen.document()), "run: python conformance/poplar1_spec_vectors.py"
    assert gen.main(["poplar1_spec_vectors.py", "--check"]) == 0


def test_the_fixture_covers_each_param_each_trust_and_each_measurement_refusal() -> None:
    doc = json.loads(DOC.read_text("ascii"))
    accepted = [c for c in doc["cases"] if "fingerprint" in c]
    refused = [c for c in doc["cases"] if "errors" in c]
    assert {t for c in accepted for t in c["trust"].values()} == {"two-aggregator", "local"}
    records = [r for c in accepted for r in c.get("records", [])]
    assert {r["error"]["code"] for r in records if "error" in r} == {"trust_model"}
    assert any("error" not in r for r in records)  # the local metric beside it records
    paths = {e["path"].rsplit(".", 1)[-1] for c in refused for e in c["errors"]}
    assert {"bits", "threshold", "max_candidates", "levels", "trust", "params"} <= paths
    got = {e["message"].split(", got ")[1] for c in refused for e in c["errors"] if e["path"].endswith(".trust")
           and e["message"].startswith("must be two-aggregator for poplar1")}
    assert got == {"'local'", "'shuffle'", "'two-aggregator+local'"}
    measured = doc["measurements"]
    assert {m["bits"] for m in measured} == {8, 64, 256}
    assert {m["error"] for m in measured if "error" in m} == {"value_type", "value_too_long", "not_in_alphabet"}
    for m in measured:
        assert "error" in m or len(m["hex"]) == m["bits"] // 4
