"""The conformance suite: the checks every registered protocol passes (in the spirit of scikit-learn's
``check_estimator`` / ``parametrize_with_checks``). Server side (numpy, scipy); the registry does not import it.
A contributor runs ``check_protocol("name")`` (an ``AssertionError`` names the first failure); the test suite
parametrizes over :func:`all_checks` (``@pytest.mark.parametrize("check", all_checks(), ids=str)``, one test per
protocol and check: ``tests/protocols/test_conformance.py``).

**What a protocol provides.** Its params class answers (defaults in :class:`~ldp.encoders.base.ProtocolParams`):
``examples()`` (required: a few small valid parameter sets), ``audit_examples()`` (ones small enough to enumerate;
default the examples), ``audit_inputs()`` (the values to enumerate; default every index of a small domain),
``audit_epsilon()`` (the ε the audit attains; default the claimed one) and ``batch_values(values)`` (what
``encode_batch`` takes for those values; default the same). Its encoder answers ``for_audit(params, source)`` (every
draw from ``source``; memoizing encoders override it); what its simulated users hold is its params'
``population_kind``. Nothing here is keyed by a protocol's name.

**The checks**, each on every example, each able to fail, with fixed seeds:

1. ``params``: frozen dataclass; ``to_dict`` → JSON → :func:`~ldp.protocols.params_from_dict` gives equal params
   of the same type, hash and fingerprint (16 hex digits, SHA-256 of the canonical dict); distinct examples, distinct
   fingerprints.
2. ``privacy``: the exact audit (:func:`ldp.privacy.audit.audit`) of one report of the real ``encode`` over
   ``audit_inputs``: ``max_o ln(max_x Pr[o|x] / min_x Pr[o|x])`` equals ``audit_epsilon()`` (relative 1e-9) and
   never exceeds the claimed ``privacy_cost.epsilon``.
3. ``statistics``: :func:`ldp.simulation.accuracy` (aggregate level, ``Aggregate.simulate``, and per report,
   ``encode_batch``) at the planner's scenario: a pooled test of the squared standardized errors, sized by a pilot
   run so that a variance formula 10 % off fails with probability 0.99 (false alarm ≤ 5e-5 per protocol); per item,
   unbiasedness and the variance in its chi-square band; ``count_variance`` equal to the exact variance and the
   planner's standard error to the simulated one. It lives in :mod:`ldp.protocols.check_statistics`.
4. ``merge``: reports split into two aggregates (one with a rejected report) merge into the statistics of one
   aggregate of all (per-report statistics, whose split may follow the batches: into the sum of the halves');
   ``Aggregate.from_bytes(to_bytes())`` gives the same type and bytes; foreign params refuse to merge.
5. ``batch``: ``encode_batch`` draws follow the exact law of ``encode`` that the audit enumerates (Pearson's
   chi-square goodness of fit, cells of expected count < 5 pooled); ``encode`` reports fold through
   ``Aggregate.add``, as JSON lines and as a batch, its frames and its reports, into identical statistics.
6. ``client``: a collection spec with a metric of the protocol validates and round-trips; a
   :class:`~ldp.client.TelemetryClient` records values into envelopes that :func:`ldp.spec.parse_envelope`
   routes and the aggregate folds.

**The modules.** This one holds the suite (:class:`Check`, :func:`protocol_checks`, :func:`all_checks`,
:func:`check_protocol`) and checks 1, 2, 4, 5 and 6; :mod:`ldp.protocols.check_statistics` check 3;
:mod:`ldp.protocols.check_examples` what every check runs on (the protocol's examples, their audit inputs, users
drawn from them, the memoized exact audit) and the fixed :data:`SEED` and :data:`ALPHA`. Every check and constant
is importable from here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ldp.decoders.base import Aggregate
from ldp.protocols.check_examples import (
    ALPHA as ALPHA,
    SEED as SEED,
    draw_users,
    exact_audit,
    examples_of,
    inputs_of,
)
from ldp.protocols.check_statistics import (
    CANDIDATES as CANDIDATES,
    check_statistics as check_statistics,
)
from ldp.protocols.checklist import Item, checklist, format_checklist
from ldp.protocols.registry import Protocol, get_protocol, params_from_dict, protocols, provisionally_registered
from ldp.reports import Report, fingerprint

__all__ = ["ALPHA", "Check", "all_checks", "as_protocol", "check_protocol", "protocol_checks"]

BATCH_DRAWS = 8_000
"""``encode_batch`` reports per audit example in the goodness-of-fit check, shared by its inputs (at least 400
each)."""


@dataclass(frozen=True)
class Check:
    """One check of one protocol: call it (``AssertionError`` on failure); ``str`` is ``protocol-check``.
    ``target``: the protocol itself, when it is not (yet) registered under ``protocol``; it is registered for the
    duration of the call (:func:`~ldp.protocols.registry.provisionally_registered`)."""

    protocol: str
    name: str
    function: Callable[[Protocol], None]
    target: Protocol | None = field(default=None, compare=False, repr=False)

    def __call__(self) -> None:
        with provisionally_registered(self.target or get_protocol(self.protocol)) as proto:
            self.function(proto)

    def __str__(self) -> str:
        return f"{self.protocol}-{self.name}"



# -- 1. params ----------------------------------------------------------------------------------------------
def _frozen_dataclass(obj: Any) -> bool:
    flags = getattr(type(obj), "__dataclass_params__", None)
    return dataclasses.is_dataclass(obj) and bool(getattr(flags, "frozen", False))


def check_params(proto: Protocol) -> None:
    """Frozen, round trip through the registry's dict form, stable fingerprints."""
    seen: dict[str, Any] = {}
    for p in examples_of(proto) + examples_of(proto, audit_sized=True):
        assert _frozen_dataclass(p), f"{p!r} is not a frozen dataclass"
        name = dataclasses.fields(p)[0].name
        try:
            setattr(p, name, getattr(p, name))
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError(f"{p!r}: setting {name} did not raise FrozenInstanceError")
        doc = json.loads(json.dumps({"protocol": p.protocol, "params": p.to_dict()}))
        again = params_from_dict(doc)
        assert type(again) is type(p) and again == p and hash(again) == hash(p), f"{p!r} round trips to {again!r}"
        fp = p.fingerprint
        assert again.fingerprint == fp == fingerprint(p.protocol, doc["params"]), f"{p!r}: fingerprint changes"
        assert len(fp) == 16 and int(fp, 16) >= 0, f"{p!r}: fingerprint {fp!r} is not 16 hex digits"
        assert seen.setdefault(fp, p) == p, f"{p!r} and {seen[fp]!r} share fingerprint {fp}"
        cost = p.privacy_cost
        assert 0 < cost.epsilon < math.inf, f"{p!r}: privacy_cost {cost} is not a finite ε > 0"


