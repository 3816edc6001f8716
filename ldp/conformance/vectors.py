"""The conformance vectors: what the Python client does, byte for byte, for clients in other languages to match.

One JSON file per client protocol (``<protocol>.json``) plus ``primitives.json`` (draw laws, hashes, number and
string formats). A protocol file holds a collection spec with one metric per parameter set (its canonical form and
fingerprints), then **cases**: one device (its secret and cohort where the protocol has them) reporting one to three
values in a row, the exact ``randbits`` stream the encoder consumed (``[k, hex]`` per call, in order), the envelope
line of each report and what the ledger charges for it; and **refusals**: parameters and values the client must
refuse, with the exception type, the refusal's code and fields (:mod:`ldp.conformance.refusals`) and Python's text.
The layout and the normative draw order are in docs/conformance.md.

Standard library only (with the client's mmh3 and bitarray): ``python -m ldp.conformance generate DIR`` writes the
files, ``check DIR`` says whether they are what this version generates.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ldp.client.state import metric_secret
from ldp.conformance.cases import (
    BAD_FIELD_VALUES,
    WINDOW,
    float_edge_groups,
    float_edge_params,
    trial_values,
    value_key,
)
from ldp.conformance.primitives import primitives
from ldp.conformance.refusals import refusal_of
from ldp.encoders.base import Encoder, ProtocolParams
from ldp.hashing import value_bytes
from ldp.privacy.cost import ChangeCharge, Charge, MemoizedCharge, PrivacyCost
from ldp.protocols import builtin_client_protocols, client_protocols
from ldp.randomness import RecordingSource, SeededRandomSource
from ldp.reports import canonical_json
from ldp.spec import CollectionSpec, Envelope

__all__ = ["FORMAT", "GENERATE", "protocol_vectors", "all_vectors", "render", "write", "check"]

GENERATE = "python -m ldp.conformance generate conformance/vectors"
"""The command that writes the repository's vector files (run from its root)."""

FORMAT = 1
"""The layout version of the vector files (docs/conformance.md)."""

_BUDGET = 1e6  # the conformance collection's caps: far above any case (the ledger is not what they test)


def _seeded(label: str) -> random.Random:
    """A stream fixed by ``label`` (``random.Random`` seeds a ``str`` through SHA-512: stable across versions)."""
    return random.Random(f"ldp-conformance/{label}")


def _device_secret(label: str) -> bytes:
    return hashlib.sha256(f"ldp-conformance/device/{label}".encode()).digest()


def _cost(c: PrivacyCost) -> dict[str, float]:
    return {"epsilon": c.epsilon, "delta": c.delta}


def _charge(charge: Charge) -> dict[str, Any]:
    if isinstance(charge, ChangeCharge):
        return {"change_stream": charge.stream.hex(), "change_value": charge.value.hex(), "cost": _cost(charge.cost)}
    if isinstance(charge, MemoizedCharge):
        return {"memo_key": charge.key.hex(), "first": _cost(charge.first), "then": _cost(charge.then),
                "cap": _cost(charge.cap)}
    return _cost(charge)


def _attempt(make: Callable[[], Any], of: str, rules: Mapping[str, str]) -> tuple[Any, dict[str, Any] | None]:
    """``make()``, or the vectors' ``error`` of its refusal (``of``: ``"params"`` or ``"values"``; ``rules``: the
    protocol's declared rule ids); a refusal without a code, or breaking the vocabulary, stops the generator."""
    try:
        return make(), None
    except (ValueError, TypeError) as exc:
        return None, refusal_of(exc, of, rules)


def _inputs(params: ProtocolParams) -> list[Any]:
    try:
        inputs = list(params.audit_inputs())
    except NotImplementedError:
        inputs = []
    return inputs[:4] if any(isinstance(v, dict) for v in inputs) else inputs


def _values(params: ProtocolParams) -> list[Any]:
    """The values a parameter set's cases report (accepted) or its refusals try (refused)."""
    return trial_values(params, _inputs(params))


