"""What every protocol's client side shares: a bounded memo, parameters and the encode path through the ledger.

The checks of what a protocol is given (:mod:`ldp.encoders.base_checks`: each refusal a
:class:`~ldp.errors.Refusal` with a code and fields), the fixed labeled domain (:mod:`ldp.encoders.base_domain`),
the draw rules (:mod:`ldp.encoders.base_draws`) and what every parameter set is as a record, whatever the protocol
(:mod:`ldp.encoders.base_params`: its dict form, fingerprint and collectability checks) are re-exported here; the
parameters' hooks, the questions the rest of the package asks a protocol, are :class:`ProtocolParams`' own."""

from __future__ import annotations

import dataclasses
import math
import warnings
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from ldp.encoders.base_checks import check_bool, check_epsilon, check_int, check_string_value
from ldp.encoders.base_domain import DomainPrepare, LabeledDomain
from ldp.encoders.base_draws import DrawPrimitives, DrawRule
from ldp.encoders.base_params import MAX_AGGREGATE_CELLS, ParamsRecord
from ldp.encoders.base_vdaf import Prio3Fit
from ldp.errors import Refusal, RefusalTypeError, RefusalValueError, kind_of
from ldp.privacy.accountant import BudgetLedger, PrivacyCost, Reservation
from ldp.privacy.cost import Charge
from ldp.privacy.shuffle import ShuffleStructure
from ldp.randomness import RandomSource, SeededRandomnessWarning, client_source, is_seeded
from ldp.reports import Report, ReportBatch

__all__ = ["ProtocolParams", "Encoder", "BoundedMemo", "LabeledDomain", "DomainPrepare", "client_secret",
           "SECRET_BYTES", "check_epsilon", "check_int", "check_string_value", "MAX_AGGREGATE_CELLS", "Refusal",
           "RefusalTypeError", "RefusalValueError"]

_P = TypeVar("_P", bound="ProtocolParams")


# -- checks of what a protocol is given ---------------------------------------------------------------------------
SECRET_BYTES = 32
"""Bytes of a client secret drawn when none is given (the keyed, memoized responses derive from it)."""


def client_secret(secret: bytes | bytearray | str | None, rng: RandomSource) -> bytes:
    """The client secret of a memoizing encoder: ``secret`` (str is UTF-8 encoded), or :data:`SECRET_BYTES`
    fresh bytes from ``rng`` (the CSPRNG unless seeded); ``TypeError`` unless non-empty bytes or str."""
    if secret is None:
        return rng.token_bytes(SECRET_BYTES)
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    if not isinstance(secret, (bytes, bytearray)):
        raise RefusalTypeError("secret must be non-empty bytes (or str)", "param_type", param="secret",
                               expected="string_or_bytes", got=kind_of(secret))
    if not secret:
        raise RefusalTypeError("secret must be non-empty bytes (or str)", "param_length", param="secret", got=0,
                               min=1)
    return bytes(secret)


# -- a bounded memo ------------------------------------------------------------------------------------------------
_V = TypeVar("_V")


class BoundedMemo(Generic[_V]):
    """A least-recently-used map of at most ``entries`` items, for what a client recomputes per value
    (RAPPOR's Bloom filter and PRR, SFP's prepared word). Keys are ``str`` or ``bytes`` values of at
    most ``max_len`` characters or bytes; others are never stored (:meth:`get` misses, :meth:`put`
    ignores them), so the memory it holds is bounded by ``entries`` values of ``max_len``.
    Safe to share between threads (each step is one atomic ``OrderedDict`` operation)."""

    def __init__(self, entries: int, max_len: int) -> None:
        self.entries, self.max_len = check_int(entries, "entries", 1), check_int(max_len, "max_len", 0)
        self._items: OrderedDict[str | bytes, _V] = OrderedDict()

    def get(self, key: object) -> _V | None:
        """The item stored for ``key`` (now the most recent), or ``None``."""
        if type(key) is not str and type(key) is not bytes:  # exact types: a subclass may redefine equality
            return None
        item = self._items.get(key)
        if item is not None:
            try:
                self._items.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile
                pass
        return item

    def put(self, key: object, item: _V) -> None:
        """Store ``item`` for ``key`` (if storable), evicting the least recently used beyond ``entries``."""
        if (type(key) is str or type(key) is bytes) and len(key) <= self.max_len:
            self._items[key] = item
            while len(self._items) > self.entries:
                try:
                    self._items.popitem(last=False)
                except KeyError:  # emptied by another thread meanwhile
                    break

    def __len__(self) -> int:
        return len(self._items)


