"""The parameter planner: accuracy and privacy of a collection before it is deployed.

Every number comes from the exact variance formula the protocol's decoder uses:

* RR, GRR (pure oracles, Wang et al. 2017, Thm 2): ``Var[ĉ] = (f·p*(1−p*) + (n−f)·q*(1−q*))/(p*−q*)²``
  (:func:`ldp.decoders.pure.pure_count_variance`);
* CMS, HCMS (apple-and-theory.md §1.4, §2.3): :func:`ldp.decoders.sketch.sketch_variance`, whose
  collision term needs ``F2`` of the other items; the planner assumes the other ``n − f`` users
  spread evenly over the other ``d − 1`` values, ``F2 = (n−f)²/(d−1)``, unless ``f2`` is given;
* RAPPOR: the covariance of the least-squares counts over the ``d`` candidates
  (:func:`ldp.decoders.rappor_decode.exact_count_covariance`), for ``d`` synthetic candidates;
* dBitFlip: :func:`ldp.decoders.histogram.dbitflip_variance`; bucketized GRR and OUE: GRR's and OUE's;
* SUE, OUE, L-OUE: pure oracles with the realized bit probabilities (:func:`ldp.decoders.unary.unary_variance`;
  L-OUE: one report per device, charged like L-GRR);
* HR, SS, BLH, OLH: pure oracles with their realized ``p*``, ``q*`` (HR and BLH: ``q* = 1/2``; OLH: ``1/g``
  for its rounded ``g``); :func:`recommend` ranks the oracles with :mod:`ldp.plan.oracles`;
* L-GRR: one report per device per window is GRR with the realized ``p*``, ``q*`` of the two rounds
  (:func:`ldp.decoders.longitudinal.lgrr_variance`); its lifetime charge per value is
  ``min(R·c, epsilon_perm)`` (``charging="min"``, ``c`` = ``LGRRParams.report_charge``) or
  ``epsilon_perm`` (``"upfront"``);
* SFP: a word's count is the word sketch's; discovery needs its fragments detected in the
  fragment sketch of one position, which ``n/(L/r)`` users report on average, over the grid of
  ``2^bits·|Σ|^r`` records (an approximation: the binomial split over positions is ignored);
* PEM: a string's count is estimated in the last of ``G`` groups of about ``n/G`` users, and discovered
  when it passes the last round's test among ``top_k·2^(last step)`` candidates (:mod:`ldp.plan.pem`);
* rappor-ngrams: a string's count is the full-string RAPPOR's; it is discovered when its n-grams pass the
  screen at every position, every pair of them the EM's pair test, and the string the final decode
  (:mod:`ldp.plan.rappor_ngrams`: the product of the tests' pass probabilities reaches ``power``).

At fixed fractions every one of these variances is exactly ``a·n + b·n²`` on the count scale
(``b > 0`` only for the sketches' collision term), which :func:`solve_n` inverts in closed form.

Detection follows the decoders: an item is detected when its estimate exceeds ``z_{1−α/M}·SE₀``
(``SE₀`` its standard error at ``f = 0``, Bonferroni over ``M`` candidates). The minimum
detectable count is the ``f`` detected with probability ``power``: ``f = z_{1−α/M}·SE₀ + z_power·SE(f)``.
What differs by protocol (the candidates, how discovery is tested, notes, charging modes) each protocol's
:class:`~ldp.plan.planners.CountPlanner` answers.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ldp.decoders.base import Aggregate
from ldp.decoders.tabular import OneRowResult, cost_fields
from ldp.display.tables import key_values
from ldp.encoders.base import ProtocolParams, plans_for_epsilon
from ldp.encoders.longitudinal import memoized_charges
from ldp.plan.planners import planner_for
from ldp.privacy.accountant import PrivacyCost
from ldp.protocols import get_protocol, protocols

__all__ = ["Plan", "PLANNED_PROTOCOLS", "default_params", "count_variance", "lgrr_charges", "plan", "solve_n"]

lgrr_charges = memoized_charges  # 0.1's name


def _planned() -> tuple[str, ...]:
    """The protocols the planner chooses parameters for from ε (their params define ``for_epsilon``) and whose
    aggregate gives a count variance: read from the registry."""
    return tuple(name for name, proto in protocols().items() if plans_for_epsilon(proto.params_type)
                 and proto.aggregate_type is not None
                 and proto.aggregate_type.count_variance.__func__
                 is not Aggregate.count_variance.__func__)  # type: ignore[attr-defined]


PLANNED_PROTOCOLS = _planned()


def default_params(protocol: str, epsilon: float, domain_size: int) -> ProtocolParams:
    """The parameters the planner chooses when only ε is given: the protocol's own
    :meth:`~ldp.encoders.base.ProtocolParams.for_epsilon` (each documented there and in docs/planner.md).

    The mean protocols (duchi, piecewise, hybrid, memo-mean) have their own planner: :mod:`ldp.plan.numeric`;
    ``multi``: :mod:`ldp.plan.multi`.
    """
    if protocol not in PLANNED_PROTOCOLS:
        raise ValueError(f"the planner knows {', '.join(PLANNED_PROTOCOLS)}; got {protocol!r}")
    return get_protocol(protocol).params_type.for_epsilon(epsilon, domain_size)


def count_variance(params: ProtocolParams, n: float, count: float, domain_size: int,
                   f2: float | None = None) -> float:
    """Exact ``Var`` of one item's count estimate with true count ``count`` among ``n`` users: the protocol's
    :meth:`~ldp.decoders.base.Aggregate.count_variance`.

    The other ``n − count`` users hold the other ``domain_size − 1`` values evenly (this sets
    ``F2`` for the sketches unless ``f2`` is given, and the other candidates' counts for RAPPOR)."""
    if not 0 <= count <= n:
        raise ValueError(f"count must be in [0, n={n}], got {count}")
    aggregate = get_protocol(params.protocol).aggregate_type
    try:
        return float(aggregate.count_variance(params, n, count, domain_size, f2))
    except NotImplementedError:
        raise TypeError(f"the planner has no variance formula for {type(params).__name__}") from None


@dataclass(frozen=True, repr=False)
class Plan(OneRowResult):
    """What a collection will deliver: standard errors, detection limit and privacy spent.

    A one-row result table: :meth:`row` has the numbers (ε as numbers), :meth:`metadata` the params and
    notes; :meth:`to_dict` is the nested document ``ldp plan --json`` prints."""

    protocol: str
    params: ProtocolParams
    n: int
    domain_size: int
    frequency: float
    std_error_count: float
    std_error_fraction: float
    min_detectable_count: float
    min_detectable_fraction: float
    alpha: float
    candidates: int
    power: float
    report_bits: int
    epsilon_per_report: PrivacyCost
    reports: int
    epsilon_per_value: PrivacyCost
    epsilon_total: PrivacyCost
    notes: tuple[str, ...] = field(default=())
    per_value_by_charging: dict[str, PrivacyCost] = field(default_factory=dict)
    """Memoized protocols (lgrr): ε per distinct value over the reports under each charging mode."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = self.params.to_dict()
        for k in ("epsilon_per_report", "epsilon_per_value", "epsilon_total"):
            d[k] = getattr(self, k).to_dict()
        d["per_value_by_charging"] = {k: v.to_dict() for k, v in self.per_value_by_charging.items()}
        d["notes"] = list(self.notes)
        return d

    def row(self) -> dict[str, Any]:
        """The plan's numbers as one row (each ε and δ a number)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in (
            "protocol", "n", "domain_size", "frequency", "std_error_count", "std_error_fraction",
            "min_detectable_count", "min_detectable_fraction", "alpha", "candidates", "power", "report_bits",
            "reports")}
        return {**out, **cost_fields(self, ("epsilon_per_report", "epsilon_per_value", "epsilon_total"))}

    def metadata(self) -> dict[str, Any]:
        return {"params": self.params.to_dict(), "notes": list(self.notes),
                "per_value_by_charging": {k: v.to_dict() for k, v in self.per_value_by_charging.items()}}

    def title(self) -> str:
        return f"plan: {self.protocol}, n={self.n:,}, d={self.domain_size:,}, {self.epsilon_per_report} per report"

    def table(self, max_rows: int | None = None) -> str:
        """The plan as aligned ``name  value`` lines (``max_rows``: the views' common signature; one row)."""
        pct = lambda x: f"{100 * x:.4g}%" if math.isfinite(x) else "never (raise n or ε)"  # noqa: E731
        rows = [
            ("protocol", f"{self.protocol} {self.params.to_dict()}"),
            ("users n, domain d", f"{self.n:,}, {self.domain_size:,}"),
            ("report size", f"{self.report_bits} bits"),
            (f"SE of a count (at {pct(self.frequency)})", f"{self.std_error_count:,.1f}"),
            ("SE of a fraction", pct(self.std_error_fraction)),
            (f"min detectable (α={self.alpha:g}/{self.candidates:,}, power {self.power:g})",
             f"{pct(self.min_detectable_fraction)} = {self.min_detectable_count:,.0f} users"
             if math.isfinite(self.min_detectable_count) else pct(math.inf)),
            ("ε per report", str(self.epsilon_per_report)),
            (f"ε per distinct value, {self.reports} report{'s' * (self.reports != 1)}", str(self.epsilon_per_value)),
            (f"ε in all, {self.reports} report{'s' * (self.reports != 1)}", str(self.epsilon_total)),
        ]
        rows[-2:-1] = [(f"ε per distinct value, {self.reports} report{'s' * (self.reports != 1)}, charging={mode}",
                        str(cost)) for mode, cost in self.per_value_by_charging.items()] or rows[-2:-1]
        return "\n".join([key_values(rows)] + [f"note: {s}" for s in self.notes])


