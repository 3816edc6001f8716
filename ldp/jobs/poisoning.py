"""Poisoning evidence: tests of what the server sees against the law honest reports follow.

Fake users (Cao, Jia and Gong, USENIX Security 2021) send crafted reports to promote target items. Where a
protocol's reports have a known law, the server can test its aggregate (and, where the window's reports are at
hand, e.g. at fold time, the reports themselves) against that law: an honest window passes at the stated
false-alarm rate, a window whose statistics leave the law raises a warning. A test never proves an attack: an
attacker who matches every tested statistic is not caught (``docs/poisoning.md``).

A protocol's laws live in its own module of this package (``<family>_poisoning.py``, a :class:`ReportLaw`
subclass naming its params types), found by scanning, so this module names no protocol. A protocol without one
gets an explicit ``untested`` result, never a silent pass.

Every check is a :class:`LawCheck`; :func:`poisoning_evidence` runs those that apply at a family-wise
false-alarm rate ``alpha`` (Bonferroni: each of ``k`` checks at ``alpha/k``).
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from scipy import stats

from ldp.batch.bits import popcounts
from ldp.lazy import subclasses_in

__all__ = ["DEFAULT_ALPHA", "Evidence", "LawCheck", "ReportLaw", "bernoulli_binomial_pmf", "binomial_excess_check",
           "chi_square_check", "check_reports", "evidence_summary", "law_for", "poisoning_evidence", "popcounts",
           "range_check", "untested", "z_check"]

VERDICTS = ("ok", "suspicious", "untested")
MIN_EXPECTED = 5.0
"""Chi-square cells are merged until each expects at least this many reports."""


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha (the false-alarm rate) must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


@dataclass(frozen=True)
class LawCheck:
    """One test of a window against the honest law.

    ``statistic`` is what was observed (a total, or a chi-square), ``expected`` and ``std`` its honest mean and
    standard deviation (for a range test, the nearest end of the range), ``z`` the standardized distance,
    ``p_value`` the honest probability of a result at least this far; ``verdict`` is ``suspicious`` when
    ``p_value < alpha``, ``ok`` otherwise, ``untested`` when no test applies."""

    name: str
    protocol: str
    reports: int
    statistic: float
    expected: float
    std: float
    z: float
    p_value: float
    alpha: float
    verdict: str
    message: str

    @property
    def suspicious(self) -> bool:
        return self.verdict == "suspicious"

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def untested(protocol: str, reports: int, why: str = "no known-law test for this protocol") -> LawCheck:
    """The explicit result for a protocol (or a window) no test applies to."""
    nan = math.nan
    return LawCheck("none", protocol, reports, nan, nan, nan, nan, nan, nan, "untested", f"{protocol}: {why}")


def _verdict(p_value: float, alpha: float) -> str:
    return "suspicious" if p_value < alpha else "ok"


def z_check(name: str, protocol: str, reports: int, statistic: float, mean: float, variance: float, alpha: float,
            what: str) -> LawCheck:
    """Two-sided normal test of ``statistic`` (a sum of ``reports`` independent terms) against ``mean`` and
    ``variance``."""
    alpha = _check_alpha(alpha)
    sd = math.sqrt(max(variance, 0.0))
    z = (statistic - mean) / sd if sd > 0 else (0.0 if statistic == mean else math.copysign(math.inf, statistic - mean))
    p = float(2.0 * stats.norm.sf(abs(z)))
    verdict = _verdict(p, alpha)
    word = "above" if z > 0 else "below"
    msg = (f"{protocol}: {what} {statistic:,.0f} is {abs(z):.1f} sd {word} the honest {mean:,.0f} "
           f"(p = {p:.2g}, {verdict} at {alpha:g})")
    return LawCheck(name, protocol, reports, float(statistic), float(mean), sd, float(z), p, alpha, verdict, msg)


def range_check(name: str, protocol: str, reports: int, statistic: float, low: float, high: float,
                max_variance: float, alpha: float, what: str) -> LawCheck:
    """Test of ``statistic`` against an honest mean known only to lie in ``[low, high]``, with variance at most
    ``max_variance``: ``z`` is the distance outside the range in standard deviations (0 inside) and the
    p-value ``2·Φ(−|z|)`` bounds the honest probability of a result that far out (false alarms ``<= alpha``)."""
    alpha = _check_alpha(alpha)
    sd = math.sqrt(max(max_variance, 0.0))
    nearest = min(max(statistic, low), high)
    gap = statistic - nearest
    z = gap / sd if sd > 0 else (0.0 if gap == 0 else math.copysign(math.inf, gap))
    p = float(min(1.0, 2.0 * stats.norm.sf(abs(z))))
    verdict = _verdict(p, alpha)
    where = "inside" if gap == 0 else f"{abs(z):.1f} sd {'above' if gap > 0 else 'below'}"
    msg = (f"{protocol}: {what} {statistic:,.0f} is {where} the honest range [{low:,.0f}, {high:,.0f}] "
           f"(p <= {p:.2g}, {verdict} at {alpha:g})")
    return LawCheck(name, protocol, reports, float(statistic), float(nearest), sd, float(z), p, alpha, verdict, msg)


def binomial_excess_check(name: str, protocol: str, reports: int, count: int, trials: int, prob: float,
                          alpha: float, what: str, *, tests: int = 1) -> LawCheck:
    """One-sided exact test of ``count`` events among ``trials`` independent ones, each of honest probability at
    most ``prob``: the count is then dominated by ``Binomial(trials, prob)``, so ``p = P(Bin(trials, prob) >=
    count)`` bounds the honest probability of a count this high. ``tests``: the count is the most extreme of that
    many (Bonferroni: ``p`` times ``tests``, at most 1)."""
    alpha = _check_alpha(alpha)
    prob = min(max(float(prob), 0.0), 1.0)
    mean = trials * prob
    sd = math.sqrt(trials * prob * (1.0 - prob))
    gap = count - mean
    z = gap / sd if sd > 0 else (0.0 if gap <= 0 else math.inf)
    p = float(min(1.0, max(tests, 1) * float(stats.binom.sf(count - 1, trials, prob)))) if count > 0 else 1.0
    verdict = _verdict(p, alpha)
    extreme = f"; the most extreme of {tests}, Bonferroni" if tests > 1 else ""
    msg = (f"{protocol}: {what}: {count:,} of {trials:,} where honest reports give at most {mean:,.1f} expected "
           f"(p <= {p:.2g}{extreme}, {verdict} at {alpha:g})")
    return LawCheck(name, protocol, reports, float(count), mean, sd, float(z), p, alpha, verdict, msg)


def bernoulli_binomial_pmf(p: float, q: float, d: int) -> npt.NDArray[np.float64]:
    """Law of ``Bernoulli(p) + Binomial(d − 1, q)`` on ``0..d`` (the ones of an honest unary report, the support
    size of an honest local-hashing report with ``q = 1/g``)."""
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    b = stats.binom.pmf(np.arange(d), d - 1, q)
    out = np.zeros(d + 1)
    out[:-1] += (1.0 - p) * b
    out[1:] += p * b
    return out


def _merged_cells(expected: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Cell index of each value: consecutive values merged left to right until a cell expects >= MIN_EXPECTED;
    a short last cell joins the one before."""
    cell = np.empty(expected.size, np.int64)
    c, acc = 0, 0.0
    for i, e in enumerate(expected):
        cell[i] = c
        acc += e
        if acc >= MIN_EXPECTED:
            c, acc = c + 1, 0.0
    if acc < MIN_EXPECTED and c > 0:  # the open last cell is short: join it to the previous one
        cell[cell == c] = c - 1
    return cell