def _float_edges(params: ProtocolParams, tried: list[Any]) -> list[list[Any]]:
    """The float edges of a parameter set (:func:`~ldp.conformance.cases.float_edge_groups`) not among ``tried``
    (the values its other cases and refusals hold), each once, in groups."""
    seen = {value_key(v) for v in tried}
    out = []
    for group in float_edge_groups(params, _inputs(params)):
        fresh = []
        for value in group:
            if (key := value_key(value)) not in seen:
                seen.add(key)
                fresh.append(value)
        if fresh:
            out.append(fresh)
    return out


def _trace(params: ProtocolParams, value: Any) -> dict[str, Any]:
    """The bytes a string value is hashed as (docs/hashing.md), to find where another client goes astray."""
    if params.domain_size is None and isinstance(value, str):
        try:
            return {"value_bytes": value_bytes(value).hex()}
        except ValueError:  # a lone surrogate, taken by a protocol that replaces characters outside its alphabet
            return {}
    return {}


def _case(protocol: str, spec: CollectionSpec, metric: str, values: list[Any], label: str) -> dict[str, Any]:
    """One device reporting ``values`` in a row: its inputs, the recorded stream and the envelope lines."""
    params = spec.params(metric)
    encoder_type = client_protocols()[protocol][1]
    rnd = _seeded(label)
    source = RecordingSource(SeededRandomSource(rnd))
    extra: dict[str, Any] = {}
    case: dict[str, Any] = {"metric": metric, "window": WINDOW}
    if cohorts := encoder_type.assigned_cohorts(params):
        extra["cohort"] = case["cohort"] = rnd.randrange(cohorts)
    if encoder_type.needs_secret:
        device = _device_secret(label)
        case["device_secret"] = device.hex()
        extra["secret"] = metric_secret(device, metric)
        case["metric_secret"] = extra["secret"].hex()
    encoder = encoder_type(params, rng=source, simulation=True, **extra)
    if source.draws:
        raise AssertionError(f"{protocol}: the encoder drew {len(source.draws)} times while being made")
    reports = []
    for value in values:
        prepared = encoder.prepare(value)
        charge = encoder.charge_for(prepared)
        line = Envelope(spec.fingerprint, metric, WINDOW, encoder.randomize(prepared)).to_json()
        reports.append({"value": value, **({"trace": t} if (t := _trace(params, value)) else {}),
                        "charge": _charge(charge), "line": line})
    case["draws"] = [[k, format(v, "x")] for k, v in source.draws]
    case["reports"] = reports
    return case


def _param_refusals(params_type: type[ProtocolParams], base: dict[str, Any]) -> list[dict[str, Any]]:
    """Each field of ``base`` set to each of :data:`BAD_FIELD_VALUES`, each field left out, and an unknown field:
    what the parameters check says (the fingerprint when it accepts)."""
    trials = [{k: v for k, v in base.items() if k != name} for name in base]
    trials += [{**base, name: bad} for name in base for bad in BAD_FIELD_VALUES if base[name] != bad]
    trials.append({**base, "bogus": 1})
    out, rules = [], params_type.declared_rules()
    for trial in trials:
        params, error = _attempt(lambda t=trial: params_type.from_dict(t), "params", rules)  # type: ignore[misc]
        out.append({"params": trial, **({"error": error} if error else {"fingerprint": params.fingerprint})})
    return out


