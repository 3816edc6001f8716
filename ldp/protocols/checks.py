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
draw from ``source``; memoizing encoders override it). Nothing here is keyed by a protocol's name.

**The checks**, each on every example, each able to fail, with fixed seeds:

1. ``params``: frozen dataclass; ``to_dict`` → JSON → :func:`~ldp.protocols.params_from_dict` gives equal params
   of the same type, hash and fingerprint (16 hex digits, SHA-256 of the canonical dict); distinct examples, distinct
   fingerprints.
2. ``privacy``: the exact audit (:func:`ldp.privacy.audit.audit`) of one report of the real ``encode`` over
   ``audit_inputs``: ``max_o ln(max_x Pr[o|x] / min_x Pr[o|x])`` equals ``audit_epsilon()`` (relative 1e-9) and
   never exceeds the claimed ``privacy_cost.epsilon``.
3. ``statistics``: :func:`ldp.simulation.accuracy` (aggregate level, ``Aggregate.simulate``, and per report,
   ``encode_batch``): per item, ``|mean − truth| ≤ z·σ/√T`` and the sample variance within the two-sided chi-square
   band ``[χ²_{a/2}(T−1), χ²_{1−a/2}(T−1)]/(T−1)`` of the exact variance σ² (``exact_variance``); ``z`` and ``a``
   Bonferroni over the items (:data:`ALPHA`). Params with a ``hash_seed`` are redrawn per collection (their exact
   variance averages over the hash family); their collision noise is heavy-tailed, so their variance band is
   ``z·√((μ₄ − s⁴)/T)``, the large-sample variance of a sample variance (Cramér 1946, ch. 27).
4. ``merge``: reports split into two aggregates (one with a rejected report) merge into the bytes of one aggregate
   of all; ``Aggregate.from_bytes(to_bytes())`` gives the same type and bytes; foreign params refuse to merge.
5. ``batch``: ``encode_batch`` draws follow the exact law of ``encode`` that the audit enumerates (Pearson's
   chi-square goodness of fit, cells of expected count < 5 pooled); ``encode`` reports fold through
   ``Aggregate.add``, as JSON lines and as a batch, its frames and its reports, into identical bytes.
6. ``client``: a collection spec with a metric of the protocol validates and round-trips; a
   :class:`~ldp.client.TelemetryClient` records values into envelopes that :func:`ldp.spec.parse_envelope`
   routes and the aggregate folds.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy import stats

from ldp.decoders.base import Aggregate
from ldp.privacy.audit import AuditResult, audit
from ldp.protocols.registry import Protocol, get_protocol, params_from_dict, protocols
from ldp.reports import Report, fingerprint

__all__ = ["ALPHA", "Check", "all_checks", "check_protocol", "protocol_checks"]

ALPHA = 1e-6
"""Probability that a correct protocol fails one family of statistical tests (an example on one simulation path; the
goodness of fit of a check), Bonferroni within it. The seeds are fixed: a run passes or fails, always the same."""
TRIALS = {"aggregate": (300, 2_000), "per_report": (100, 1_000)}
"""Simulated collections and users per collection, per simulation path."""
CANDIDATES = 3
"""Strings an open-domain protocol is simulated on (:func:`ldp.simulation.default_candidates`)."""
BATCH_DRAWS = 8_000
"""``encode_batch`` reports per audit example in the goodness-of-fit check, shared by its inputs (at least 400
each)."""
SEED = 20_240_229


@dataclass(frozen=True)
class Check:
    """One check of one protocol: call it (``AssertionError`` on failure); ``str`` is ``protocol-check``."""

    protocol: str
    name: str
    function: Callable[[Protocol], None]

    def __call__(self) -> None:
        self.function(get_protocol(self.protocol))

    def __str__(self) -> str:
        return f"{self.protocol}-{self.name}"