def _resolve(protocol: str | ProtocolParams, epsilon: float | None, domain_size: int) -> ProtocolParams:
    if isinstance(protocol, ProtocolParams):
        return protocol
    if epsilon is None:
        raise ValueError("give the protocol's parameters, or ε for the planner to choose them")
    return default_params(protocol, epsilon, domain_size)


def plan(protocol: str | ProtocolParams, *, n: int, domain_size: int, epsilon: float | None = None,
         frequency: float | None = None, alpha: float = 0.05, candidates: int | None = None, power: float = 0.5,
         reports: int = 1, distinct_values: int = 1, f2: float | None = None) -> Plan:
    """Plan one collection: ``protocol`` is a name (with ``epsilon``) or a Params object.

    ``frequency`` is the fraction of users holding the item whose standard error is given (default
    ``1/d``); ``candidates`` (default ``d``) is the Bonferroni ``M``; ``reports`` and
    ``distinct_values`` describe one user over the horizon (e.g. 30 daily reports of 3 values)."""
    n, domain_size = int(n), int(domain_size)
    if n < 1 or domain_size < 2:
        raise ValueError(f"need n >= 1 and domain_size >= 2, got n={n}, domain_size={domain_size}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must be in (0, 1), got alpha={alpha}, power={power}")
    if reports < 1 or distinct_values < 1:
        raise ValueError(f"reports and distinct_values must be >= 1, got {reports}, {distinct_values}")
    params = _resolve(protocol, epsilon, domain_size)
    if getattr(params, "domain_size", None) not in (None, domain_size):
        raise ValueError(f"{params.protocol} parameters are for {params.domain_size} values, the plan for "
                         f"{domain_size}")
    phi = 1.0 / domain_size if frequency is None else float(frequency)
    if not 0.0 <= phi <= 1.0:
        raise ValueError(f"frequency is a fraction in [0, 1], got {frequency}")
    planner = planner_for(params)  # the protocol's answers (ldp.plan.planners)
    m_cand = int(candidates) if candidates is not None else planner.candidates(params, domain_size)
    if m_cand < 1:
        raise ValueError(f"candidates must be >= 1, got {candidates}")
    var = count_variance(params, n, phi * n, domain_size, f2)
    mdc, det_m = planner.min_detectable_count(params, n, domain_size, m_cand, alpha=alpha, power=power, f2=f2,
                                              variance=count_variance)
    notes = planner.notes(params, det_m)
    per_report, per_value, total = params.horizon_cost(reports, distinct_values)
    charges = planner.per_value_by_charging(params, reports)
    return Plan(params.protocol, params, n, domain_size, phi, math.sqrt(var), math.sqrt(var) / n, mdc, mdc / n,
                alpha, det_m, power, params.report_bits, per_report, reports, per_value, total,
                tuple(notes), charges)


