"""RAPPOR (Erlingsson, Pihur & Korolova, CCS 2014): the client. Standard library + mmh3 + bitarray.

A client holds a secret (made with the CSPRNG, kept on the device, never sent) and a cohort
(uniform in ``[0, m)``, kept, sent with every report). To report a string ``v``:

1. **Bloom filter** ``B``: ``k`` bits, bits ``h_j(v)`` set for the ``h`` hash functions of the
   client's cohort (:func:`bloom_bits`).
2. **Permanent randomized response** (PRR) ``B'``, memoized per value: each bit is 1 with
   probability f/2, 0 with probability f/2, and ``B_i`` with probability 1 − f. Its randomness is
   derived from the secret and the value (HMAC-SHA256), so the same value always gives the same
   ``B'`` and nothing per value is stored.
3. **Instantaneous randomized response** (IRR) ``S``, fresh for every report:
   ``Pr[S_i = 1] = q`` if ``B'_i = 1`` and ``p`` if ``B'_i = 0``.

Per report, ``Pr[S_i = 1 | B_i = 1] = q* = f(p+q)/2 + (1−f)q`` and ``Pr[S_i = 1 | B_i = 0] = p* =
f(p+q)/2 + (1−f)p``. Privacy (paper §3; google/rappor ``ComputePrivacyGuarantees``):
``ε₁ = h·|ln(q*(1−p*)/(p*(1−q*)))|`` for one report and ``ε∞ = 2h·ln((1−f/2)/(f/2))`` for any
number of reports of one value (an observer learns at most ``B'``): :class:`RapporPrivacy`
(:mod:`ldp.encoders.rappor_privacy`).

Two modes (a parameter, so it is part of the fingerprint):

* ``"ldp"`` (default): Bloom bit ``j`` = MurmurHash3 (:mod:`ldp.hashing`) of
  ``uint32_BE(cohort) || value`` with seed ``j``, mod ``k`` (any ``k``); the PRR draws from
  :class:`~ldp.randomness.KeyedRandomSource` keyed by the secret, with exact probabilities.
* ``"google"``: bit for bit Google's reference Python client (rappor-reference.md §2.1): bit ``j`` =
  byte ``j`` of ``MD5(uint32_BE(cohort) || value)`` mod ``k`` (``h <= 16``); PRR bytes from
  ``HMAC-SHA256(secret, uint32_BE(B))`` (``k <= 32``), which quantizes f to ``ceil(128 f)/128``
  (``f_effective``; every formula here uses it).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base import (
    BoundedMemo,
    Encoder,
    ProtocolParams,
    check_int,
    check_string_value,
    client_secret,
)
from ldp.encoders.base_checks import check_choice, refuse_range, refuse_relation
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.base_fields import PROBABILITY, ParamInfo, Range
from ldp.encoders.rappor_privacy import RapporPrivacy
from ldp.hashing import buckets, md5_buckets, namespaced, value_bytes
from ldp.privacy.accountant import MemoizedCharge, PrivacyCost
from ldp.randomness import KeyedRandomSource, RandomSource, check_resolvable
from ldp.reports import Field, Report, ReportBatch, bits_from_int

__all__ = ["RapporParams", "RapporEncoder", "RapporPrivacy", "bloom_bits", "bloom_filter", "google_prr_masks", "MODES",
           "CHARGING", "PLANNER_BLOOM"]

MODES = ("ldp", "google")
PLANNER_BLOOM = (64, 2, 32)
_CONFORMANCE = {"num_bloombits": 32, "num_hashes": 2, "num_cohorts": 64, "p": 0.5, "q": 0.75, "f": 0.5}
"""``(num_bloombits, num_hashes, num_cohorts)`` of the planner's RAPPOR (:meth:`RapporParams.for_epsilon`)."""
CHARGING = ("min", "upfront")
_PRR_DOMAIN = b"ldp/rappor/prr/v1\x00"
_MEMO_DOMAIN = b"ldp/rappor/memo/v1\x00"
MEMO_ENTRIES = 256
"""Values whose Bloom filter, PRR and memo key an encoder keeps (least recently used evicted)."""
MEMO_MAX_VALUE = 512
"""Longest value (characters of a str, bytes of bytes) whose PRR is kept in memory."""
MAX_COHORTS = 1 << 16