def _examples(proto: Protocol, audit_sized: bool = False) -> list[Any]:
    kind = "audit_examples" if audit_sized else "examples"
    try:
        found = getattr(proto.params_type, kind)()
    except NotImplementedError as exc:
        raise AssertionError(f"{proto.name}: {exc}") from None
    assert found and all(isinstance(p, proto.params_type) for p in found), \
        f"{proto.name}: {kind}() must return a non-empty list of {proto.params_type.__name__}"
    return list(found)


def _inputs(params: Any) -> list[Any]:
    """``params.audit_inputs()``, at least two (``AssertionError`` naming the hook otherwise)."""
    try:
        inputs = list(params.audit_inputs())
    except NotImplementedError as exc:
        raise AssertionError(f"{params.protocol}: {exc}") from None
    assert len(inputs) >= 2, f"{params!r}: audit_inputs() must give at least two values"
    return inputs


def _users(params: Any, n: int, seed: int) -> list[Any]:
    """``n`` users' values drawn from ``audit_inputs`` (weights 1, 2, 3, …: not uniform)."""
    values = _inputs(params)
    w = np.arange(1, len(values) + 1, dtype=float)
    return [values[i] for i in np.random.default_rng(seed).choice(len(values), n, p=w / w.sum())]


# -- 1. params ----------------------------------------------------------------------------------------------
def _frozen_dataclass(obj: Any) -> bool:
    flags = getattr(type(obj), "__dataclass_params__", None)
    return dataclasses.is_dataclass(obj) and bool(getattr(flags, "frozen", False))


def check_params(proto: Protocol) -> None:
    """Frozen, round trip through the registry's dict form, stable fingerprints."""
    seen: dict[str, Any] = {}
    for p in _examples(proto) + _examples(proto, audit_sized=True):
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
@lru_cache(maxsize=64)
def _audit(proto: Protocol, params: Any) -> tuple[list[Any], AuditResult]:
    """The exact audit of one report over ``audit_inputs`` (by index: inputs need not be hashable)."""
    inputs = _inputs(params)

    def run(i: int, src: Any) -> str:
        return proto.encoder_type.for_audit(params, src).encode(inputs[i]).to_json()

    return inputs, audit(range(len(inputs)), run)


def check_privacy(proto: Protocol) -> None:
    """The exact audit attains ``audit_epsilon()`` and never exceeds the claimed ε."""
    for p in _examples(proto, audit_sized=True):
        claimed, attained = p.privacy_cost.epsilon, p.audit_epsilon()
        inputs, res = _audit(proto, p)
        worst = [inputs[i] for i in res.worst_inputs]
        assert res.epsilon <= claimed * (1 + 1e-9) + 1e-12, \
            f"{p!r}: the exact audit finds ε = {res.epsilon!r} between {worst}, above the claimed ε = {claimed!r}"
        assert attained <= claimed * (1 + 1e-12), f"{p!r}: audit_epsilon() {attained} exceeds the claim {claimed}"
        assert res.matches(attained), \
            f"{p!r}: the exact audit finds ε = {res.epsilon!r} (between {worst}), not the stated {attained!r}"


# -- 3. unbiasedness and exact variance ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Moments:
    """Per item: truth, mean and sample variance of ``trials`` estimates, exact variance; the fourth central
    moment when the estimates may be far from normal (else ``None``: the chi-square band applies)."""

    label: str
    truth: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    exact: np.ndarray
    trials: int
    fourth: np.ndarray | None = None


def _moments(label: str, res: Any) -> Iterator[_Moments]:
    """The moments of an accuracy result: counts, a mean, or one of either per attribute (``multi``)."""
    if hasattr(res, "attributes"):
        for name, part in res.attributes.items():
            yield from _moments(f"{label} attribute {name}", part)
    elif hasattr(res, "true_mean"):
        yield _Moments(label, np.array([res.true_mean]), np.array([res.mean_estimate]),
                       np.array([res.empirical_se**2]), np.array([res.exact_se**2]), res.trials)
    else:
        yield _Moments(label, np.asarray(res.true_count, float), res.mean_estimate, res.empirical_sd**2,
                       res.theoretical_sd**2, res.trials)


