"""RAPPOR with unknown strings (Fanti, Pihur & Erlingsson, "Building a RAPPOR with the Unknown", PETS 2016).
The client. Standard library + mmh3 + bitarray.

A value is a string of at most ``max_length`` (``L``) characters of ``alphabet``. It is padded with the
``pad`` character to exactly ``L`` characters and cut into ``P = L/n`` non-overlapping n-grams; n-gram
``i`` is characters ``[i·n, (i+1)·n)`` (``L`` must be a multiple of ``n``). Refused before any charge: an
empty string, a character outside ``alphabet`` (the pad included), and a string over ``L`` characters
unless ``truncate=True`` (then cut to ``L``): :mod:`ldp.encoders.rappor_ngrams_text`.

One report carries three RAPPOR reports (:mod:`ldp.encoders.rappor`, ``"ldp"`` mode):

* the **full string** under the full-string parameters (``num_bloombits`` ... ``f``): fields ``cohort``,
  ``bits``;
* a **pair of n-grams**: positions ``a < b`` drawn uniformly among the ``P(P−1)/2`` pairs (independent of
  the value, sent in the clear as ``pos_a``, ``pos_b``), and the n-grams at those positions, each reported
  through RAPPOR under the n-gram parameters (``gram_*``) with the client's n-gram cohort
  (``gram_cohort``): fields ``gram_a``, ``gram_b``. The n-gram at position ``i`` is hashed and memoized as
  the string ``f"{i}|{gram}"`` (:func:`gram_value`), so its Bloom filter and its PRR belong to the pair
  (position, n-gram).

Budget. The three reports are independent mechanisms of one value: by sequential composition one report
costs ``ε₁(full) + 2·ε₁(gram)`` (:attr:`RapporNgramsParams.privacy_cost`). With a ledger the client charges
them as three memoized charges in one transaction (:meth:`~ldp.privacy.ledger.BudgetLedger.charge_many`), each
exactly as :class:`~ldp.encoders.rappor.RapporEncoder` charges one report: ``ε₁`` per report, capped at
``ε∞`` per memoized PRR — one PRR per full string, one per (position, n-gram). A client that keeps its
value therefore spends at most ``ε∞(full) + P·ε∞(gram)`` (:attr:`RapporNgramsParams.epsilon_inf`) however
many reports it sends. Through :class:`~ldp.client.TelemetryClient`, which takes one charge per report,
the client charges :meth:`RapporNgramsEncoder.charge_for` instead: the same ``ε₁`` sum per report, memoized
per triple of PRRs and capped at ``ε∞(full) + 2·ε∞(gram)`` per triple (conservative: never below the
exact charges). The sub-encoders' secrets and the cohorts are derived from the client's secret
(HMAC-SHA256 with distinct labels), so the full string's and the n-grams' PRRs are independent.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base import Encoder, ProtocolParams, check_int, client_secret
from ldp.encoders.base_checks import check_bool, refuse_relation, renaming
from ldp.encoders.base_draws import DrawPrimitives, DrawRule
from ldp.encoders.base_fields import PROBABILITY, ParamInfo, Range
from ldp.encoders.rappor import RapporEncoder, RapporParams
from ldp.encoders.rappor_ngrams_text import NgramsText, gram_value, pair_index, pair_of
from ldp.errors import RefusalValueError
from ldp.privacy.accountant import MemoizedCharge, PrivacyCost
from ldp.reports import Field, Report, ReportBatch, ReportError

__all__ = ["RapporNgramsParams", "RapporNgramsEncoder", "gram_value", "pair_of", "pair_index", "MAX_POSITIONS",
           "PLANNER_BLOOM", "PLANNER_FULL_SHARE"]

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
PLANNER_FULL_SHARE = 0.5
"""The share of ε the planner's parameters give the full string (the rest split over the two n-grams)."""
PLANNER_BLOOM = (32, 2, 64)
"""``(k, h, m)`` of both RAPPORs in the planner's parameters (2,048 rows: all 703 a–z 2-grams fit)."""
MAX_POSITIONS = 64
"""Most n-gram positions ``P = L/n`` a configuration may have."""
_SUB_SECRET = b"ldp/rappor-ngrams/v1/"
_GRAM_NAMES = {name: f"gram_{short}" for name, short in (("num_bloombits", "bloombits"), ("num_hashes", "hashes"),
                                                          ("num_cohorts", "cohorts"), ("p", "p"), ("q", "q"),
                                                          ("f", "f"))}
