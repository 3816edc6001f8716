"""Writes (or checks) conformance/specs/trust.json: the spec's per-metric ``trust`` key as the Python client reads it,
for the TypeScript, Kotlin and Rust clients to match.

Each case is a spec document and what the Python client makes of it (ldp/spec/schema.py, ldp/client/runtime.py):

* accepted: ``canonical`` (``canonical_json(spec.to_dict(release=False))``), ``fingerprint`` (the spec fingerprint
  every envelope carries), ``trust`` (each metric's trust model, ``local`` when left out), and, where the case has
  them, ``records`` (each ``record(metric, value)`` on a fresh device of the spec, in order: the refusal's ``error``
  as the vector files write one, or none when recorded), ``record_many`` (one ``record_many`` call after them) and
  ``pending`` (the reports waiting in the outbox afterwards);
* refused: ``errors``, every problem of the spec's ``SpecError`` in order, each as ``path`` and Python's
  ``message``.

A client agrees when its canonical form and fingerprint are the same bytes, its metrics have the same trust, each
record is refused with the same type, code and fields (or recorded), and a refused spec's errors have the same
paths in the same order, each error at a ``.trust`` path with Python's message up to its ``, got`` (the value after
it is shown in the client's own notation; the rest of an error's text is each client's own). Standard library and
the ldp package only; tests/conformance/test_spec_vectors.py checks the file is fresh.

Run from anywhere: python conformance/spec_vectors.py [--check]"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

root = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(root))  # this checkout's ldp, whatever the environment has installed
from ldp.client import TelemetryClient  # noqa: E402  # after the path is set
from ldp.conformance.refusals import refusal_of  # noqa: E402
from ldp.errors import SpecError  # noqa: E402
from ldp.protocols import builtin_client_protocols, client_protocols  # noqa: E402
from ldp.reports import canonical_json  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402

PATH = root / "conformance" / "specs" / "trust.json"
FORMAT = 1
CLOCK = 1_764_000_000.0  # a fixed clock: the records' window does not matter, only whether they are recorded

TRUST = ("local", "shuffle", "two-aggregator", "two-aggregator+local")
GRR = {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4}, "budget": {"per_report": 1.0}}


def _spec(metrics: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"spec_version": 1, "name": "trust", "budget": {"per_window": 1000, "lifetime": 10000},
            "metrics": metrics, **extra}


def _with(metric: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {**metric, **keys}


def _example(protocol: str) -> dict[str, Any]:
    """A metric of ``protocol`` at its first conformance example, its budget what one report costs."""
    params = client_protocols()[protocol][0].conformance_examples()[0]
    cost = params.privacy_cost
    per_report = cost.epsilon if cost.delta == 0 else {"epsilon": cost.epsilon, "delta": cost.delta}
    return {"protocol": protocol, "params": params.to_dict(), "budget": {"per_report": per_report}}


def _cases() -> list[dict[str, Any]]:
    """Every case: its name, spec document and (accepted specs) the records tried on a device of it."""
    others = sorted(p for p in builtin_client_protocols()  # the protocols Prio3 does not fit
                    if client_protocols()[p][0].conformance_examples()[0].prio3_fit() is None)
    cases: list[dict[str, Any]] = [
        {"name": "trust left out: local, not in the canonical form", "spec": _spec({"m": GRR}),
         "records": [["m", 1]]},
        {"name": "trust local, given: the same canonical form as left out",
         "spec": _spec({"m": _with(GRR, trust="local")}), "records": [["m", 1]]},
        *({"name": f"trust {t}", "spec": _spec({"m": _with(GRR, trust=t)}), "records": [["m", 1]]}
          for t in TRUST[1:]),
        {"name": "each fitting protocol in each mode, beside description, candidates and release",
         "spec": _spec({
             "a_rr": _with(_example("rr"), trust="two-aggregator", description="Dark mode on? (ε = ln 3)",
                           release={"min_reports": 10}),
             "b_grr": _with(GRR, params={"epsilon": 1.0, "domain_size": 3, "labels": ["a", "b", "c"]},
                            trust="two-aggregator+local", description="café"),
             "c_sue": _with(_example("sue"), trust="two-aggregator"),
             "d_oue": _with(_example("oue"), trust="two-aggregator+local", release={"min_z": 2}),
             "e_olh": _with(_example("olh"), trust="shuffle", description="shuffled"),
             "f_cms": _with(_example("cms"), trust="shuffle", candidates="words.txt", description="words",
                            release={"min_reports": 5, "min_z": 1}),
             "g_duchi": _with(_example("duchi"), trust="local"),
             "h_grr": _with(GRR, trust="shuffle", release={"central": {"epsilon": 1.0, "delta": 1e-9}}),
         }, release={"min_reports": 3}, description="every trust model"),
         "records": [["a_rr", True], ["b_grr", "b"], ["b_grr", "not a label"], ["c_sue", 1], ["d_oue", 99],
                     ["e_olh", 3], ["f_cms", "hello"], ["g_duchi", 2.5], ["h_grr", 0]],
         "record_many": [["e_olh", 1], ["h_grr", 2], ["c_sue", 0], ["g_duchi", 1.0]]},
        {"name": "every protocol under shuffle", "spec": _spec({f"p_{p.replace('-', '_')}": _with(_example(p),
                                                                                                   trust="shuffle")
                                                                for p in sorted(builtin_client_protocols())})},
        {"name": "bad trust values", "spec": _spec({f"v{i:02}": _with(GRR, trust=bad) for i, bad in enumerate(
            ["central", "Local", "", "two-aggregator ", "two_aggregator", "local+two-aggregator", "two-aggregator+",
             5, 1.5, None, True, [], {}, ["local"], {"model": "local"}])})},
        {"name": "the two-aggregator modes refused for each protocol Prio3 does not fit",
         "spec": _spec({f"p_{p.replace('-', '_')}": _with(_example(p), trust=TRUST[2 + i % 2])
                        for i, p in enumerate(others)})},
        {"name": "trust checked after the metric's other keys, its fit only for valid params",
         "spec": _spec({
             "a_after": _with(GRR, trust="nope", description=5, release={"min_z": -1}, candidates="/abs"),
             "b_params": _with(_example("olh"), params={"epsilon": -1.0, "domain_size": 4}, trust="two-aggregator"),
             "c_budget": {"protocol": "olh", "params": {"epsilon": 1.0, "domain_size": 4}, "trust": "two-aggregator"},
             "d_both": {"protocol": "olh", "params": {"epsilon": 1.0, "domain_size": 4}, "budget": {"per_report": 0.5},
                        "trust": "two-aggregator+local"},
             "Bad-Name": _with(GRR, trust=0),
             "e_unknown": _with(_example("olh"), params={"epsilon": 1.0, "domain_size": 4, "bogus": 1},
                                trust="two-aggregator"),
         })},
    ]
    return cases


def _record(spec: CollectionSpec, case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        client = TelemetryClient(spec, Path(folder) / "state", clock=lambda: CLOCK)
        records = []
        for metric, value in case.get("records", []):
            item: dict[str, Any] = {"metric": metric, "value": value}
            try:
                client.record(metric, value)
            except (ValueError, TypeError) as exc:
                item["error"] = refusal_of(exc, "values")  # AssertionError for a refusal without a code
            records.append(item)
        if records:
            out["records"] = records
        if "record_many" in case:
            many: dict[str, Any] = {"items": case["record_many"]}
            try:
                client.record_many([tuple(i) for i in case["record_many"]])
            except (ValueError, TypeError) as exc:
                many["error"] = refusal_of(exc, "values")
            out["record_many"] = many
        if records or "record_many" in case:
            out["pending"] = len(client.pending())
        client.close()
    return out


def case_items(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case and what the Python client makes of it: a refused spec's errors (path and message), or an accepted
    one's canonical form, fingerprint, trust per metric and records (:func:`_record`). A refused case has no
    records."""
    out = []
    for case in cases:
        item: dict[str, Any] = {"name": case["name"], "spec": case["spec"]}
        try:
            spec = CollectionSpec.from_dict(case["spec"])
        except SpecError as exc:
            if "records" in case or "record_many" in case:
                raise AssertionError(f"{case['name']}: refused, but has records") from None
            item["errors"] = [dict(zip(("path", "message"), e.split(": ", 1), strict=True)) for e in exc.errors]
            out.append(item)
            continue
        item["canonical"] = canonical_json(spec.to_dict(release=False))
        item["fingerprint"] = spec.fingerprint
        item["trust"] = {name: m.trust for name, m in spec.metrics.items()}
        item.update(_record(spec, case))
        out.append(item)
    return out


def document() -> dict[str, Any]:
    """The fixture: every case and what the Python client makes of it."""
    return {"format": FORMAT, "about": __doc__.split("\n\n")[0].replace("\n", " "), "cases": case_items(_cases())}


def render(doc: dict[str, Any]) -> bytes:
    """The file's bytes: JSON with an indent of one space, ASCII only, a newline at the end."""
    return (json.dumps(doc, indent=1, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def write_or_check(argv: list[str], path: Path, doc: dict[str, Any]) -> int:
    """Write ``doc`` to ``path`` (:func:`render`), or with ``--check`` say whether the file holds it already
    (exit status 1 when not): the command line of each spec fixture's generator."""
    data = render(doc)
    if argv[1:] == ["--check"]:
        if not path.exists() or path.read_bytes() != data:
            print(f"{path} is not what this version writes: run python {argv[0]}", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    print(f"wrote {path.relative_to(root)}")
    return 0


def main(argv: list[str]) -> int:
    return write_or_check(argv, PATH, document())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