def _population(params: Any) -> Any:
    """What the simulated users hold: numbers in ``[low, high]`` (a mean protocol), one of ``domain_size``
    values, every attribute's default (several ``components``), or one of :data:`CANDIDATES` strings."""
    from ldp.simulation.collect import zipf
    from ldp.simulation.numeric import is_mean_protocol, uniform_values

    if is_mean_protocol(params):
        return uniform_values(params.low, params.high)
    if params.domain_size is not None:
        return zipf(params.domain_size)
    if getattr(params, "components", None) is not None:
        return None
    return zipf(CANDIDATES)


def _simulated(params: Any, method: str, trials: int, n: int, seed: int) -> Iterator[_Moments]:
    from ldp.simulation.collect import accuracy, from_counts

    label = f"{params!r} ({method}, {trials} collections of {n})"
    pop = _population(params)
    if "hash_seed" not in {f.name for f in dataclasses.fields(params)}:
        yield from _moments(label, accuracy(params, pop, n, trials=trials, method=method, rng=seed))
        return
    gen = np.random.default_rng(seed)
    fixed = from_counts(pop.counts(n, gen))
    seeds = gen.choice(1 << 24, trials, replace=False) << 6  # hash families far apart: no function shared
    runs = [accuracy(dataclasses.replace(params, hash_seed=int(s)), fixed, n, trials=1, method=method, rng=gen)
            for s in seeds]
    est = np.array([r.mean_estimate for r in runs])
    dev = est - est.mean(axis=0)
    yield _Moments(label + ", a hash_seed per collection", np.asarray(runs[0].true_count, float), est.mean(axis=0),
                   est.var(axis=0, ddof=1), runs[0].theoretical_sd**2, trials, (dev**4).mean(axis=0))


def _check_moments(m: _Moments, tests: int) -> None:
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * tests))
    a = ALPHA / tests
    t = m.trials
    lo, hi = stats.chi2.ppf(a / 2, t - 1) / (t - 1), stats.chi2.isf(a / 2, t - 1) / (t - 1)
    for i in range(m.truth.size):
        exact, truth, mean, var = m.exact[i], m.truth[i], m.mean[i], m.var[i]
        assert math.isfinite(exact) and exact > 0, f"{m.label}: item {i}: exact variance {exact} is not > 0"
        se = math.sqrt(exact / t)
        assert abs(mean - truth) <= z * se, (f"{m.label}: item {i}: the mean estimate {mean:.6g} is "
                                             f"{(mean - truth) / se:+.2f} standard errors from the truth {truth:.6g} "
                                             f"(allowed ±{z:.2f})")
        if m.fourth is None:
            assert lo <= var / exact <= hi, (f"{m.label}: item {i}: empirical / exact variance = {var / exact:.4f}, "
                                             f"outside the chi-square band [{lo:.4f}, {hi:.4f}]")
        else:
            se_var = math.sqrt(max(m.fourth[i] - var**2, 0.0) / t)
            assert abs(var - exact) <= z * se_var, (f"{m.label}: item {i}: empirical variance {var:.6g} is "
                                                    f"{(var - exact) / se_var:+.2f} standard errors from the exact "
                                                    f"{exact:.6g} (allowed ±{z:.2f})")


def check_statistics(proto: Protocol) -> None:
    """Estimates unbiased, their variance the exact formula's, along both simulation paths."""
    for k, p in enumerate(_examples(proto)):
        for j, (method, (trials, n)) in enumerate(TRIALS.items()):
            found = list(_simulated(p, method, trials, n, SEED + 10 * k + j))
            tests = 2 * sum(m.truth.size for m in found)
            for m in found:
                _check_moments(m, tests)


# -- 4. merge and serialization -----------------------------------------------------------------------------
def _reports(proto: Protocol, params: Any, n: int, seed: int) -> list[Report]:
    encoder = proto.encoder_type(params, rng=seed, simulation=True)  # seeded: the same reports every run
    batch = encoder.encode_batch(params.batch_values(_users(params, n, seed)), seed)
    return list(batch.reports())