def chi_square_check(name: str, protocol: str, values: npt.ArrayLike, pmf: npt.ArrayLike, alpha: float,
                     what: str) -> LawCheck:
    """Pearson's chi-square test of the per-report ``values`` (integers in ``[0, len(pmf))``) against ``pmf``,
    cells merged so each expects at least :data:`MIN_EXPECTED` reports. ``z`` is the Wilson–Hilferty normal
    equivalent of the statistic; ``expected`` and ``std`` are its degrees of freedom and ``√(2·df)``."""
    alpha = _check_alpha(alpha)
    v = np.asarray(values)
    law = np.asarray(pmf, dtype=np.float64)
    if v.size and (v.dtype.kind not in "iu" or v.min() < 0 or v.max() >= law.size):
        raise ValueError(f"values must be integers in [0, {law.size})")
    n = int(v.size)
    expected = n * law
    cell = _merged_cells(expected)
    cells = int(cell.max()) + 1 if n else 0
    if cells < 2:
        return untested(protocol, n, f"{what}: too few reports for a chi-square test ({n})")
    obs = np.bincount(cell[v], minlength=cells).astype(np.float64)
    exp = np.bincount(cell, weights=expected, minlength=cells)
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    df = cells - 1
    p = float(stats.chi2.sf(chi2, df))
    z = float(((chi2 / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df)))
    verdict = _verdict(p, alpha)
    top = int(np.argmax(obs - exp))
    msg = (f"{protocol}: {what} of {n:,} reports: chi-square {chi2:,.1f} on {df} df (p = {p:.2g}, {verdict} at "
           f"{alpha:g}); most over-represented: {int(np.flatnonzero(cell == top)[0])}"
           f"{'' if (cell == top).sum() == 1 else '+'} ({obs[top]:,.0f} seen, {exp[top]:,.0f} expected)")
    return LawCheck(name, protocol, n, chi2, float(df), math.sqrt(2 * df), z, p, alpha, verdict, msg)