def protocol_vectors(protocol: str) -> dict[str, Any]:
    """The vector document of one client protocol."""
    params_type, encoder_type = client_protocols()[protocol]
    param_sets = [*params_type.conformance_examples(), *float_edge_params(params_type)]
    metrics = {f"m{i}": {"protocol": protocol, "params": p.to_dict(), "budget": {"per_report": p.privacy_cost.epsilon
               if p.privacy_cost.delta == 0 else _cost(p.privacy_cost)}} for i, p in enumerate(param_sets)}
    spec = CollectionSpec.from_dict({"spec_version": 1, "name": f"conformance.{protocol}", "window_seconds": 86400,
                                     "budget": {"per_window": _BUDGET, "lifetime": _BUDGET}, "metrics": metrics})
    params_out, cases, value_refusals, rules = [], [], [], params_type.declared_rules()
    for i, params in enumerate(param_sets):
        metric = f"m{i}"
        params_out.append({"metric": metric, "params": params.to_dict(),
                           "canonical": canonical_json({"protocol": protocol, "params": params.to_dict()}),
                           "fingerprint": params.fingerprint, "privacy_cost": _cost(params.privacy_cost)})
        probe = encoder_type(params, rng=0, simulation=True, **_probe_extra(encoder_type, params))
        accepted = []
        tried = _values(params)
        for value in tried:
            _, error = _attempt(lambda v=value, enc=probe: enc.prepare(v), "values", rules)  # type: ignore[misc]
            if error:
                value_refusals.append({"metric": metric, "value": value, "error": error})
            else:
                accepted.append(value)
        for j, value in enumerate(accepted):
            cases.append(_case(protocol, spec, metric, [value], f"{protocol}/{metric}/{j}"))
        if encoder_type.needs_secret and len(accepted) >= 2:  # memoized: a value again, after another one
            seq = [accepted[0], accepted[1], accepted[0]]
            cases.append(_case(protocol, spec, metric, seq, f"{protocol}/{metric}/seq"))
        elif len(accepted) >= 2:
            cases.append(_case(protocol, spec, metric, [accepted[-1], accepted[0]], f"{protocol}/{metric}/pair"))
        for j, group in enumerate(_float_edges(params, tried)):  # a protocol of numbers: one device per group
            edge_accepted = []
            for value in group:
                _, error = _attempt(lambda v=value, enc=probe: enc.prepare(v), "values", rules)  # type: ignore[misc]
                if error:
                    value_refusals.append({"metric": metric, "value": value, "error": error})
                else:
                    edge_accepted.append(value)
            if edge_accepted:
                cases.append(_case(protocol, spec, metric, edge_accepted, f"{protocol}/{metric}/edge/{j}"))
    audits = [{"params": p.to_dict(), "inputs": p.audit_inputs(), "epsilon": p.audit_epsilon()}
              for p in params_type.audit_examples()]
    return {"format": FORMAT, "protocol": protocol, "spec": spec.to_dict(), "spec_canonical": canonical_json(
            spec.to_dict(release=False)), "spec_fingerprint": spec.fingerprint, "params": params_out,
            "cases": cases, "refusals": {"params": _param_refusals(params_type, param_sets[0].to_dict()),
                                         "values": value_refusals}, "audits": audits}


def _probe_extra(encoder_type: type[Encoder], params: ProtocolParams) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if encoder_type.assigned_cohorts(params):
        extra["cohort"] = 0
    if encoder_type.needs_secret:
        extra["secret"] = b"probe"
    return extra


def all_vectors() -> dict[str, dict[str, Any]]:
    """Every vector file's document, by file name: the built-in protocols' (another distribution's protocol gets
    its own with :func:`protocol_vectors`)."""
    out = {"primitives.json": primitives()}
    for protocol in sorted(builtin_client_protocols()):
        out[f"{protocol}.json"] = protocol_vectors(protocol)
    return out


def render(doc: dict[str, Any]) -> bytes:
    """A vector file's bytes: JSON, one top-level key per line group, ASCII only, a newline at the end."""
    return (json.dumps(doc, indent=1, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def write(directory: str | Path) -> list[Path]:
    """Write every vector file into ``directory`` (made if needed); return their paths."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, doc in all_vectors().items():
        path = folder / name
        path.write_bytes(render(doc))
        paths.append(path)
    return paths


def check(directory: str | Path) -> list[str]:
    """The vector files of ``directory`` that differ from what this version generates (missing, changed or
    extra), as messages; empty when all agree."""
    folder = Path(directory)
    problems = []
    expected = all_vectors()
    for name, doc in expected.items():
        path = folder / name
        if not path.exists():
            problems.append(f"{name}: missing")
        elif path.read_bytes() != render(doc):
            problems.append(f"{name}: differs from what this version generates")
    problems += [f"{p.name}: not generated by this version" for p in sorted(folder.glob("*.json"))
                 if p.name not in expected]
    return problems