def _variance_coefficients(params: ProtocolParams, phi: float, domain_size: int) -> tuple[float, float]:
    """``(a, b)`` with ``Var[count] = a·n + b·n²`` at fraction ``phi`` (exact: two evaluations)."""
    n1, n2 = 1e6, 2e6
    v1, v2 = (count_variance(params, n, phi * n, domain_size) for n in (n1, n2))
    b = max((v2 / n2 - v1 / n1) / (n2 - n1), 0.0)
    return v1 / n1 - b * n1, b


def solve_n(protocol: str | ProtocolParams, target_se: float, *, domain_size: int, epsilon: float | None = None,
            frequency: float | None = None) -> int:
    """The fewest users for a fraction's standard error ``≤ target_se``: ``n = a/(target² − b)``.

    Raises ``ValueError`` when the sketch's collision floor ``√b`` is above the target (raise k or m)."""
    if not 0 < target_se < 1:
        raise ValueError(f"target_se is a fraction's standard error in (0, 1), got {target_se}")
    params = _resolve(protocol, epsilon, domain_size)
    phi = 1.0 / domain_size if frequency is None else float(frequency)
    a, b = _variance_coefficients(params, phi, domain_size)
    if target_se**2 <= b:
        raise ValueError(f"{params.protocol} cannot reach a standard error of {target_se:g} at any n: its hash "
                         f"collisions give a floor of {math.sqrt(b):.3g}; raise num_hashes or width")
    return max(1, math.ceil(a / (target_se**2 - b)))