class ReportLaw:
    """The honest law of a protocol's reports, as tests. A family subclasses this in
    ``ldp/jobs/<family>_poisoning.py`` and sets :attr:`params_type`; each method returns its checks, every one
    at false-alarm rate ``alpha``, and says how many it will return (so the caller can split its ``alpha``)."""

    params_type: ClassVar[type | tuple[type, ...]] = ()

    def aggregate_check_count(self, aggregate: Any) -> int:
        """How many :meth:`aggregate_checks` returns for ``aggregate``: one when a family defines them (override
        otherwise)."""
        return int(type(self).aggregate_checks is not ReportLaw.aggregate_checks)

    def covers_reports(self, aggregate: Any) -> bool:
        """Whether ``aggregate`` keeps per-report statistics that already run the per-report checks of the reports
        it folded (so given reports would only repeat them). No by default."""
        return False

    def report_check_count(self, params: Any) -> int:
        """How many :meth:`report_checks` returns: one when a family defines them (override otherwise)."""
        return int(type(self).report_checks is not ReportLaw.report_checks)

    def aggregate_checks(self, aggregate: Any, alpha: float) -> list[LawCheck]:
        """Tests of the folded aggregate alone."""
        return []

    def report_checks(self, params: Any, columns: Mapping[str, Any], alpha: float) -> list[LawCheck]:
        """Tests of one window's reports (``columns`` as in a :class:`~ldp.reports.ReportBatch`)."""
        return []


@cache
def _laws() -> dict[type, ReportLaw]:
    found: dict[type, ReportLaw] = {}
    for law in subclasses_in(__name__.rpartition(".")[0], ReportLaw, suffix="_poisoning"):
        for t in law.params_type if isinstance(law.params_type, tuple) else (law.params_type,):
            if t in found:
                raise RuntimeError(f"two poisoning laws serve {t.__name__}")
            found[t] = law()
    return found


def law_for(params: Any) -> ReportLaw | None:
    """The :class:`ReportLaw` of ``params``'s type (exact type: a subclass may change the law), or ``None``."""
    return _laws().get(type(params))