# -- hashing: the Bloom filter of a value in a cohort, and Google's PRR masks ------------------------------------
def bloom_bits(params: RapporParams, value: str | bytes, cohort: int) -> tuple[int, ...]:
    """The ``h`` Bloom bit indices of ``value`` in ``cohort`` (repeats when hashes collide)."""
    data = namespaced(cohort, value)
    if params.mode == "google":
        return tuple(md5_buckets(data, params.num_bloombits, params.num_hashes))
    return tuple(buckets(data, params.num_bloombits, range(params.num_hashes)))


def bloom_filter(params: RapporParams, value: str | bytes, cohort: int) -> int:
    """The Bloom filter as an int: bit ``i`` set iff some hash of ``value`` in ``cohort`` is ``i``."""
    bloom = 0
    for i in bloom_bits(params, value, cohort):
        bloom |= 1 << i
    return bloom


def google_prr_masks(secret: bytes, message: bytes, f: float, k: int) -> tuple[int, int]:
    """Google's ``get_prr_masks``: ``D = HMAC-SHA256(secret, message)``; for bit ``i < k``, the fair
    coin is bit 0 of ``D[i]`` and the f-mask is ``(D[i] >> 1) < 128 f`` (so f is effectively
    ``ceil(128 f)/128``). Returns ``(uniform, fmask)`` as ints (bit i = Bloom index i)."""
    if k > 32:
        raise refuse_range(f"Google's PRR draws one HMAC-SHA256 byte per bit: k <= 32, got {k}", k, "num_bloombits",
                           max=32)
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    threshold = f * 128  # an exact float; compared with integers 0..127 as Google does
    uniform = sum((digest[i] & 1) << i for i in range(k))
    fmask = sum(((digest[i] >> 1) < threshold) << i for i in range(k))
    return uniform, fmask