# -- 2. exact privacy audit ---------------------------------------------------------------------------------
def check_privacy(proto: Protocol) -> None:
    """The exact audit attains ``audit_epsilon()`` and never exceeds the claimed ε."""
    for p in examples_of(proto, audit_sized=True):
        claimed, attained = p.privacy_cost.epsilon, p.audit_epsilon()
        inputs, res = exact_audit(proto, p)
        worst = [inputs[i] for i in res.worst_inputs]
        assert res.epsilon <= claimed * (1 + 1e-9) + 1e-12, \
            f"{p!r}: the exact audit finds ε = {res.epsilon!r} between {worst}, above the claimed ε = {claimed!r}"
        assert attained <= claimed * (1 + 1e-12), f"{p!r}: audit_epsilon() {attained} exceeds the claim {claimed}"
        assert res.matches(attained), \
            f"{p!r}: the exact audit finds ε = {res.epsilon!r} (between {worst}), not the stated {attained!r}"


# -- 3. unbiasedness and exact variance: ldp.protocols.check_statistics -------------------------------------


# -- 4. merge and serialization -----------------------------------------------------------------------------
def _reports(proto: Protocol, params: Any, n: int, seed: int) -> list[Report]:
    encoder = proto.encoder_type(params, rng=seed, simulation=True)  # seeded: the same reports every run
    batch = encoder.encode_batch(params.batch_values(draw_users(params, n, seed)), seed)
    return list(batch.reports())


