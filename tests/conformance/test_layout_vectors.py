"""conformance/layouts/projective.json, the default layouts of ``pgr`` and ``hpg`` and the Python client's answers
to their params (checked by the TypeScript, Kotlin and Rust clients' suites), is what conformance/layout_vectors.py
writes from this version."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layout_vectors", ROOT / "conformance" / "layout_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layout_fixture_is_what_this_version_writes() -> None:
    gen = _generator()
    assert gen.PATH.read_bytes() == gen.render(gen.document()), "run: python conformance/layout_vectors.py"


def _kind(item: dict) -> str:
    fields = item["error"]["fields"]
    return f"{item['protocol']} {item['error']['code']} {fields.get('limit') or fields.get('rule')}"


def test_the_fixture_reaches_every_kind_of_answer() -> None:
    doc = json.loads((ROOT / "conformance" / "layouts" / "projective.json").read_text("ascii"))
    assert doc["format"] == 1 and len(doc["pgr"]) > 1500 and len(doc["hpg"]) > 2000
    for key, width in (("pgr", 4), ("hpg", 6), ("variances", 6), ("hyperplanes", 5)):
        assert {len(row) for row in doc[key]} == {width}, key
    # no layout, a layout of infinite variance (an extreme ε), and past ε = 20 (every prime a candidate)
    assert any(row[2] is None for row in doc["pgr"]) and any(row[4] is None for row in doc["hpg"])
    assert any(row[2] is not None and row[3] is None for row in doc["pgr"])
    assert any(row[4] is not None and row[5] is None for row in doc["hpg"])
    assert any(row[0] == 40.0 and row[2] is not None for row in doc["pgr"])
    assert any(row[2] is not None for row in doc["hpg"]) and any(row[3] is not None for row in doc["hpg"])
    refused = {_kind(item) for item in doc["params"] if "error" in item}
    for protocol in ("pgr", "hpg"):
        assert {f"{protocol} param_limit aggregate_cells", f"{protocol} param_limit decode_work",
                f"{protocol} param_relation epsilon_too_large", f"{protocol} param_relation epsilon_too_small",
                f"{protocol} param_relation prime_field"} <= refused
    assert "hpg param_relation two_blocks" in refused
    accepted = [item for item in doc["params"] if "resolved" in item]
    assert {item["protocol"] for item in accepted} == {"pgr", "hpg"}
    assert any(item["given"].get("labels") for item in accepted)
    gots = [item["error"]["fields"].get("got") for item in doc["params"] if "error" in item]
    assert any(isinstance(got, int) and got > 2**53 for got in gots)  # exact in the file