@dataclass(frozen=True)
class RapporParams(RapporPrivacy, ProtocolParams):
    """RAPPOR parameters: Bloom filter (k bits, h hashes), m cohorts, IRR p/q, PRR f, and the mode."""

    num_bloombits: int
    num_hashes: int
    num_cohorts: int
    p: float
    q: float
    f: float
    mode: str = "ldp"
    protocol: ClassVar[str] = "rappor"
    value_class: ClassVar[str | None] = "string"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "num_bloombits": ParamInfo("the number k of bits of the Bloom filter", (Range(min=1),)),
        "num_hashes": ParamInfo("the number h of hash functions of the Bloom filter", (Range(min=1),)),
        "num_cohorts": ParamInfo("the number m of cohorts (each hashes with its own functions)",
                                 (Range(min=1, max=65536),)),
        "p": ParamInfo("the probability that a 0 bit of the permanent response is reported as 1", (PROBABILITY,)),
        "q": ParamInfo("the probability that a 1 bit of the permanent response is reported as 1", (PROBABILITY,)),
        "f": ParamInfo("the permanent response's flip probability f (each bit kept w.p. 1 − f)",
                       (PROBABILITY, Range(min=0, max=1, max_exclusive=True))),
        "mode": ParamInfo("ldp (this package's client) or google (Google's client, byte for byte)", choices=MODES)}
    refusal_rules: ClassVar[Mapping[str, str]] = {
        "h<=k": "num_hashes (h) <= num_bloombits (k)", "p<q": "p < q (a 1 in the PRR is reported more often)",
        "finite_epsilon": "p, q and f give a finite ε₁ (p* > 0 and q* < 1)",
        "google_client": "mode 'google' encodes with k <= 32 and h <= 16 only (Google's client)"}
    draw_rule = DrawRule("`BB(p, k)`, `BB(q, k)`",
                         lambda s, pr, v: (s.BB(pr.p, pr.num_bloombits), s.BB(pr.q, pr.num_bloombits)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (_CONFORMANCE, {**_CONFORMANCE, "mode": "google"},
        {**_CONFORMANCE, "num_bloombits": 128, "num_hashes": 4, "f": 0.0})

    def __post_init__(self) -> None:
        check_int(self.num_bloombits, "num_bloombits (k)", 1)
        check_int(self.num_hashes, "num_hashes (h)", 1)
        check_int(self.num_cohorts, "num_cohorts (m)", 1, MAX_COHORTS)
        if self.num_hashes > self.num_bloombits:
            raise refuse_relation(f"num_hashes (h={self.num_hashes}) must be <= num_bloombits "
                                  f"(k={self.num_bloombits})", "h<=k", "num_hashes", "num_bloombits")
        p, q, f = (check_resolvable(getattr(self, n), n) for n in ("p", "q", "f"))
        if not 0.0 <= f < 1.0:
            raise refuse_range(f"f must satisfy 0 <= f < 1 (f = 1 reports pure noise), got {f}", self.f, "f", min=0,
                               max=1, max_exclusive=True)
        if not p < q:
            raise refuse_relation("RAPPOR needs 0 <= p < q <= 1 (a 1 in the PRR must be reported more often), "
                                  f"got p={p}, q={q}", "p<q", "p", "q")
        check_choice(self.mode, "mode", MODES, f"mode must be one of {MODES}, got {self.mode!r}")
        for name, v in (("p", p), ("q", q), ("f", f)):
            object.__setattr__(self, name, v)
        self.check_collectable()

    # -- short names from the paper ---------------------------------------------------------------
    @property
    def k(self) -> int:
        return self.num_bloombits

    @property
    def h(self) -> int:
        return self.num_hashes

    @property
    def m(self) -> int:
        return self.num_cohorts

    def check_google_client(self) -> None:
        """``ValueError`` unless Google's client can encode with these parameters: ``k <= 32`` (the
        PRR message is a 32-bit integer) and ``h <= 16`` (one MD5 byte per hash). Decoding Google's
        files (with its ``map.csv``) has no such limit: Chrome's configurations used k = 128."""
        if self.mode == "google" and (self.num_bloombits > 32 or self.num_hashes > 16):
            raise refuse_relation("Google's client needs k <= 32 (PRR message is a 32-bit integer) and h <= 16 "
                                  f"(one MD5 byte per hash), got k={self.num_bloombits}, h={self.num_hashes}; "
                                  "these parameters can decode Google's files but not encode", "google_client",
                                  "num_bloombits", "num_hashes", "mode")

    @property
    def domain_size(self) -> None:
        """RAPPOR reports strings from an open domain: no fixed domain size."""
        return None

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("cohort", "uint", self.num_cohorts), Field("bits", "bits", self.num_bloombits))

    @property
    def aggregate_cells(self) -> int:
        """Reports per cohort and ones per cohort and bit: ``m·(k+1)``."""
        return self.num_cohorts * (self.num_bloombits + 1)

    # -- Google's params.csv ------------------------------------------------------------------------
    @classmethod
    def from_google_csv(cls, text: str) -> RapporParams:
        """Parse Google's ``params.csv`` (header ``k,h,m,p,q,f`` and one row) in Google mode."""
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        if len(lines) != 2 or [c.strip() for c in lines[0].split(",")] != ["k", "h", "m", "p", "q", "f"]:
            raise ValueError("Google params.csv must be the header 'k,h,m,p,q,f' and one data row")
        cells = [c.strip() for c in lines[1].split(",")]
        if len(cells) != 6:
            raise ValueError(f"params.csv row needs 6 values, got {len(cells)}")
        try:
            k, h, m = (int(c) for c in cells[:3])
            p, q, f = (float(c) for c in cells[3:])
        except ValueError:
            raise ValueError(f"params.csv row is not k,h,m (ints) and p,q,f (numbers): {lines[1]!r}") from None
        return cls(k, h, m, p, q, f, mode="google")

    def to_google_csv(self) -> str:
        return f"k,h,m,p,q,f\n{self.k},{self.h},{self.m},{self.p!r},{self.q!r},{self.f!r}\n"

    @classmethod
    def examples(cls) -> list[RapporParams]:
        """16 Bloom bits, one cohort (the decoder's exact variance has no cohort-size noise), in this
        library's mode and in Google's (conformance suite)."""
        return [cls(16, 2, 1, 0.25, 0.75, 0.5), cls(16, 2, 1, 0.5, 0.75, 0.25, mode="google")]

    @classmethod
    def audit_examples(cls) -> list[RapporParams]:
        """Two Bloom bits: PRR and IRR draw ``2^(4k)`` paths per cohort, enumerable."""
        return [cls(2, 1, 2, 0.25, 0.75, 0.5), cls(2, 1, 1, 0.5, 0.75, 0.25)]

    def audit_inputs(self) -> list[str]:
        """Two strings whose Bloom filters in cohort 0 have ``h`` bits each, disjoint: they attain ε₁."""
        chosen: list[str] = []
        used: set[int] = set()
        for i in range(10_000):
            bits = set(bloom_bits(self, f"v{i}", 0))
            if len(bits) == self.num_hashes and not bits & used:
                chosen.append(f"v{i}")
                used |= bits
                if len(chosen) == 2:
                    return chosen
        raise ValueError(f"no two strings with disjoint Bloom filters under {self}")

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: basic (one-time) RAPPOR with :data:`PLANNER_BLOOM` ``(k, h, m)``, no IRR
        (``p = 0, q = 1``) and the PRR's ``f = 2/(1+e^{ε/(2h)})``, so that ``ε₁ = ε∞ = ε``."""
        k, h, m = PLANNER_BLOOM
        return cls(k, h, m, 0.0, 1.0, 2.0 / (1.0 + math.exp(epsilon / (2 * h))))

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """A frequency oracle over candidate strings while the planner's Bloom filters can separate them:
        ``d <= k·m/2`` (:data:`PLANNER_BLOOM`: 64 bits in 32 cohorts, 1,024 values)."""
        return domain_size <= PLANNER_BLOOM[0] * PLANNER_BLOOM[2] // 2

    def with_epsilon(self, epsilon: float) -> Self:
        """Basic (one-time) RAPPOR with this Bloom filter, cohorts and mode at ``ε``: no IRR (``p = 0, q = 1``) and
        ``f = 2/(1+e^{ε/(2h)})``, so that ``ε₁ = ε∞ = ε`` (as :meth:`for_epsilon`; Google mode's f, rounded up to a
        multiple of 1/128, costs at most ε)."""
        f = 2.0 / (1.0 + math.exp(epsilon / (2 * self.num_hashes)))
        return type(self)(self.num_bloombits, self.num_hashes, self.num_cohorts, 0.0, 1.0, f, self.mode)


class _Prepared:
    """A value as the encoder needs it: Bloom filter, the message its PRR is memoized on, and,
    filled in on first use when the PRR comes from the secret, the PRR and the ledger's memo key."""

    __slots__ = ("bloom", "message", "prr", "memo_key")

    def __init__(self, bloom: int, message: bytes) -> None:
        self.bloom, self.message = bloom, message
        self.prr: int | None = None
        self.memo_key: bytes | None = None


class RapporEncoder(Encoder):
    """One RAPPOR client: a secret and a cohort, persisted by the app (:meth:`state`).

    ``secret`` (bytes; str is UTF-8 encoded) and ``cohort`` default to fresh ones from ``rng``
    (the CSPRNG unless a seed is given). A secret that is not persisted breaks memoization: a new
    secret gives every value a new PRR, and the ledger then charges it again (its memo key
    depends on the secret), so accounting stays honest but the budget goes faster.

    With a ``ledger``, each report is charged to ``metric`` as a :class:`MemoizedCharge` keyed by
    the PRR's memo key: ``charging="min"`` (default) charges ε₁ per report with the total per
    value capped at ε∞, i.e. ``min(t·ε₁, ε∞)`` after ``t`` reports. Both bounds hold: all reports
    are post-processing of the ε∞-LDP PRR; and per bit, the log-likelihood ratio of ``t`` reports
    sharing one PRR bit is a concave, odd function of the sum of the per-report IRR log-ratios, so
    it is at most ``t`` times the one-report worst case (see docs/protocols/rappor.md). Reports
    share PRR coins, so plain sequential composition would not be the argument;
    ``charging="upfront"`` charges ε∞ on a value's first report and nothing after.

    ``prr_rng`` is for audits and simulation only: the PRR is drawn from it instead of from the
    secret (HMAC modelled as a random function), so nothing is memoized.

    Speed: the Bloom filter, PRR and memo key of the :data:`MEMO_ENTRIES` most recently encoded
    values (each at most :data:`MEMO_MAX_VALUE` characters or bytes) are kept in memory
    (:class:`~ldp.encoders.base.BoundedMemo`), so a repeated value costs only its IRR. They are
    deterministic functions of the secret, cohort and value, so this changes no output. Memory: at
    most 256 × (a value of ≤ 512 characters, ≤ 2 KiB as a str; its ≤ 2.1 KiB message; a PRR; a
    32-byte key), ≤ 1.2 MB; measured 0.1 MB for 50-character URLs (k = 16) and 0.6 MB beside the
    values for 512 four-byte characters (k = 128). ``secret`` and ``cohort`` are read-only.
    """

    params: RapporParams
    params_type: ClassVar[type[RapporParams]] = RapporParams
    needs_secret: ClassVar[bool] = True

    @classmethod
    def assigned_cohorts(cls, params: Any) -> int:
        """A device reports in one of the ``num_cohorts`` cohorts, kept for good (its Bloom filters depend on it)."""
        return int(params.num_cohorts)

    def __init__(self, params: RapporParams, *, secret: bytes | str | None = None, cohort: int | None = None,
                 rng: Any = None, ledger: Any = None, metric: str | None = None, charging: str = "min",
                 prr_rng: RandomSource | None = None, simulation: bool = False) -> None:
        super().__init__(params, rng=rng, ledger=ledger, metric=metric, simulation=simulation)
        params.check_google_client()
        check_choice(charging, "charging", CHARGING, f"charging must be one of {CHARGING}, got {charging!r}")
        self._secret = client_secret(secret, self._rng)
        self._cohort = self._rng.randbelow(params.num_cohorts) if cohort is None else check_int(
            cohort, "cohort", 0, params.num_cohorts - 1)
        if prr_rng is not None and params.mode == "google":
            raise ValueError("prr_rng replaces the PRR derivation of 'ldp' mode only")
        self.charging = charging
        self._prr_rng = prr_rng
        self._hex_fp = self._fp.encode("ascii")
        self._memo: BoundedMemo[_Prepared] = BoundedMemo(MEMO_ENTRIES, MEMO_MAX_VALUE)
        # (candidates, packed Bloom table) for encode_batch
        self._table_cache: tuple[tuple[str | bytes, ...], Any] | None = None  # (candidates, numpy uint8 table)

    @classmethod
    def for_audit(cls, params: Any, source: RandomSource) -> Self:
        """Under a fixed secret, the cohort and the permanent response drawn from ``source`` too (a fresh device
        per path, as :meth:`encode_batch` simulates)."""
        return cls(params, secret=b"audit", rng=source, prr_rng=source, simulation=True)

    @property
    def secret(self) -> bytes:
        """The client's secret (read-only: the memoized PRRs derive from it)."""
        return self._secret

    @property
    def cohort(self) -> int:
        """The client's cohort (read-only: the memoized Bloom filters derive from it)."""
        return self._cohort

    def state(self) -> dict[str, Any]:
        """What the app must persist to keep memoization: ``{"secret": hex, "cohort": int}``."""
        return {"secret": self.secret.hex(), "cohort": self.cohort}

    @classmethod
    def from_state(cls, params: RapporParams, state: dict[str, Any], **kwargs: Any) -> RapporEncoder:
        return cls(params, secret=bytes.fromhex(state["secret"]), cohort=state["cohort"], **kwargs)

    # -- the three steps ------------------------------------------------------------------------
    def prepare(self, value: Any) -> _Prepared:
        """Bloom filter of ``value`` (str or bytes) and the message its PRR is memoized on (memoized)."""
        prepared = self._memo.get(value)
        if prepared is not None:
            return prepared
        check_string_value(value, "RAPPOR")
        bloom = bloom_filter(self.params, value, self.cohort)
        if self.params.mode == "google":
            message = bloom.to_bytes(4, "big")
        else:
            message = _PRR_DOMAIN + self._hex_fp + self.cohort.to_bytes(4, "big") + value_bytes(value)
        prepared = _Prepared(bloom, message)
        self._memo.put(value, prepared)
        return prepared

    def permanent_response(self, prepared: _Prepared) -> int:
        """The PRR ``B'`` (an int, bit i = Bloom index i): the same for the same value, always."""
        if prepared.prr is not None and self._prr_rng is None:
            return prepared.prr
        pr, k = self.params, self.params.num_bloombits
        if pr.mode == "google":
            uniform, fmask = google_prr_masks(self.secret, prepared.message, pr.f, k)
        else:
            src = self._prr_rng or KeyedRandomSource(self.secret, prepared.message)
            fmask = src.bernoulli_bits(pr.f, k)
            uniform = src.bernoulli_bits(0.5, k)
        prr = (prepared.bloom & ~fmask) | (uniform & fmask)
        if self._prr_rng is None:  # a function of (secret, message): kept with the prepared value
            prepared.prr = prr
        return prr

    def instantaneous_response(self, prr: int) -> int:
        """The IRR: fresh masks P (bits 1 w.p. p) then Q (w.p. q); ``S = (P & ~B') | (Q & B')``."""
        pr, rng = self.params, self._rng
        pmask = rng.bernoulli_bits(pr.p, pr.num_bloombits)
        qmask = rng.bernoulli_bits(pr.q, pr.num_bloombits)
        return (pmask & ~prr) | (qmask & prr)

    def encode_parts(self, value: Any) -> tuple[int, int, int]:
        """``(Bloom filter, PRR, IRR)`` as ints for one value, without the ledger (for tests/simulation)."""
        prepared = self.prepare(value)
        prr = self.permanent_response(prepared)
        return prepared.bloom, prr, self.instantaneous_response(prr)

    def randomize(self, prepared: _Prepared) -> Report:
        irr = self.instantaneous_response(self.permanent_response(prepared))
        return self._report({"cohort": self._cohort, "bits": bits_from_int(irr, self.params.num_bloombits)})

    def charge_for(self, prepared: _Prepared) -> PrivacyCost | MemoizedCharge:
        """Memoization-aware charge (see the class docstring); plain ε₁ when f = 0 (nothing memoized)."""
        pr = self.params
        one = pr.privacy_cost
        if math.isinf(pr.epsilon_inf):
            return one
        cap = PrivacyCost(pr.epsilon_inf)
        key = prepared.memo_key
        if key is None:
            key = prepared.memo_key = hmac.new(self.secret, _MEMO_DOMAIN + prepared.message, hashlib.sha256).digest()
        if self.charging == "upfront":
            return MemoizedCharge(key, first=cap, then=PrivacyCost(0.0), cap=cap)
        return MemoizedCharge(key, first=one, then=one, cap=cap)

    def encode_batch(self, values: Any, rng: Any = None, *, candidates: Sequence[str | bytes] | None = None,
                     cohorts: Any = None) -> ReportBatch:
        """Vectorized reports for simulation, one per row, each from a fresh client (see
        :func:`ldp.batch.rappor.rappor_encode_batch`): ``values`` are indices into ``candidates``
        or the strings themselves; ``cohorts`` default to uniform draws."""
        from ldp.batch.rappor import bloom_table, rappor_encode_batch  # numpy, loaded only here

        table = None
        if candidates is not None:  # Bloom filters of the candidates, hashed once per candidate list
            key = tuple(candidates)
            if self._table_cache is None or self._table_cache[0] != key:
                self._table_cache = (key, bloom_table(self.params, key))
            table = self._table_cache[1]
        cohort_col, bits = rappor_encode_batch(self.params, values, rng, candidates=candidates, cohorts=cohorts,
                                               table=table)
        return self._batch({"cohort": cohort_col, "bits": bits})