"""The n-gram RAPPOR's parameter names here (its refusals' fields)."""


def _ngrams_draws(s: DrawPrimitives, pr: RapporNgramsParams, value: Any) -> None:
    """The pair of n-grams, then each n-gram's RAPPOR IRR, then the full string's."""
    s.R(pr.pairs)
    for _ in range(2):
        s.BB(pr.gram_p, pr.gram_bloombits)
        s.BB(pr.gram_q, pr.gram_bloombits)
    s.BB(pr.p, pr.num_bloombits)
    s.BB(pr.q, pr.num_bloombits)


@dataclass(frozen=True)
class RapporNgramsParams(NgramsText, ProtocolParams):
    """Full-string RAPPOR (``num_bloombits`` k, ``num_hashes`` h, ``num_cohorts`` m, ``p``, ``q``, ``f``), n-gram
    RAPPOR (``gram_*``), the n-gram length ``n``, the padded length ``max_length`` (L, a multiple of n, in
    characters), the ``alphabet``, the ``pad`` character, and ``truncate`` (cut over-long strings)."""

    num_bloombits: int
    num_hashes: int
    num_cohorts: int
    p: float
    q: float
    f: float
    gram_bloombits: int
    gram_hashes: int
    gram_cohorts: int
    gram_p: float
    gram_q: float
    gram_f: float
    n: int = 2
    max_length: int = 6
    alphabet: str = ALPHABET
    pad: str = "_"
    truncate: bool = False
    protocol: ClassVar[str] = "rappor-ngrams"
    value_class: ClassVar[str | None] = "string"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "num_bloombits": ParamInfo("the number k of bits of the full string's Bloom filter", (Range(min=1),)),
        "num_hashes": ParamInfo("the number h of hash functions of the full string's Bloom filter", (Range(min=1),)),
        "num_cohorts": ParamInfo("the number m of cohorts of the full string's RAPPOR", (Range(min=1, max=65536),)),
        "p": ParamInfo("the full string's RAPPOR: probability that a 0 bit is reported as 1", (PROBABILITY,)),
        "q": ParamInfo("the full string's RAPPOR: probability that a 1 bit is reported as 1", (PROBABILITY,)),
        "f": ParamInfo("the full string's RAPPOR: the permanent response's flip probability",
                       (PROBABILITY, Range(min=0, max=1, max_exclusive=True))),
        "gram_bloombits": ParamInfo("the number of bits of each n-gram's Bloom filter", (Range(min=1),)),
        "gram_hashes": ParamInfo("the number of hash functions of each n-gram's Bloom filter", (Range(min=1),)),
        "gram_cohorts": ParamInfo("the number of cohorts of the n-grams' RAPPOR", (Range(min=1, max=65536),)),
        "gram_p": ParamInfo("the n-grams' RAPPOR: probability that a 0 bit is reported as 1", (PROBABILITY,)),
        "gram_q": ParamInfo("the n-grams' RAPPOR: probability that a 1 bit is reported as 1", (PROBABILITY,)),
        "gram_f": ParamInfo("the n-grams' RAPPOR: the permanent response's flip probability",
                            (PROBABILITY, Range(min=0, max=1, max_exclusive=True))),
        "n": ParamInfo("the length n of the n-grams", (Range(min=1, max=8),)),
        "max_length": ParamInfo("the longest value, in characters (padded to it)", (Range(min=2, max=512),)),
        "alphabet": ParamInfo("the characters a value may hold"),
        "pad": ParamInfo("the character a value is padded with (not in the alphabet)")}
    refusal_rules: ClassVar[Mapping[str, str]] = {
        **RapporParams.refusal_rules, "multiple_of_n": "max_length (L) must be a multiple of n",
        "two_positions": "L/n must be at least 2 (a report pairs two n-gram positions)",
        "positions": "(a limit) the n-gram positions L/n", "pad_not_in_alphabet": "pad must not be in the alphabet"}
    draw_rule = DrawRule("`R(P(P−1)/2)`, then twice `BB(gram_p, gram_k)`, `BB(gram_q, gram_k)`, then `BB(p, k)`, "
                         "`BB(q, k)`", _ngrams_draws)
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (  # three grams, cohorts derived from the secret
        {"num_bloombits": 16, "num_hashes": 2, "num_cohorts": 4, "p": 0.25, "q": 0.75, "f": 0.5, "gram_bloombits": 8,
         "gram_hashes": 2, "gram_cohorts": 4, "gram_p": 0.45, "gram_q": 0.55, "gram_f": 0.75, "n": 2,
         "max_length": 6, "alphabet": "abc", "truncate": True},)

    def __post_init__(self) -> None:
        check_int(self.n, "n (gram length)", 1, 8)
        check_int(self.max_length, "max_length (L, characters)", 2, 8 * MAX_POSITIONS)
        if self.max_length % self.n:
            raise refuse_relation(f"max_length (L={self.max_length}) must be a multiple of n={self.n}",
                                  "multiple_of_n", "max_length", "n")
        if not 2 <= self.positions <= MAX_POSITIONS:
            message = f"positions (L/n) must be in [2, {MAX_POSITIONS}], got {self.positions}"
            if self.positions < 2:
                raise refuse_relation(message, "two_positions", "max_length", "n")
            raise RefusalValueError(message, "param_limit", limit="positions", got=self.positions, max=MAX_POSITIONS)
        self._check_text()
        check_bool(self.truncate, "truncate")
        full = self.full  # each RAPPOR's own checks (the full string's parameters have its names)
        with renaming(_GRAM_NAMES):  # the n-gram RAPPOR's, in their names here
            subs = (full, self.gram)
        for name in ("p", "q", "f", "gram_p", "gram_q", "gram_f"):
            value = getattr(subs[name.startswith("gram_")], name.removeprefix("gram_"))
            object.__setattr__(self, name, value)  # the sub-parameters' checks ran; keep their floats
        _ = self.full.privacy_cost  # both RAPPORs must be private (finite ε₁)
        with renaming(_GRAM_NAMES):
            _ = self.gram.privacy_cost
        self.check_collectable()

    @cached_property
    def full(self) -> RapporParams:
        """The full-string RAPPOR parameters."""
        return RapporParams(self.num_bloombits, self.num_hashes, self.num_cohorts, self.p, self.q, self.f)

    @cached_property
    def gram(self) -> RapporParams:
        """The n-gram RAPPOR parameters (each of the two n-gram reports)."""
        return RapporParams(self.gram_bloombits, self.gram_hashes, self.gram_cohorts, self.gram_p, self.gram_q,
                            self.gram_f)

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """One report: ``ε₁(full) + 2·ε₁(gram)`` (sequential composition of the three RAPPOR reports)."""
        return self.full.privacy_cost + self.gram.privacy_cost.times(2)

    @property
    def epsilon_inf(self) -> float:
        """Any number of reports of one value: ``ε∞(full) + P·ε∞(gram)`` (one PRR per (position, n-gram))."""
        return self.full.epsilon_inf + self.positions * self.gram.epsilon_inf

    @property
    def domain_size(self) -> None:
        """Strings from an open domain: no fixed domain size."""
        return None

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("cohort", "uint", self.num_cohorts), Field("bits", "bits", self.num_bloombits),
                Field("gram_cohort", "uint", self.gram_cohorts), Field("pos_a", "uint", self.positions),
                Field("pos_b", "uint", self.positions), Field("gram_a", "bits", self.gram_bloombits),
                Field("gram_b", "bits", self.gram_bloombits))

    @property
    def aggregate_cells(self) -> int:
        """The full-string RAPPOR aggregate's counters (the n-gram reports are kept as arrays)."""
        return self.full.aggregate_cells

    def validate(self, report: Report) -> None:
        """The schema's checks, then the pair's rule: ``pos_a < pos_b`` (``bad_value``)."""
        super().validate(report)
        a, b = report.payload["pos_a"], report.payload["pos_b"]
        if not a < b:  # type: ignore[operator]  # uint fields: ints, checked by the schema
            raise ReportError("bad_value", f"pos_a must be < pos_b, got {a} and {b}")

    @classmethod
    def examples(cls) -> list[RapporNgramsParams]:
        """2-grams of strings of up to 4 letters of ``abc``: the full string in one cohort (its decoder's exact
        variance has no cohort-size noise), n-grams at a small ε (discovery screens them out quickly: the suite
        simulates hundreds of collections) (conformance suite)."""
        return [cls(16, 2, 1, 0.25, 0.75, 0.5, 8, 2, 1, 0.45, 0.55, 0.75, n=2, max_length=4, alphabet="abc")]

    @classmethod
    def audit_examples(cls) -> list[RapporNgramsParams]:
        """One Bloom bit in each of the three RAPPORs: ``2^12`` paths per input, the smallest enumerable report
        (two bits in any one of them multiply the paths by 16)."""
        return [cls(1, 1, 1, 0.25, 0.75, 0.5, 1, 1, 1, 0.3, 0.7, 0.4, n=1, max_length=2, alphabet="ab")]

    def audit_inputs(self) -> list[str]:
        """Two strings of up to ``max_length`` of the first 4 letters whose full-string filters, and n-gram filters
        at every position, are disjoint (cohort 0) wherever a filter has more than one bit."""
        from itertools import product

        from ldp.encoders.rappor import bloom_bits

        def filters(s: str) -> list[set[int]]:
            parts = [(self.full, s)] * (self.num_bloombits > 1) + [
                (self.gram, gram_value(i, g)) for i, g in enumerate(self.grams(s)) if self.gram_bloombits > 1]
            return [set(bloom_bits(p, v, 0)) for p, v in parts]

        words = ["".join(t) for j in range(1, self.max_length + 1) for t in product(self.alphabet[:4], repeat=j)]
        for x, y in product(words, repeat=2):
            if x != y and all(a.isdisjoint(b) for a, b in zip(filters(x), filters(y), strict=True)):
                return [x, y]
        raise ValueError(f"no two strings with disjoint filters under {self}")

    def audit_epsilon(self) -> float:
        """``ε₁(full) + 2·ε₁(gram)``, less each RAPPOR whose filter has one bit: that bit is set by every value,
        so its reports carry nothing of it."""
        full = self.full.epsilon_one if self.num_bloombits > 1 else 0.0
        return full + (2 * self.gram.epsilon_one if self.gram_bloombits > 1 else 0.0)

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int = 0, *, n: int = 2, max_length: int = 6,
                    alphabet: str = ALPHABET, full_share: float = PLANNER_FULL_SHARE) -> Self:
        """The planner's choice: one report costs ``epsilon`` — ``f = 0`` (one report per client), ``q = 1 − p``,
        so each RAPPOR's ε is its ``ε₁ = 2h·ln(q/p)``; the full string gets ``full_share`` of ε and each n-gram
        half the rest; both Bloom filters :data:`PLANNER_BLOOM` (``domain_size``, the candidates, plays no part)."""
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
        if not 0.0 < full_share < 1.0:
            raise ValueError(f"full_share must be in (0, 1), got {full_share}")
        k, h, m = PLANNER_BLOOM

        def p_of(eps: float) -> float:
            return 1.0 / (1.0 + math.exp(eps / (2 * h)))

        p, gp = p_of(epsilon * full_share), p_of(epsilon * (1.0 - full_share) / 2)
        return cls(k, h, m, p, 1.0 - p, 0.0, k, h, m, gp, 1.0 - gp, 0.0, n=n, max_length=max_length, alphabet=alphabet)

    def horizon_cost(self, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
        """Three memoized PRRs: per distinct value the full string's capped at its ``ε∞`` plus the ``2R`` n-gram
        reports' at ``P·ε∞(gram)`` (one PRR per position); in all, at most ``distinct`` values' worth."""
        one = self.privacy_cost
        full, gram = self.full, self.gram
        per_value = (min(reports * full.epsilon_one, full.epsilon_inf)
                     + min(2 * reports * gram.epsilon_one, self.positions * gram.epsilon_inf))
        total = min(reports * one.epsilon, min(distinct, reports) * per_value)
        return one, PrivacyCost(per_value), PrivacyCost(total)


class _Prepared:
    """A checked value: its text, the full string's RAPPOR preparation, its ``P`` n-grams and the drawn pair."""

    __slots__ = ("full", "grams", "pair", "value")

    def __init__(self, value: str, full: Any, grams: tuple[str, ...], pair: tuple[int, int]) -> None:
        self.value, self.full, self.grams, self.pair = value, full, grams, pair


def _derived(secret: bytes, label: bytes) -> bytes:
    return hmac.new(secret, _SUB_SECRET + label, hashlib.sha256).digest()


class RapporNgramsEncoder(Encoder):
    """One client: a secret (persisted by the app, :meth:`state`) from which the two sub-encoders' secrets
    and, unless given, the two cohorts (full string, n-grams) are derived (HMAC-SHA256, cohort = 64 bits mod m).

    :meth:`prepare` checks the value and draws the position pair (``randbelow``, independent of the value,
    so drawing it before the charge reveals nothing); :meth:`randomize` then draws each n-gram's PRR (when
    not memoized) and IRR, then the full string's. ``prr_rng`` (audits and simulation only) replaces every
    PRR derivation, as in :class:`~ldp.encoders.rappor.RapporEncoder`.

    Charging: :meth:`encode` with a ledger charges the three reports exactly (:meth:`charges`, three
    memoized charges in one transaction). :meth:`charge_for` (one charge, what
    :class:`~ldp.client.TelemetryClient` asks for) is a single memoized charge keyed by the triple of PRRs
    (full string, (a, n-gram), (b, n-gram)): ``ε₁`` per report, capped at ``ε∞(full) + 2·ε∞(gram)`` per
    triple — never below the exact charges, and above them once caps bind (a full-string PRR shared by
    several triples is capped once per triple)."""

    params: RapporNgramsParams
    params_type: ClassVar[type[RapporNgramsParams]] = RapporNgramsParams
    needs_secret: ClassVar[bool] = True

    def __init__(self, params: RapporNgramsParams, *, secret: bytes | str | None = None, cohort: int | None = None,
                 gram_cohort: int | None = None, rng: Any = None, ledger: Any = None, metric: str | None = None,
                 prr_rng: Any = None, simulation: bool = False) -> None:
        super().__init__(params, rng=rng, ledger=ledger, metric=metric, simulation=simulation)
        self._secret = client_secret(secret, self._rng)
        if cohort is None:
            cohort = int.from_bytes(_derived(self._secret, b"cohort")[:8], "big") % params.num_cohorts
        if gram_cohort is None:
            gram_cohort = int.from_bytes(_derived(self._secret, b"gram_cohort")[:8], "big") % params.gram_cohorts
        check_int(gram_cohort, "gram_cohort", 0, params.gram_cohorts - 1)
        self._full = RapporEncoder(params.full, secret=_derived(self._secret, b"full"), cohort=cohort, rng=self._rng,
                                   prr_rng=prr_rng, simulation=simulation)
        self._gram = RapporEncoder(params.gram, secret=_derived(self._secret, b"gram"), cohort=gram_cohort,
                                   rng=self._rng, prr_rng=prr_rng, simulation=simulation)

    @classmethod
    def for_audit(cls, params: Any, source: Any) -> Self:
        """Under a fixed secret, both cohorts and every permanent response drawn from ``source`` (a fresh device
        per path, as :meth:`encode_batch` simulates)."""
        return cls(params, secret=b"audit", cohort=source.randbelow(params.num_cohorts),
                   gram_cohort=source.randbelow(params.gram_cohorts), rng=source, prr_rng=source, simulation=True)

    @property
    def secret(self) -> bytes:
        return self._secret

    @property
    def cohort(self) -> int:
        return self._full.cohort

    @property
    def gram_cohort(self) -> int:
        return self._gram.cohort

    def state(self) -> dict[str, Any]:
        """What the app must persist to keep memoization: the secret (hex) and both cohorts."""
        return {"secret": self._secret.hex(), "cohort": self.cohort, "gram_cohort": self.gram_cohort}

    @classmethod
    def from_state(cls, params: RapporNgramsParams, state: dict[str, Any], **kwargs: Any) -> RapporNgramsEncoder:
        return cls(params, secret=bytes.fromhex(state["secret"]), cohort=state["cohort"],
                   gram_cohort=state["gram_cohort"], **kwargs)

    def prepare(self, value: Any) -> _Prepared:
        """Check and pad ``value`` (bad input raises here, before any draw), then draw the position pair."""
        pr = self.params
        padded = pr.padded(value)
        text = pr.unpad(padded)
        full = self._full.prepare(text)
        pair = pair_of(self._rng.randbelow(pr.pairs), pr.positions)
        return _Prepared(text, full, tuple(padded[i:i + pr.n] for i in range(0, pr.max_length, pr.n)), pair)

    def _gram_prepared(self, prepared: _Prepared, pos: int) -> Any:
        return self._gram.prepare(gram_value(pos, prepared.grams[pos]))

    def ngram_payload(self, prepared: _Prepared) -> dict[str, Any]:
        """The n-gram part of a report: the pair, the n-gram cohort and the two n-grams' RAPPOR bits."""
        a, b = prepared.pair
        payload: dict[str, Any] = {"gram_cohort": self._gram.cohort, "pos_a": a, "pos_b": b}
        for name, pos in (("gram_a", a), ("gram_b", b)):
            payload[name] = self._gram.randomize(self._gram_prepared(prepared, pos)).payload["bits"]
        return payload

    def randomize(self, prepared: _Prepared) -> Report:
        grams = self.ngram_payload(prepared)
        full = self._full.randomize(prepared.full).payload
        return self._report({"cohort": full["cohort"], "bits": full["bits"], **grams})

    def charges(self, prepared: _Prepared) -> list[PrivacyCost | MemoizedCharge]:
        """The three reports' exact charges, each memoized as RAPPOR's (module docstring): the full string's
        and the n-grams' at the pair's two positions."""
        return [self._full.charge_for(prepared.full),
                *(self._gram.charge_for(self._gram_prepared(prepared, pos)) for pos in prepared.pair)]

    def charge_for(self, prepared: _Prepared) -> PrivacyCost | MemoizedCharge:
        """One charge for the report (class docstring): memoized per PRR triple, conservative."""
        parts = self.charges(prepared)
        if not all(isinstance(c, MemoizedCharge) for c in parts):  # f = 0 somewhere: nothing memoized
            return self.params.privacy_cost
        keys = b"".join(c.key for c in parts if isinstance(c, MemoizedCharge))
        cap = PrivacyCost(self.params.full.epsilon_inf + 2 * self.params.gram.epsilon_inf)
        one = self.params.privacy_cost
        return MemoizedCharge(hashlib.sha256(_SUB_SECRET + b"triple" + keys).digest(), first=one, then=one, cap=cap)

    def encode(self, value: Any) -> Report:
        """One report; with a ledger, its three exact charges (:meth:`charges`) and the randomization in one
        transaction (:meth:`~ldp.privacy.ledger.BudgetLedger.charge_many`)."""
        prepared = self.prepare(value)  # invalid input fails here, before any charge
        if self.ledger is None:
            return self.randomize(prepared)
        metric = self.metric
        assert metric is not None  # Encoder.__init__: a ledger needs a metric
        return self.ledger.charge_many([(metric, c) for c in self.charges(prepared)],
                                       lambda _reservations, _db: self.randomize(prepared))

    def encode_batch(self, values: Any, rng: Any = None, *, candidates: Any = None) -> ReportBatch:
        """Vectorized reports of fresh clients for simulation (:func:`ldp.batch.rappor_ngrams.ngrams_encode_batch`)."""
        from ldp.batch.rappor_ngrams import ngrams_encode_batch  # numpy, loaded only here

        return self._batch(ngrams_encode_batch(self.params, values, rng, candidates=candidates))
