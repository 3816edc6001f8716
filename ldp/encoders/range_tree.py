"""Hierarchical histograms for range queries, HH_B (Cormode, Kulkarni and Srivastava, "Answering Range Queries
Under Local Differential Privacy", PVLDB 12(10), 2019, §4). Client side.

Buckets
    ``[low, high]`` is cut into ``D = branching^depth`` buckets of equal width ``(high − low)/D``; bucket ``i`` is
    ``[e_i, e_{i+1})`` with ``e_i = low + (high − low)·i/D`` and the last one is closed. A value outside
    ``[low, high]`` is a client error unless ``clip=True`` (then it joins the first or last bucket).

The tree
    The ``B``-ary tree over the ``D`` buckets has levels ``1..h`` (``h = depth``) below the root; level ``l`` has
    ``B^l`` nodes, node ``j`` covering buckets ``[j·B^{h−l}, (j+1)·B^{h−l})``. The root's count is the number of
    reports ``n`` and is never reported.

A report
    The client draws its level (``randbelow(h)``, uniform; or, with ``level_weights`` ``w_1..w_h``,
    ``r = randbelow(Σw)`` and the first level whose cumulative weight exceeds ``r``), then reports the index of its
    bucket's node at that level, ``⌊i / B^{h−l}⌋``, through that level's frequency oracle over the ``B^l`` nodes at
    the full ε: GRR (``rng.bernoulli(p)``, else ``randbelow(B^l − 1)`` for the other node, as
    :class:`~ldp.encoders.randomized_response.GRREncoder`) or OUE (``bernoulli_bits(q, B^l)``, then
    ``bernoulli(1/2)`` for the own bit, as :class:`~ldp.encoders.unary.OUEEncoder`). ``oracle="auto"`` takes, per
    level, GRR when its null variance per report ``q(1−q)/(p−q)²`` is below OUE's (about when ``B^l < 3e^ε + 2``),
    else OUE, both at the realized probabilities. Wire fields: ``level`` (``0..h−1`` for levels ``1..h``), ``y``
    (the GRR node; 0 at an OUE level; present when a level uses GRR) and ``bits`` (``D`` bits, the OUE bits of the
    level's first ``B^l`` positions, zero elsewhere; present when a level uses OUE).

Privacy
    The level is drawn independently of the value, so a report's likelihood ratio between two values is that of
    its level's oracle: ``privacy_cost`` is the largest ``max(ε, ε*)`` of the oracles used (ε* from their realized
    probabilities), and it is attained (two values in different leaves differ at every level).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base import Encoder, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import check_bool, check_choice, refuse_range, refuse_relation, refuse_type
from ldp.encoders.base_draws import DrawPrimitives, DrawRule, grr_draws
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.histogram_buckets import bucket_index, bucket_labels
from ldp.encoders.pem import null_variance
from ldp.encoders.randomized_response import GRRParams
from ldp.encoders.unary import OUEParams, unary_draw
from ldp.errors import Refusal, RefusalValueError, kind_of
from ldp.privacy.accountant import PrivacyCost
from ldp.reports import Field, Report, ReportBatch, ReportError, bits_from_int

__all__ = ["HHParams", "HHEncoder", "HH_ORACLES", "MAX_LEAVES", "tree_shapes", "shape_cost"]

HH_ORACLES = ("auto", "oue", "grr")
"""``HHParams.oracle``: per level the smaller null variance, OUE at every level, GRR at every level."""
MAX_LEAVES = 1 << 16
"""Most buckets (leaves) a tree may have: the aggregate keeps ``depth × D`` counters."""


def tree_shapes(leaves: int) -> list[tuple[int, int]]:
    """Every ``(branching, depth)`` with ``branching^depth = leaves``, ``branching >= 2``, deepest first."""
    out = []
    for depth in range(max(1, leaves.bit_length()), 0, -1):
        b = round(leaves ** (1.0 / depth))
        for cand in (b - 1, b, b + 1):
            if cand >= 2 and cand**depth == leaves and (cand, depth) not in out:
                out.append((cand, depth))
    return out


def shape_cost(epsilon: float, branching: int, depth: int) -> float:
    """The planner's score of a tree shape at ε (smaller is better; standard library only). CKS's count (PVLDB 2019,
    §4.3): a range takes at most ``B − 1`` nodes at level 1 and ``2(B − 1)`` at each level below, each level's oracle
    estimating its nodes from ``n/h`` users, so ``Var ≈ h·Σ_l nodes_l·V_l`` (``V_l``: the null variance per report
    of level ``l``'s oracle, GRR ``(e^ε + B^l − 2)/(e^ε − 1)²`` or OUE ``4e^ε/(e^ε − 1)²``, the smaller, as
    ``oracle="auto"`` chooses); times ``√(1 − 1/B)``, the share of that variance constrained inference keeps as
    fitted to the exact average variance over all ranges (:func:`ldp.plan.range_tree.average_range_variance`; the
    shape chosen is within 10 % of the exact optimum for D = 64…1024, ε = 0.5…4)."""
    e = math.exp(epsilon)
    oue = 4 * e / (e - 1) ** 2
    total = 0.0
    for level in range(1, depth + 1):
        grr = (e + branching**level - 2) / (e - 1) ** 2
        nodes = branching - 1 if level == 1 else 2 * (branching - 1)
        total += nodes * min(grr, oue)
    return depth * total * math.sqrt(1 - 1 / branching)


def _hh_draws(s: DrawPrimitives, pr: HHParams, value: Any) -> object:
    """The level (uniform, or by ``level_weights``), then its oracle's draws: GRR, or OUE's mask and own bit."""
    if pr.level_weights:
        r, level = s.R(sum(pr.level_weights)), 0
        while r >= pr.level_weights[level]:
            r, level = r - pr.level_weights[level], level + 1
    else:
        level = s.R(pr.depth)
    m, oracle = pr.level_size(level + 1), pr.level_oracle(level + 1)
    if pr.oracle_kinds[level] == "grr":
        return grr_draws(s, oracle.p, m)
    return s.BB(oracle.q, m), s.B(0.5)


@dataclass(frozen=True)
class HHParams(ProtocolParams):
    """HH_B: ``epsilon`` per report, values in ``[low, high]`` cut into ``branching^depth`` equal buckets, one
    level of the tree per report (uniform, or by ``level_weights``), reported by ``oracle``."""

    epsilon: float
    low: float
    high: float
    branching: int = 4
    depth: int = 5
    oracle: str = "auto"
    level_weights: tuple[int, ...] = ()
    clip: bool = False
    protocol: ClassVar[str] = "hh"
    value_class: ClassVar[str | None] = "number"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "branching": ParamInfo("the branching factor B of the tree of intervals", (Range(min=2, max=65536),)),
        "depth": ParamInfo("the number of levels of the tree below its root", (Range(min=1, max=16),)),
        "oracle": ParamInfo("the frequency oracle of each level: oue, grr, or auto (the lower variance)",
                            choices=HH_ORACLES),
        "level_weights": ParamInfo("the weight of each level in the level a report samples (empty: uniform)")}
    refusal_rules: ClassVar[Mapping[str, str]] = {
        "low<high": "low < high", "leaves": "(a limit) the buckets, branching^depth",
        "leaf_weight": "the leaf level (the last of level_weights) must have a weight > 0",
        "distinct_edges": "[low, high] must hold branching^depth + 1 distinct bucket edges (as doubles)"}
    draw_rule = DrawRule("`R(depth)` (with `level_weights`: `R(Σw)`); at a GRR level `B(p)`, then `R(m−1)` if false; "
                         "at an OUE level `BB(q, m)`, `B(1/2)`", _hh_draws)
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 1.0, "low": 0.0, "high": 64.0, "branching": 4, "depth": 3, "oracle": "oue"},
        {"epsilon": 2.0, "low": -1.0, "high": 1.0, "branching": 2, "depth": 4, "level_weights": [1, 1, 2, 4]})

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        for name in ("low", "high"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                message = f"{name} must be a finite real number, got {v!r}"
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise RefusalValueError(message, "param_type", param=name, expected="float", got=kind_of(v))
                raise refuse_range(message, v, name, finite=True)
            object.__setattr__(self, name, float(v))
        if not self.low < self.high:
            raise refuse_relation(f"need low < high, got low={self.low}, high={self.high}", "low<high", "low", "high")
        check_int(self.branching, "branching", 2, MAX_LEAVES)
        check_int(self.depth, "depth", 1, 16)
        if self.branching**self.depth > MAX_LEAVES:
            raise RefusalValueError(f"branching^depth = {self.branching}^{self.depth} buckets is over the "
                                    f"{MAX_LEAVES:,} allowed", "param_limit", limit="leaves",
                                    got=self.branching**self.depth, max=MAX_LEAVES)
        check_choice(self.oracle, "oracle", HH_ORACLES, f"oracle must be one of {', '.join(map(repr, HH_ORACLES))}, "
                     f"got {self.oracle!r}")
        check_bool(self.clip, "clip")
        if not isinstance(self.level_weights, (list, tuple)):
            raise refuse_type(f"level_weights must be a list of ints, got {type(self.level_weights).__name__}",
                              self.level_weights, "list", "level_weights")
        weights = tuple(self.level_weights)
        if weights:
            if len(weights) != self.depth:
                raise RefusalValueError(f"level_weights must have depth={self.depth} entries (levels 1..{self.depth})"
                                        f", got {len(weights)}", "param_length", param="level_weights",
                                        got=len(weights), min=self.depth, max=self.depth)
            for i, w in enumerate(weights):
                check_int(w, f"level_weights[{i}]", 0, 1 << 32, param="level_weights", index=i)
            if weights[-1] == 0:
                raise refuse_relation("level_weights must give the leaf level (the last) a weight > 0: the buckets' "
                                      "counts are estimated from it", "leaf_weight", "level_weights")
        object.__setattr__(self, "level_weights", weights)
        edges = self.edges
        if len(set(edges)) != len(edges):
            raise refuse_relation(f"[{self.low}, {self.high}] is too narrow for {self.num_buckets} distinct bucket "
                                  "edges", "distinct_edges", "low", "high", "branching", "depth")
        for level in range(1, self.depth + 1):
            try:
                self.level_oracle(level)  # the oracles' own checks: ε neither too large nor too small
            except Refusal as exc:  # a level's ε too large or too small: for its B^l nodes, by its oracle
                if exc.code != "param_relation":
                    raise
                raise refuse_relation(str(exc), exc.fields["rule"], "epsilon", "branching", "depth", "oracle") from None
        self.check_collectable()

    # -- the tree ------------------------------------------------------------------------------------------------
    @property
    def num_buckets(self) -> int:
        """``D = branching^depth``."""
        return int(self.branching**self.depth)

    @property
    def domain_size(self) -> int:
        return self.num_buckets

    @cached_property
    def edges(self) -> tuple[float, ...]:
        """``e_i = low + (high − low)·i/D``, ``i = 0..D``."""
        d, span = self.num_buckets, self.high - self.low
        return tuple(self.low + span * i / d for i in range(d)) + (self.high,)

    @cached_property
    def labels(self) -> tuple[str, ...]:
        return bucket_labels(self.edges)

    def bucket_of(self, value: Any) -> int:
        """The bucket of a number (``TypeError``/``ValueError`` naming the rule otherwise)."""
        return bucket_index(self.edges, value, self.clip)

    def level_size(self, level: int) -> int:
        """``B^l``: the nodes at level ``l`` (1..depth)."""
        return int(self.branching ** check_int(level, "level", 1, self.depth))

    @cached_property
    def weights(self) -> tuple[int, ...]:
        """Each level's weight in the draw (all 1 when ``level_weights`` is empty)."""
        return self.level_weights or (1,) * self.depth

    @property
    def level_probabilities(self) -> tuple[float, ...]:
        """``π_l = w_l / Σw``: the probability a report is of level ``l`` (exactly as drawn)."""
        total = sum(self.weights)
        return tuple(w / total for w in self.weights)

    # -- the oracles ---------------------------------------------------------------------------------------------
    def level_oracle(self, level: int) -> GRRParams | OUEParams:
        """Level ``l``'s frequency oracle over its ``B^l`` nodes (``oracle``; "auto": the smaller null variance)."""
        return _oracle(self.epsilon, self.level_size(level), self.oracle)

    def uses_grr(self, level: int) -> bool:
        return isinstance(self.level_oracle(level), GRRParams)

    @cached_property
    def oracle_kinds(self) -> tuple[str, ...]:
        """``"grr"`` or ``"oue"`` per level 1..depth."""
        return tuple("grr" if self.uses_grr(lv) else "oue" for lv in range(1, self.depth + 1))

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """The largest of the oracles' costs (module docstring)."""
        return PrivacyCost(max(self.level_oracle(lv).privacy_cost.epsilon for lv in range(1, self.depth + 1)))

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        fields = [Field("level", "uint", self.depth)]
        if "grr" in self.oracle_kinds:
            grr_sizes = [self.level_size(lv + 1) for lv, k in enumerate(self.oracle_kinds) if k == "grr"]
            fields.append(Field("y", "uint", max(grr_sizes)))
        if "oue" in self.oracle_kinds:
            fields.append(Field("bits", "bits", self.num_buckets))
        return tuple(fields)

    @property
    def aggregate_cells(self) -> int:
        return self.depth * (self.num_buckets + 1)

    def validate(self, report: Report) -> None:
        """The schema's checks, then its level's: a GRR node below ``B^l`` (and no bits), OUE bits only in the first
        ``B^l`` positions (and ``y = 0``)."""
        super().validate(report)
        payload = report.payload
        level = payload["level"]
        assert isinstance(level, int)  # checked by the schema
        m, grr = self.level_size(level + 1), self.oracle_kinds[level] == "grr"
        y = payload.get("y", 0)
        bits = payload.get("bits")
        if grr:
            assert isinstance(y, int)
            if y >= m:
                raise ReportError("out_of_range", f"y must be < {m} at level {level + 1}, got {y}")
            if bits is not None and bits.any():  # type: ignore[union-attr]
                raise ReportError("bad_value", f"bits must be zero at level {level + 1} (GRR)")
        else:
            if y:
                raise ReportError("out_of_range", f"y must be 0 at level {level + 1} (OUE), got {y}")
            if bits is not None and bits[m:].any():  # type: ignore[index]
                raise ReportError("bad_value", f"bits beyond the first {m} are set at level {level + 1}")

    # -- what the planner, simulation and conformance suite ask ---------------------------------------------------
    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice over ``domain_size`` unit buckets ``[0, d]``: of the shapes ``B^h = d``
        (:func:`tree_shapes`), the one of smallest :func:`shape_cost` (B = 4 when the domain allows; CKS find 4–5
        for OUE without the auto oracles); uniform level sampling, ``oracle="auto"``."""
        check_int(domain_size, "domain_size", 2, MAX_LEAVES)
        branching, depth = min(tree_shapes(domain_size), key=lambda s: shape_cost(epsilon, *s))
        return cls(epsilon, 0.0, float(domain_size), branching, depth)

    @classmethod
    def examples(cls) -> list[HHParams]:
        """A binary tree of 4 buckets (OUE), and a 3-ary one of 9 (GRR above, OUE below, weighted levels)."""
        return [cls(1.0, 0.0, 4.0, branching=2, depth=2, oracle="oue"),
                cls(2.0, 0.0, 90.0, branching=3, depth=2, level_weights=(1, 2))]

    @classmethod
    def audit_examples(cls) -> list[HHParams]:
        """As :meth:`examples` (every output enumerable), and one with GRR at every level."""
        return [*cls.examples(), cls(1.5, -2.0, 2.0, branching=2, depth=2, oracle="grr")]

    def audit_inputs(self) -> list[float]:
        """The middle of every bucket."""
        e = self.edges
        return [(e[i] + e[i + 1]) / 2 for i in range(self.num_buckets)]

    def batch_values(self, values: list[Any]) -> list[int]:
        """``encode_batch`` takes bucket indices."""
        return [self.bucket_of(v) for v in values]


_ORACLE_CACHE: dict[tuple[float, int, str], GRRParams | OUEParams] = {}


def _oracle(epsilon: float, m: int, kind: str) -> GRRParams | OUEParams:
    key = (epsilon, m, kind)
    found = _ORACLE_CACHE.get(key)
    if found is None:
        if kind == "grr":
            found = GRRParams(epsilon, m)
        elif kind == "oue":
            found = OUEParams(epsilon, m)
        else:
            oue = OUEParams(epsilon, m)
            try:
                grr: GRRParams | None = GRRParams(epsilon, m)
            except ValueError:
                grr = None
            use = grr is not None and null_variance(grr.p, grr.q) < null_variance(oue.p, oue.q)
            found = grr if use and grr is not None else oue
        if len(_ORACLE_CACHE) < 4096:
            _ORACLE_CACHE[key] = found
    return found


class HHEncoder(Encoder):
    """Client encoder for :class:`HHParams`; values are real numbers in ``[low, high]`` (module docstring)."""

    params: HHParams
    params_type: ClassVar[type[HHParams]] = HHParams

    def prepare(self, value: Any) -> int:
        return self.params.bucket_of(value)

    def _level(self) -> int:
        """The report's level, 0-based (module docstring: uniform, or by ``level_weights``)."""
        pr, rng = self.params, self._rng
        if not pr.level_weights:
            return rng.randbelow(pr.depth)
        r = rng.randbelow(sum(pr.weights))
        for level, w in enumerate(pr.weights):
            if r < w:
                return level
            r -= w
        raise AssertionError("unreachable: r < Σw")

    def randomize(self, prepared: int) -> Report:
        pr, rng = self.params, self._rng
        level = self._level()
        m = pr.level_size(level + 1)
        node = prepared // (pr.num_buckets // m)
        oracle = pr.level_oracle(level + 1)
        payload: dict[str, Any] = {"level": level}
        if isinstance(oracle, GRRParams):
            if rng.bernoulli(oracle.p):
                y = node
            else:
                other = rng.randbelow(m - 1)
                y = other + (other >= node)
            payload["y"] = y
            if "oue" in pr.oracle_kinds:
                payload["bits"] = bits_from_int(0, pr.num_buckets)
        else:
            bits = unary_draw(oracle.p, oracle.q, m, node, rng)
            if "grr" in pr.oracle_kinds:
                payload["y"] = 0
            payload["bits"] = bits_from_int(bits, pr.num_buckets)
        return self._report(payload)

    def encode_batch(self, values: Any, rng: Any = None, *, levels: Any = None) -> ReportBatch:
        """Vectorized reports of bucket indices (:func:`ldp.batch.range_tree.hh_encode_batch`); ``levels``
        (simulation only) fixes each report's 0-based level instead of drawing it."""
        from ldp.batch.range_tree import hh_encode_batch  # numpy, loaded only here

        return self._batch(hh_encode_batch(self.params, values, rng, levels=levels))