def check_merge(proto: Protocol) -> None:
    """Merge of two halves = one aggregate of all; bytes round trip; foreign params refused."""
    examples = _examples(proto)
    for k, p in enumerate(examples):
        reports = _reports(proto, p, 500, SEED + k)
        foreign = Report(p.protocol, "0" * 16, reports[0].payload)
        whole, a, b = (proto.aggregate_type(p) for _ in range(3))
        assert whole.add([*reports[:200], foreign, *reports[200:]]) == len(reports), f"{p!r}: reports rejected"
        assert whole.n == len(reports) and whole.rejected == {"wrong_fingerprint": 1}, f"{p!r}: {whole.rejected}"
        a.add([*reports[:200], foreign])
        b.add(reports[200:])
        data = whole.to_bytes()
        assert a.merge(b).to_bytes() == data, f"{p!r}: merging two halves differs from one aggregate of all"
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
    audited = _examples(proto, audit_sized=True)
    total = sum(len(_inputs(p)) for p in audited)
    gen = np.random.default_rng(SEED)
    for p in audited:
        inputs, res = _audit(proto, p)
        encoder, draws = proto.encoder_type(p, rng=SEED, simulation=True), max(400, BATCH_DRAWS // len(inputs))
        for i, x in enumerate(inputs):
            batch = encoder.encode_batch(p.batch_values([x] * draws), gen)
            seen = Counter(r.to_json() for r in batch.reports())
            pvalue, how = _goodness_of_fit(res.distributions[i], seen, draws)
            assert pvalue >= ALPHA / total, (f"{p!r}: encode_batch of {x!r} does not follow encode's exact law "
                                             f"(p = {pvalue:.3g}, {how})")
    for k, p in enumerate(_examples(proto)):
        users = _users(p, 300, SEED + k)
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
            folded.append(agg.to_bytes())
        assert folded[0] == folded[1], f"{p!r}: encode's reports fold differently as JSON lines"
        assert folded[2] == folded[3] == folded[4], f"{p!r}: a batch folds differently as reports or frames"


# -- 6. spec and client -------------------------------------------------------------------------------------
def check_client(proto: Protocol) -> None:
    """A spec metric of the protocol validates; the client's envelopes parse, route and fold."""
    from ldp.client import TelemetryClient
    from ldp.spec import CollectionSpec, parse_envelope

    for k, p in enumerate(_examples(proto)):
        cost = p.privacy_cost
        per_report: Any = cost.epsilon if not cost.delta else {"epsilon": cost.epsilon, "delta": cost.delta}
        doc = {"spec_version": 1, "name": "conformance", "budget": {"per_window": 1e4, "lifetime": 1e5},
               "metrics": {"m": {"protocol": p.protocol, "params": p.to_dict(), "budget": {"per_report": per_report}}}}
        spec = CollectionSpec.from_dict(json.loads(json.dumps(doc)))
        assert spec.params("m") == p, f"{p!r}: the spec's params are {spec.params('m')!r}"
        assert CollectionSpec.from_dict(spec.to_dict()).fingerprint == spec.fingerprint, f"{p!r}: spec round trip"
        users = _users(p, 12, SEED + k)
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


def protocol_checks(name: str) -> list[Check]:
    """Every check of protocol ``name``, in order (``ValueError`` for an unknown name)."""
    get_protocol(name)
    return [Check(name, check, function) for check, function in CHECKS]


def all_checks() -> list[Check]:
    """Every check of every registered protocol (what the test suite parametrizes over)."""
    return [c for name in protocols() for c in protocol_checks(name)]


def check_protocol(name: str) -> None:
    """Run every check of protocol ``name``; the first failure raises ``AssertionError`` naming it."""
    for check in protocol_checks(name):
        try:
            check()
        except AssertionError as exc:
            raise AssertionError(f"{check} failed: {exc}") from exc