@dataclass(frozen=True)
class Evidence:
    """Every check of one window, each at ``alpha / len(checks)``: the window is ``suspicious`` when any is, so an
    honest window raises a false alarm with probability at most ``alpha``."""

    protocol: str
    reports: int
    alpha: float
    checks: tuple[LawCheck, ...]

    @property
    def verdict(self) -> str:
        if any(c.suspicious for c in self.checks):
            return "suspicious"
        return "ok" if any(c.verdict == "ok" for c in self.checks) else "untested"

    @property
    def suspicious(self) -> bool:
        return self.verdict == "suspicious"

    @property
    def message(self) -> str:
        """One line: the verdict and the most telling check."""
        if self.verdict == "untested":
            return self.checks[0].message if self.checks else f"{self.protocol}: no known-law test"
        worst = min((c for c in self.checks if c.verdict != "untested"), key=lambda c: c.p_value)
        head = "possible poisoning" if self.suspicious else "reports match the honest law"
        return f"{head} (family-wise false-alarm rate {self.alpha:g}): {worst.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "reports": self.reports, "alpha": self.alpha, "verdict": self.verdict,
                "message": self.message, "checks": [c.to_dict() for c in self.checks]}


def _columns(reports: Any) -> Mapping[str, Any]:
    cols = getattr(reports, "columns", reports)
    if not isinstance(cols, Mapping):
        raise TypeError(f"reports must be a ReportBatch or a mapping of columns, got {type(reports).__name__}")
    return cols


def poisoning_evidence(aggregate: Any, reports: Any = None, *, alpha: float = 0.01) -> Evidence:
    """The checks of one window: its folded ``aggregate`` and, when given, its ``reports`` (a
    :class:`~ldp.reports.ReportBatch` or its columns: the same reports the aggregate folded, e.g. at fold
    time; unused where the aggregate's own per-report statistics cover them, as RAPPOR's do), at family-wise
    false-alarm rate ``alpha``."""
    alpha = _check_alpha(alpha)
    params = aggregate.params
    n = int(aggregate.n)
    law = law_for(params)
    if law is None:
        return Evidence(params.protocol, n, alpha, (untested(params.protocol, n),))
    cols = None if reports is None or law.covers_reports(aggregate) else _columns(reports)
    k = law.aggregate_check_count(aggregate) + (0 if cols is None else law.report_check_count(params))
    if k == 0:
        return Evidence(params.protocol, n, alpha, (untested(params.protocol, n),))
    checks = law.aggregate_checks(aggregate, alpha / k)
    if cols is not None:
        checks += law.report_checks(params, cols, alpha / k)
    return Evidence(params.protocol, n, alpha, tuple(checks))


DEFAULT_ALPHA = 0.01
"""The family-wise false-alarm rate of the checks the ingest service's dashboard and ``ldp decode`` show per window."""


def evidence_summary(aggregate: Any, *, alpha: float = DEFAULT_ALPHA) -> dict[str, Any] | None:
    """The evidence of one aggregate as plain JSON, as the dashboard keeps it and ``ldp decode`` prints it:
    ``verdict``, ``message``, ``alpha``, the smallest ``p_value`` and each check's ``name``, ``verdict`` and
    ``p_value``; ``None`` for an empty aggregate."""
    if aggregate.n == 0:
        return None
    ev = poisoning_evidence(aggregate, alpha=alpha)
    tested = [c for c in ev.checks if c.verdict != "untested"]
    return {"verdict": ev.verdict, "message": ev.message, "alpha": alpha,
            "p_value": min(c.p_value for c in tested) if tested else None,
            "checks": [{"name": c.name, "verdict": c.verdict, "p_value": None if c.verdict == "untested" else
                        c.p_value} for c in ev.checks]}


def check_reports(params: Any, reports: Any, *, alpha: float = 0.01) -> Evidence:
    """The per-report checks alone of one window's ``reports`` (a batch or its columns), family-wise ``alpha``."""
    alpha = _check_alpha(alpha)
    cols = _columns(reports)
    first = next(iter(cols.values()), ())
    n = len(first)
    law = law_for(params)
    k = 0 if law is None else law.report_check_count(params)
    if law is None or k == 0:
        return Evidence(params.protocol, n, alpha, (untested(params.protocol, n, "no per-report law test"),))
    return Evidence(params.protocol, n, alpha, tuple(law.report_checks(params, cols, alpha / k)))
