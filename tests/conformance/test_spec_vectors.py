"""conformance/specs/trust.json, the spec's ``trust`` key as the Python client reads it (checked by the TypeScript,
Kotlin and Rust clients' suites), is what conformance/spec_vectors.py writes from this version."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spec_vectors", ROOT / "conformance" / "spec_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trust_fixture_is_what_this_version_writes() -> None:
    gen = _generator()
    assert gen.PATH.read_bytes() == gen.render(gen.document()), "run: python conformance/spec_vectors.py"


def test_the_fixture_covers_every_trust_model_accepted_and_refused() -> None:
    doc = json.loads((ROOT / "conformance" / "specs" / "trust.json").read_text("ascii"))
    accepted = [c for c in doc["cases"] if "fingerprint" in c]
    refused = [c for c in doc["cases"] if "errors" in c]
    assert {t for c in accepted for t in c["trust"].values()} == {"local", "shuffle", "two-aggregator",
                                                                   "two-aggregator+local"}
    assert len({c["fingerprint"] for c in accepted[:5]}) == 4  # left out and "local" given are one spec
    codes = {r["error"]["code"] for c in accepted for r in c.get("records", []) if "error" in r}
    assert codes == {"trust_model"}
    assert any(r for c in accepted for r in c.get("records", []) if "error" not in r)
    messages = {e["message"].split(", got ")[0] for c in refused for e in c["errors"] if e["path"].endswith(".trust")}
    assert "must be one of local, shuffle, two-aggregator, two-aggregator+local" in messages
    assert any("does not fit in Prio3" in m for m in messages)