class ProtocolParams(ParamsRecord):
    """Mixin for a protocol's frozen parameter dataclass: the record every parameter set is
    (:class:`~ldp.encoders.base_params.ParamsRecord`: ``to_dict``, ``from_dict``, ``fingerprint``, ``validate``,
    ``check_collectable``, ``info_of``) and, here, the hooks: the questions the rest of the package asks a
    protocol, each with its default (docs/architecture.md, "The registry and the hooks").

    Subclasses set ``protocol`` (the name reports carry), validate in ``__post_init__`` (ending
    with :meth:`check_collectable`), and define ``schema`` (the payload fields), ``privacy_cost``,
    ``domain_size`` (number of distinct inputs the simulation paths index, 0..domain_size-1) and
    ``aggregate_cells`` (the counters the server aggregate keeps).
    """

    value_class: ClassVar[str | None] = None
    """What one value of the protocol is, for the spec's ``otel`` key (:mod:`ldp.spec.otel`): ``"boolean"``,
    ``"category"`` (an index or label of a fixed domain), ``"number"`` (in ``[low, high]``) or ``"string"``;
    ``None``: no OpenTelemetry instrument can feed it (several questions in one report, say)."""
    local_randomizer: ClassVar[bool] = True
    """``False`` for a metric kind whose devices share the exact value with a VDAF (``poplar1``,
    :mod:`ldp.encoders.poplar1`): no encoder (the registry does not list it), found by the spec through its params
    (:func:`ldp.spec.kinds.metric_kinds`), its ``privacy_cost`` refused (no local ε bounds it)."""
    trust_models: ClassVar[tuple[str, ...] | None] = None
    """The trust models a metric of these parameters may name; ``None``: any (the two-aggregator ones when the
    protocol fits in Prio3, :meth:`prio3_fit`)."""
    population_kind: ClassVar[str] = "counts"
    """What a simulated collection of the protocol takes (:mod:`ldp.simulation`): ``"counts"`` of the users'
    values over its domain (or its candidate strings), ``"numbers"`` (the users' values, a mean mechanism) or
    ``"attributes"`` (one population per attribute)."""

    # -- what the planner, the simulation and the CLI ask of a protocol (issue 29) ---------------------------------

    @classmethod
    def for_epsilon(cls: type[_P], epsilon: float, domain_size: int) -> _P:
        """The parameters the planner chooses when only ``ε`` (and the domain size) is given, so that one report
        costs ``ε``; documented per protocol in docs/planner.md. A protocol the planner does not choose for
        raises ``NotImplementedError`` (:func:`plans_for_epsilon` tells which)."""
        raise NotImplementedError(f"the planner does not choose {cls.protocol} parameters from ε alone")

    @property
    def report_bits(self) -> int:
        """Bits of one report's payload on the wire: each field of :attr:`schema` packed tight (a bit string's
        length; an integer's :func:`uint_bits`)."""
        return sum(f.size if f.kind == "bits" else uint_bits(f.size) for f in self.schema)

    @property
    def shuffle_structure(self) -> ShuffleStructure | None:
        """What a shuffling bound may assume of one report's randomizer beyond its ε (:mod:`ldp.privacy.shuffle`):
        ``None`` (the default) for any ε-LDP randomizer; a k-ary randomized response returns its
        :func:`~ldp.privacy.shuffle.k_rr_structure`, with which the central ε is tighter."""
        return None

    def horizon_cost(self, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
        """The privacy of ``reports`` reports of ``distinct`` values over a horizon: ``(per report, per distinct
        value, in all)`` by sequential composition; a protocol that memoizes its responses caps the last two."""
        one = self.privacy_cost
        return one, one.times(reports), one.times(reports)

    def prio3_fit(self) -> Prio3Fit | None:
        """How a report of these parameters enters the two-aggregator mode (:mod:`ldp.encoders.base_vdaf`): its
        Prio3 type and measurement, or ``None`` when the protocol does not fit (the default)."""
        return None

    def task_vdaf(self) -> tuple[str, dict[str, int]] | None:
        """The VDAF type and parameters a two-aggregator task of these parameters states (:mod:`ldp.aggregators.task`;
        a device's task must agree): :meth:`prio3_fit`'s by default, ``None`` when it does not fit; a kind without a
        local randomizer names its own (``poplar1``: ``Poplar1`` with ``bits`` and ``max_candidates``)."""
        fit = self.prio3_fit()
        return None if fit is None else (fit.vdaf, dict(fit.params))

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """Whether the protocol is a frequency oracle for ``domain_size`` arbitrary categories, to compare with the
        others on the variance of a rare item's count (what :func:`ldp.plan.recommend` ranks): one report per user
        of one value, every value's count estimated, at :meth:`for_epsilon`'s parameters. ``False`` by default
        (numbers and their buckets, string discovery, the oracles made for repeated collection, attributes)."""
        return False

    @classmethod
    def from_options(cls: type[_P], options: Mapping[str, Any]) -> _P | None:
        """The parameters a command's loose options give when no field is named (no ``--param``): ``options`` holds
        ``epsilon`` and ``d`` (the domain size) and the few a protocol has of its own (rr's ``p``, ``q``,
        ``truth_prob``, ``yes_prob``), ``None`` where not given. ``None`` (the default): the options are the
        ``epsilon`` and ``domain_size`` fields, and the planner's choice at ``epsilon`` fills the rest."""
        return None

    def with_epsilon(self: _P, epsilon: float) -> _P:
        """Parameters like these (same protocol, domain, sketch or Bloom sizes, hash family) calibrated so that one
        report costs ``ε``. By default the ``epsilon`` field replaced, where that is what one report then costs
        (checked); a protocol whose ε follows from other parameters overrides this, and one that cannot be
        recalibrated so raises ``NotImplementedError``."""
        if "epsilon" in {f.name for f in dataclasses.fields(self)}:
            out = dataclasses.replace(self, epsilon=epsilon)
            if math.isclose(out.privacy_cost.epsilon, epsilon, rel_tol=1e-9):
                return out
        raise NotImplementedError(f"{type(self).__name__} defines no with_epsilon: no epsilon field that is the cost "
                                  "of one report")

    def with_hash_seed(self: _P, seed: int) -> _P:
        """These parameters with hash family number ``seed`` (independent families for distinct seeds): the
        ``hash_seed`` field replaced when the parameters hold one, else the parameters themselves (fixed hashes,
        or none)."""
        if "hash_seed" not in {f.name for f in dataclasses.fields(self)}:
            return self
        return dataclasses.replace(self, hash_seed=seed)

    # -- what the joint (association) analysis and the consistency post-processing ask (ldp.decoders) --------------

    def label_of(self, index: int) -> str:
        """The name of value ``index`` of a fixed domain: its label (params with ``labels``), else the index."""
        labels = getattr(self, "labels", None)
        return labels[index] if labels else str(index)

    @property
    def support_probabilities(self) -> tuple[float, float] | None:
        """``(p*, q*)`` when a report supports the user's value with probability ``p*`` and each other value with
        ``q*``, alike for every value (a pure frequency oracle, Wang et al., USENIX Security 2017); else ``None``."""
        return None

    @property
    def response_matrix(self) -> tuple[tuple[float, ...], ...] | None:
        """``Pr[output y | value x]`` (rows y, columns x) of a report that is one of a few outputs, output ``y``
        supporting value ``y``, when :attr:`support_probabilities` cannot say it (they differ by value); else None."""
        return None

    @property
    def attribute_parts(self) -> dict[str, tuple[ProtocolParams, str]]:
        """A value of several attributes, each reported by a component protocol: by attribute name, its parameters
        and the prefix of its payload fields. Empty (the default): a value is one attribute."""
        return {}

    def check_parts_together(self) -> None:
        """``ValueError`` saying why unless every report carries all :attr:`attribute_parts` (two of them can then be
        paired from one report, with no link between reports); the default passes."""

    # -- what the conformance suite asks of a protocol (:mod:`ldp.protocols.checks`) -------------------------------

    @classmethod
    def examples(cls: type[_P]) -> list[_P]:
        """A few small valid parameter sets: each a collection of a few thousand simulated users decodes quickly
        (the statistical, merge, serialization and spec checks run on every one). Every protocol defines it."""
        raise NotImplementedError(f"{cls.__name__} defines no examples(): the conformance suite "
                                  "(ldp.protocols.checks) needs a few small valid parameter sets")

    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ()
    """Parameters (in :meth:`to_dict` form) the conformance vectors cover beyond :meth:`examples`: larger domains,
    labels that need escapes, floats whose canonical form has an exponent (docs/conformance.md)."""

    @classmethod
    def conformance_examples(cls: type[_P]) -> list[_P]:
        """The parameter sets of the conformance vectors (:mod:`ldp.conformance`): :meth:`examples`, then
        :attr:`conformance_extra`."""
        return [*cls.examples(), *(cls.from_dict(d) for d in cls.conformance_extra)]

    @classmethod
    def audit_examples(cls: type[_P]) -> list[_P]:
        """Parameter sets small enough to enumerate every output of one report (the exact privacy audit and the
        batch-law check): :meth:`examples` unless a protocol needs smaller ones (hash families, Bloom filters)."""
        return cls.examples()

    def audit_inputs(self) -> list[Any]:
        """The values an exact audit enumerates, at least two, among them a pair attaining the claimed ε: every
        index of a small fixed domain by default; other protocols say which values."""
        d = self.domain_size
        if d is None or not 2 <= d <= 64:
            raise NotImplementedError(f"{type(self).__name__} defines no audit_inputs(): the values to enumerate")
        return list(range(d))

    def audit_epsilon(self) -> float:
        """The ε the exact audit of one report over :meth:`audit_inputs` attains: the claimed
        ``privacy_cost.epsilon`` (the claim is tight); parameters whose claim is only an upper bound there
        say what is attained."""
        return self.privacy_cost.epsilon

    def batch_values(self, values: list[Any]) -> Any:
        """What :meth:`Encoder.encode_batch` takes for users whose :meth:`Encoder.encode` values are ``values``:
        the same values by default (indices, numbers, strings)."""
        return values

    # -- the draw order (docs/conformance.md §3; :mod:`ldp.encoders.base_draws`) -------------------------------------

    draw_rule: ClassVar[DrawRule | None] = None
    """The k sequence of one report on the encoder's injected stream: its text in the short forms ``B(x)``,
    ``BB(x, n)``, ``R(n)`` of docs/conformance.md §3 (the page's table is generated from it) and the same rule as a
    predictor; ``None``: not declared (the page's generator and its test then name the protocol)."""

    def replay_draws(self, draws: DrawPrimitives, value: Any) -> object:
        """The draws of one report of ``value`` on ``draws``'s primitives, as :attr:`draw_rule` states them,
        independently of the encoder (the documentation test replays them against the conformance vectors)."""
        if self.draw_rule is None:
            raise NotImplementedError(f"{type(self).__name__} declares no draw_rule: the draw order of one report "
                                      "(ldp.encoders.base_draws.DrawRule), for docs/conformance.md and its test")
        return self.draw_rule.replay(draws, self, value)


def uint_bits(size: int) -> int:
    """Bits of an integer in ``[0, size)``: ``⌈log₂ size⌉`` (at least 1), 0 when it has one value."""
    return max(1, math.ceil(math.log2(size))) if size > 1 else 0


def plans_for_epsilon(params_type: type[ProtocolParams]) -> bool:
    """Whether the planner chooses this protocol's parameters from ``ε`` (it overrides
    :meth:`ProtocolParams.for_epsilon`)."""
    return params_type.for_epsilon.__func__ is not ProtocolParams.for_epsilon.__func__  # type: ignore[attr-defined]


class Encoder(ABC):
    """A client encoder: ``encode(value)`` validates, charges the ledger, randomizes, commits.

    ``rng`` defaults to the OS CSPRNG. A seed or generator (:func:`~ldp.randomness.is_seeded`)
    makes every encoder given it report the same noise, so it is for simulation only and must be
    said so with ``simulation=True``: without it, a seeded encoder that charges a ledger is refused
    (``ValueError``) and one without a ledger warns (:class:`~ldp.randomness.SeededRandomnessWarning`);
    with it, the ledger's file records that it was used so. With a ``ledger``, every report is
    charged to ``metric`` before randomness is drawn; an exhausted budget raises
    :class:`ldp.privacy.accountant.BudgetExceeded` and no report is produced.
    """

    params_type: ClassVar[type[ProtocolParams]]
    needs_secret: ClassVar[bool] = False
    """Whether reports derive from a per-device secret (memoized responses): the caller then passes the
    device's kept ``secret=`` (a fresh one each time would charge every value anew)."""

    @classmethod
    def assigned_cohorts(cls, params: Any) -> int:
        """How many cohorts the caller assigns a device to: it draws one uniformly from ``range(n)`` once, keeps
        it with the device's state and passes it as ``cohort=``. ``0`` (default): the encoder takes no cohort
        from its caller (it has none, or derives it from its secret)."""
        return 0

    def __init__(self, params: ProtocolParams, *, rng: Any = None, ledger: BudgetLedger | None = None,
                 metric: str | None = None, simulation: bool = False) -> None:
        if not isinstance(params, self.params_type):
            raise TypeError(f"{type(self).__name__} needs {self.params_type.__name__}, got {type(params).__name__}")
        check_bool(simulation, "simulation")
        self.params = params
        self._rng: RandomSource = client_source(rng)
        if ledger is not None and not metric:
            raise ValueError("an encoder with a ledger needs the metric name to charge")
        self.simulation = simulation
        if is_seeded(rng) and not simulation:
            if ledger is not None:
                raise ValueError(f"{type(self).__name__}: a seeded rng with a budget ledger makes every device given "
                                 "the seed report the same noise; leave rng=None (the OS CSPRNG) in an app, or pass "
                                 "simulation=True for a simulation")
            warnings.warn(f"{type(self).__name__} draws from a seeded rng: every encoder given this seed reports the "
                          "same noise (not private in deployment); pass simulation=True if this is a simulation",
                          SeededRandomnessWarning, stacklevel=3)
        if ledger is not None and simulation and is_seeded(rng):
            ledger.mark_simulation()
        self.ledger, self.metric = ledger, metric
        self._fp, self._protocol = params.fingerprint, params.protocol

    @property
    def privacy_cost(self) -> PrivacyCost:
        """The ε (and δ) one report costs."""
        return self.params.privacy_cost

    def charge_for(self, prepared: Any) -> Charge:
        """What one report of ``prepared`` costs; protocols with memoization or change charges override this."""
        return self.params.privacy_cost

    @classmethod
    def for_audit(cls, params: Any, source: RandomSource) -> Encoder:
        """An encoder whose every random draw comes from ``source`` (the exact audit enumerates them); a
        memoizing encoder also draws its permanent response from it, under a fixed secret."""
        return cls(params, rng=source, simulation=True)

    def encode(self, value: Any) -> Report:
        """One privatized report of ``value``. With a ledger: check the caps, charge, randomize, all in
        one transaction (:meth:`BudgetLedger.charge_atomically`); the report is returned only after
        COMMIT put the charge on disk, so a crash before it loses charge and report together."""
        prepared = self.prepare(value)  # invalid input fails here, before any charge
        if self.ledger is None:
            return self.randomize(prepared)
        return self.ledger.charge_atomically(self.metric,  # type: ignore[arg-type]  # __init__: a ledger has a metric
                                             self.charge_for(prepared),
                                             lambda reservation, _db: self.randomize_charged(prepared, reservation))

    def randomize_charged(self, prepared: Any, reservation: Reservation) -> Report:
        """The report of ``prepared`` once the ledger recorded ``reservation`` (inside its transaction); a
        protocol whose response depends on what the ledger decided (:mod:`ldp.encoders.thresh`: the epoch)
        overrides this."""
        return self.randomize(prepared)

    def _report(self, payload: dict[str, Any]) -> Report:
        return Report.trusted(self._protocol, self._fp, payload)

    def _batch(self, columns: dict[str, Any]) -> ReportBatch:
        return ReportBatch(self.params.protocol, self._fp, self.params.schema, columns)

    @abstractmethod
    def prepare(self, value: Any) -> Any:
        """Validate a raw value and turn it into the encoder's internal form (raises on bad input)."""

    @abstractmethod
    def randomize(self, prepared: Any) -> Report:
        """Privatize a prepared value into a report (all randomness from ``self._rng``)."""

    def randomize_payload(self, prepared: Any) -> dict[str, Any]:
        """The payload :meth:`randomize` would put in its report, the same draws (what a composite encoder such
        as ``multi`` or ``bucket-grr`` takes of a part); a protocol overrides it to skip the report object."""
        return dict(self.randomize(prepared).payload)

    @abstractmethod
    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized encoding of value indices for simulation (a numpy kernel from :mod:`ldp.batch`; no ledger)."""
