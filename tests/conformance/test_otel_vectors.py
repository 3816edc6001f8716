"""conformance/specs/otel.json, the spec's ``otel`` key as the Python client reads it (checked by the TypeScript,
Kotlin and Rust clients' suites), is what conformance/otel_vectors.py writes from this version."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("otel_vectors", ROOT / "conformance" / "otel_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_otel_fixture_is_what_this_version_writes() -> None:
    gen = _generator()
    assert gen.PATH.read_bytes() == gen.render(gen.document()), "run: python conformance/otel_vectors.py"


def test_the_fixture_covers_every_value_and_kind_accepted_and_refused() -> None:
    doc = json.loads((ROOT / "conformance" / "specs" / "otel.json").read_text("ascii"))
    accepted = [c for c in doc["cases"] if "fingerprint" in c]
    refused = [c for c in doc["cases"] if "errors" in c]
    mapped = [m for c in accepted for m in c["otel"].values() if m is not None]
    assert {m["value"] for m in mapped} == {"any", "sum", "last", "mean", "bucket", "attribute"}
    assert {m["kind"] for m in mapped} == {"counter", "updown_counter", "histogram", "gauge"}
    assert '"otel"' not in accepted[0]["canonical"] and all('"otel"' in c["canonical"] for c in accepted[1:])
    paths = {e["path"].rsplit(".otel", 1)[-1] for c in refused for e in c["errors"] if ".otel" in e["path"]}
    assert {"", ".instrument", ".kind", ".value", ".attribute", ".values", ".buckets", ".unit"} <= paths