def _state_parts(agg: Aggregate) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of the aggregate's sufficient statistics and of its per-report statistics (``report_layout``: their
    split and sample may depend on how the reports were batched, so only their sums must merge)."""
    extra = agg.report_layout(agg.params)
    state = {k: v.copy() for k, v in agg._state().items()}
    return {k: v for k, v in state.items() if k not in extra}, {k: v for k, v in state.items() if k in extra}


def check_merge(proto: Protocol) -> None:
    """Merge of two halves = one aggregate of all (per-report statistics: the sum of the halves'); bytes round
    trip; foreign params refused."""
    examples = examples_of(proto)
    for k, p in enumerate(examples):
        reports = _reports(proto, p, 500, SEED + k)
        foreign = Report(p.protocol, "0" * 16, reports[0].payload)
        whole, a, b = (proto.aggregate_type(p) for _ in range(3))
        assert whole.add([*reports[:200], foreign, *reports[200:]]) == len(reports), f"{p!r}: reports rejected"
        assert whole.n == len(reports) and whole.rejected == {"wrong_fingerprint": 1}, f"{p!r}: {whole.rejected}"
        a.add([*reports[:200], foreign])
        b.add(reports[200:])
        data = whole.to_bytes()
        (_, extra_a), (_, extra_b) = _state_parts(a), _state_parts(b)
        merged = a.merge(b)
        core, extra = _state_parts(merged)
        want = _state_parts(whole)[0]
        same = core.keys() == want.keys() and all(np.array_equal(core[k], want[k]) for k in core)
        assert merged.n == whole.n and merged.rejected == whole.rejected and same, \
            f"{p!r}: merging two halves differs from one aggregate of all"
        assert all(np.array_equal(extra[k], extra_a[k] + extra_b[k]) for k in extra), \
            f"{p!r}: merging does not add the per-report statistics"
        again = Aggregate.from_bytes(data)
        assert type(again) is type(whole) and again.params == p, f"{p!r}: from_bytes gives {again!r}"
        assert again.to_bytes() == data and again.n == whole.n and again.rejected == whole.rejected, \
            f"{p!r}: to_bytes / from_bytes does not round trip"
        empty = proto.aggregate_type(p).to_bytes()
        assert Aggregate.from_bytes(empty).to_bytes() == empty, f"{p!r}: an empty aggregate does not round trip"
        other = examples[(k + 1) % len(examples)]
        if other != p:
            try:
                proto.aggregate_type(p).merge(proto.aggregate_type(other))
            except (TypeError, ValueError):
                pass
            else:
                raise AssertionError(f"{p!r}: merged an aggregate of other params {other!r}")


# -- 5. batch vs per report ---------------------------------------------------------------------------------
def _goodness_of_fit(law: dict[Any, Fraction], seen: Counter[str], draws: int) -> tuple[float, str]:
    """Pearson's chi-square p-value of ``seen`` under ``law`` (cells expecting < 5 pooled), and an impossible
    output if one was seen."""
    if impossible := next((o for o in seen if o not in law), None):
        return 0.0, f"an output the exact law gives probability 0: {impossible}"
    big = {o for o, pr in law.items() if draws * pr >= 5}
    cells = [(seen[o], draws * float(law[o])) for o in big]
    rest = draws * float(1 - sum((law[o] for o in big), Fraction(0)))
    if rest > 1e-9:
        cells.append((draws - sum(c for c, _ in cells), rest))
    if len(cells) < 2:
        return 1.0, ""
    chi2 = sum((c - e) ** 2 / e for c, e in cells)
    return float(stats.chi2.sf(chi2, len(cells) - 1)), f"chi-square {chi2:.1f} on {len(cells) - 1} df"


def check_batch(proto: Protocol) -> None:
    """``encode_batch`` follows ``encode``'s exact law; ``encode`` reports fold like batches, by every path."""
    audited = examples_of(proto, audit_sized=True)
    total = sum(len(inputs_of(p)) for p in audited)
    gen = np.random.default_rng(SEED)
    for p in audited:
        inputs, res = exact_audit(proto, p)
        encoder, draws = proto.encoder_type(p, rng=SEED, simulation=True), max(400, BATCH_DRAWS // len(inputs))
        for i, x in enumerate(inputs):
            batch = encoder.encode_batch(p.batch_values([x] * draws), gen)
            seen = Counter(r.to_json() for r in batch.reports())
            pvalue, how = _goodness_of_fit(res.distributions[i], seen, draws)
            assert pvalue >= ALPHA / total, (f"{p!r}: encode_batch of {x!r} does not follow encode's exact law "
                                             f"(p = {pvalue:.3g}, {how})")
    for k, p in enumerate(examples_of(proto)):
        users = draw_users(p, 300, SEED + k)
        encoder = proto.encoder_type(p, rng=SEED + k, simulation=True)
        reports = [encoder.encode(v) for v in users]
        batch = encoder.encode_batch(p.batch_values(users), SEED + k)
        folded = []
        for how, items in (("reports", reports), ("JSON lines", [r.to_json() for r in reports]), ("a batch", batch),
                           ("a batch's reports", list(batch.reports())), ("a batch's frames", batch.to_bytes())):
            agg = proto.aggregate_type(p)
            added = (agg.add_bytes(items) if isinstance(items, bytes) else
                     agg.add_json_lines(items) if how == "JSON lines" else agg.add(items))
            assert added == agg.n == len(users) and not agg.rejected, \
                f"{p!r}: {len(users)} reports as {how} folded {added}, rejected {dict(agg.rejected)}"
            folded.append(b"".join(v.tobytes() for v in _state_parts(agg)[0].values()))
        assert folded[0] == folded[1], f"{p!r}: encode's reports fold differently as JSON lines"
        assert folded[2] == folded[3] == folded[4], f"{p!r}: a batch folds differently as reports or frames"


# -- 6. spec and client -------------------------------------------------------------------------------------
def check_client(proto: Protocol) -> None:
    """A spec metric of the protocol validates; the client's envelopes parse, route and fold."""
    from ldp.client import TelemetryClient
    from ldp.spec import CollectionSpec, parse_envelope

    for k, p in enumerate(examples_of(proto)):
        cost = p.privacy_cost
        per_report: Any = cost.epsilon if not cost.delta else {"epsilon": cost.epsilon, "delta": cost.delta}
        doc = {"spec_version": 1, "name": "conformance", "budget": {"per_window": 1e4, "lifetime": 1e5},
               "metrics": {"m": {"protocol": p.protocol, "params": p.to_dict(), "budget": {"per_report": per_report}}}}
        spec = CollectionSpec.from_dict(json.loads(json.dumps(doc)))
        assert spec.params("m") == p, f"{p!r}: the spec's params are {spec.params('m')!r}"
        assert CollectionSpec.from_dict(spec.to_dict()).fingerprint == spec.fingerprint, f"{p!r}: spec round trip"
        users = draw_users(p, 12, SEED + k)
        with tempfile.TemporaryDirectory() as tmp:
            client = TelemetryClient(spec, Path(tmp) / "state.db", rng=SEED + k, simulation=True)
            try:
                client.record("m", users[0])
                client.record_many([("m", v) for v in users[1:]])
                lines = [item.line for item in client.pending()]
            finally:
                client.close()
        try:
            envelopes = [parse_envelope(line, spec) for line in lines]
        except ValueError as exc:  # EnvelopeError: a ReportError, a ValueError
            raise AssertionError(f"{p!r}: the server rejected the client's envelope: {exc}") from None
        assert len(envelopes) == len(users), f"{p!r}: {len(users)} values recorded, {len(envelopes)} pending"
        assert {(e.spec, e.metric) for e in envelopes} == {(spec.fingerprint, "m")}, f"{p!r}: envelopes misrouted"
        agg = proto.aggregate_type(p)
        assert agg.add([e.report for e in envelopes]) == len(users) and not agg.rejected, \
            f"{p!r}: the client's reports are rejected: {dict(agg.rejected)}"


# -- the suite ----------------------------------------------------------------------------------------------
CHECKS: tuple[tuple[str, Callable[[Protocol], None]], ...] = (
    ("params", check_params), ("privacy", check_privacy), ("statistics", check_statistics),
    ("merge", check_merge), ("batch", check_batch), ("client", check_client),
)


ProtocolLike = str | Protocol | type
"""What the suite accepts: a registered name, a :class:`Protocol`, or the protocol's params or encoder class."""


def _serving(base: type, params_type: type, modules: list[str]) -> list[type]:
    """The concrete subclasses of ``base`` defined in ``modules`` or beside them (the other modules of their
    package; each imported) whose ``params_type`` serves ``params_type``."""
    import importlib

    from ldp.lazy import defined_in, subclasses_in

    found: list[Any] = []
    for module in modules:
        found += defined_in(importlib.import_module(module), base)
        if package := module.rpartition(".")[0]:
            found += subclasses_in(package, base)
    return [c for c in dict.fromkeys(found)
            if params_type in (c.params_type if isinstance(c.params_type, tuple) else (c.params_type,))]


def as_protocol(x: ProtocolLike) -> Protocol:
    """The :class:`Protocol` of ``x``: a registered name, a ``Protocol``, or a params or encoder class (registered
    or not: its encoder and aggregate are then looked for among the modules of the package defining it, as the
    registry looks in :mod:`ldp`). ``ValueError`` for an unknown name, ``TypeError`` for anything else."""
    from ldp.encoders.base import Encoder, ProtocolParams

    if isinstance(x, Protocol):
        return x
    if isinstance(x, str):
        return get_protocol(x)
    if not isinstance(x, type) or not issubclass(x, ProtocolParams | Encoder):
        raise TypeError(f"check a protocol by its name, a Protocol, or its params or encoder class; got {x!r}")
    params_type = x.params_type if issubclass(x, Encoder) else x
    for proto in protocols().values():
        if proto.params_type is params_type and (not issubclass(x, Encoder) or proto.encoder_type is x):
            return proto
    modules = [params_type.__module__, *([x.__module__] if issubclass(x, Encoder) else [])]
    encoders = [x] if issubclass(x, Encoder) else _serving(Encoder, params_type, modules)
    if len(encoders) != 1:
        raise ValueError(f"{params_type.__name__}: {len(encoders)} encoders serve it in the package of "
                         f"{params_type.__module__}; pass the encoder class or a Protocol")
    aggregates = _serving(Aggregate, params_type, modules)
    if len(aggregates) > 1:
        raise ValueError(f"{params_type.__name__}: several aggregates serve it ({aggregates}); pass a Protocol")
    return Protocol(params_type.protocol, params_type, encoders[0], aggregates[0] if aggregates else None,
                    "provisional")


def protocol_checks(x: ProtocolLike) -> list[Check]:
    """Every check of protocol ``x`` (a name, a :class:`Protocol`, its params or encoder class), in order
    (``ValueError`` for an unknown name)."""
    proto = as_protocol(x)
    return [Check(proto.name, check, function, proto) for check, function in CHECKS]


def all_checks() -> list[Check]:
    """Every check of every registered protocol (what the test suite parametrizes over)."""
    return [c for name in protocols() for c in protocol_checks(name)]


def check_protocol(x: ProtocolLike, *, show: bool = True) -> list[Item]:
    """Run every check of protocol ``x`` (a registered name, a :class:`Protocol`, or its params or encoder class,
    registered or not: a third party runs the suite before installing its protocol), then list its optional parts
    (:mod:`ldp.protocols.checklist`), printed when ``show``, and returned. The first failing check raises
    ``AssertionError`` naming it, the checklist appended."""
    proto = as_protocol(x)
    failure: AssertionError | None = None
    for check in protocol_checks(proto):
        try:
            if proto.aggregate_type is None:
                raise AssertionError(f"{proto.name} has no aggregate (an Aggregate subclass whose params_type is "
                                     f"{proto.params_type.__name__})")
            check()
        except AssertionError as exc:
            failure = AssertionError(f"{check} failed: {exc}")
            failure.__cause__ = exc
            break
    items = checklist(proto)
    text = format_checklist(proto, items)
    if failure is not None:
        raise AssertionError(f"{failure}\n\n{text}") from failure.__cause__
    if show:
        print(text)
    return items
