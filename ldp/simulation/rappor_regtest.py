"""Google's RAPPOR regression test as data, plus a runner (server/simulation side: numpy).

The cases follow google/rappor ``tests/regtest_spec.py``: 5 distributions × 4 sizes × 5
configurations, named ``r-{dist}-{size}-{config}``, one report per client, k=8, h=2, m=128.
The metrics follow ``tests/compare_dist.R`` and the averaging ``tests/make_summary.py``
(see shared/research/rappor-reference.md §4). Our decoder is :func:`ldp.decoders.rappor_decode.decode`
(lasso, least squares, one-sided tests), not Google's resampled QP, so the numbers are ours.

matplotlib (the ``plot`` extra) is imported only inside :func:`plot_case`.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, cast

import numpy as np

from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import decode
from ldp.encoders.rappor import RapporParams
from ldp.extras import install_hint
from ldp.randomness import as_generator
from ldp.simulation.collect import simulate

__all__ = [
    "DISTRIBUTIONS", "SIZES", "CONFIGS", "PRIVACY", "REMOVE_PATTERN", "Size", "Config", "RegtestCase",
    "CaseResult", "pmf", "cases", "true_counts", "candidates", "case_metrics", "run_case", "plot_case",
]


# -- distributions (Google's ComputePdf in tests/gen_true_values.R), value i = 1..R -------------------
def _unif(r: int) -> np.ndarray:
    return np.full(r, 1.0 / r)


def _exp(r: int) -> np.ndarray:
    rate = 5.0 / r  # R's dexp(i, rate = 5/R)
    return rate * np.exp(-rate * np.arange(1, r + 1))


def _gauss(r: int) -> np.ndarray:
    x = np.arange(1, r + 1) - r / 2  # -R/2+1 .. R/2, R's dnorm(x, sd = R/6)
    sd = r / 6
    return np.exp(-0.5 * (x / sd) ** 2) / (sd * math.sqrt(2 * math.pi))


DISTRIBUTIONS: dict[str, Callable[[int], np.ndarray]] = {
    "unif": _unif,
    "exp": _exp,
    "gauss": _gauss,
    "zipf1": lambda r: 1.0 / np.arange(1, r + 1),
    "zipf1.5": lambda r: 1.0 / np.arange(1, r + 1) ** 1.5,
}


def pmf(dist: str, n_values: int) -> np.ndarray:
    """Normalised pmf of ``dist`` over values ``v1..v{n_values}`` (index 0 is ``v1``)."""
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")
    w = DISTRIBUTIONS[dist](n_values)
    return w / w.sum()


# -- sizes and configurations (tests/regtest_spec.py) ------------------------------------------------
@dataclass(frozen=True)
class Size:
    name: str
    n_values: int
    n_reports: int


@dataclass(frozen=True)
class Config:
    """Bloom filter (k, h, m), privacy (p, q, f), extra candidates as a fraction of the values, removal."""

    name: str
    bloom: tuple[int, int, int]
    privacy: tuple[float, float, float]
    extra: float
    remove: bool


SIZES: dict[str, Size] = {s.name: s for s in (
    Size("tiny", 100, 1_000),  # Google: "test for insufficient data"
    Size("small", 100, 1_000_000),
    Size("medium", 1_000, 10_000_000),
    Size("large", 10_000, 100_000_000),
)}
PRIVACY = {"eps_1_1": (0.39, 0.61, 0.45), "eps_1_5": (0.225, 0.775, 0.0)}
_BLOOM = (8, 2, 128)
CONFIGS: dict[str, Config] = {c.name: c for c in (
    Config("typical", _BLOOM, PRIVACY["eps_1_1"], 0.2, True),
    Config("sharp", _BLOOM, PRIVACY["eps_1_1"], 0.0, False),
    Config("loose", _BLOOM, PRIVACY["eps_1_5"], 0.2, True),
    Config("over_x2", _BLOOM, PRIVACY["eps_1_1"], 2.0, True),
    Config("over_x10", _BLOOM, PRIVACY["eps_1_1"], 10.0, True),
)}
REMOVE_PATTERN = re.compile(r"v[0-9]*9$")  # every 10th value: v9, v19, ...
_PER_REPORT_MAX = 1_000_000


@dataclass(frozen=True)
class RegtestCase:
    name: str
    dist: str
    size: str
    config: str
    params: RapporParams
    n_values: int
    n_reports: int
    extra: float
    remove: bool

    @property
    def num_additional(self) -> int:
        """Extra (absent) candidates, ``int(values × fraction)`` as in regtest_spec.py."""
        return int(self.n_values * self.extra)


def _pick(names: Iterable[str] | None, known: Mapping[str, Any], what: str) -> list[str]:
    chosen = list(known) if names is None else [names] if isinstance(names, str) else list(names)
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; known: {', '.join(known)}")
    return chosen


def cases(sizes: Sequence[str] | str = ("tiny", "small"), dists: Sequence[str] | str | None = None,
          configs: Sequence[str] | str | None = None, mode: str = "ldp") -> list[RegtestCase]:
    """The regtest cases, in Google's order (size, then distribution, then configuration)."""
    out = []
    for s in _pick(sizes, SIZES, "sizes"):
        size = SIZES[s]
        for d in _pick(dists, DISTRIBUTIONS, "distributions"):
            for c in _pick(configs, CONFIGS, "configs"):
                cfg = CONFIGS[c]
                params = RapporParams(*cfg.bloom, *cfg.privacy, mode=mode)
                out.append(RegtestCase(f"r-{d}-{s}-{c}", d, s, c, params, size.n_values, size.n_reports,
                                       cfg.extra, cfg.remove))
    return out


def true_counts(case: RegtestCase, rng: Any = None) -> dict[str, int]:
    """One multinomial draw of the clients' values; only values held by someone (the "actual" ones)."""
    counts = as_generator(rng).multinomial(case.n_reports, pmf(case.dist, case.n_values))
    return {f"v{i + 1}": int(c) for i, c in enumerate(counts) if c > 0}


def candidates(case: RegtestCase) -> list[str]:
    """``v1..vR`` (the whole range, as regtest.sh's print-unique-values), minus every 10th value
    if the config removes them, plus ``num_additional`` absent strings ``v(R+1)..``."""
    values = [f"v{i}" for i in range(1, case.n_values + 1)]
    if case.remove:
        values = [v for v in values if not REMOVE_PATTERN.search(v)]
    return values + [f"v{case.n_values + i}" for i in range(1, case.num_additional + 1)]


# -- metrics (compare_dist.R) -------------------------------------------------------------------------
class CaseMetrics(TypedDict):
    """What :func:`case_metrics` returns."""

    num_actual: int
    num_detected: int
    fp: int
    fn: int
    fp_rate: float
    fn_rate: float
    total_variation: float
    allocated_mass: float


def case_metrics(truth: Mapping[str, int], estimates: Mapping[str, float], detected: Iterable[str],
                 num_additional: int) -> CaseMetrics:
    """FP, FN, their rates, total variation and allocated mass of one decode.

    ``truth``: true counts (values with count 0 are ignored); ``estimates``: estimated counts
    (only the detected ones are used; NaN counts as 0); ``detected``: the reported strings."""
    actual = {v: c for v, c in truth.items() if c > 0}
    n = sum(actual.values())
    det = set(detected)
    p_true = {v: c / n for v, c in actual.items()} if n else {}
    p_est = {v: float(np.nan_to_num(estimates.get(v, 0.0))) / n if n else 0.0 for v in det}
    fp, fn = len(det - actual.keys()), len(actual.keys() - det)
    union = actual.keys() | det
    tv = 0.5 * sum(abs(p_true.get(v, 0.0) - p_est.get(v, 0.0)) for v in union)
    return {
        "num_actual": len(actual), "num_detected": len(det), "fp": fp, "fn": fn,
        "fp_rate": fp / num_additional if num_additional else math.nan,
        "fn_rate": fn / len(actual) if actual else math.nan,
        "total_variation": tv, "allocated_mass": sum(p_est.values()),
    }


@dataclass(frozen=True)
class CaseResult:
    case: str
    n_reports: int
    num_actual: int
    num_candidates: int
    num_additional: int
    num_detected: int
    fp: int
    fn: int
    fp_rate: float
    fn_rate: float
    total_variation: float
    allocated_mass: float
    seconds: float
    method: str
    mode: str
    ci_covered: int = 0  # detected strings whose 95% CI holds the true share (compare_dist.R's num_95CI)
    truth: dict[str, float] = field(default_factory=dict, repr=False, compare=False)  # true shares
    estimated: dict[str, float] = field(default_factory=dict, repr=False, compare=False)  # detected shares
    ci: dict[str, tuple[float, float]] = field(default_factory=dict, repr=False, compare=False)

    def row(self) -> dict[str, Any]:
        """The scalar fields, for a CSV row."""
        skip = {"truth", "estimated", "ci"}
        return {k: v for k, v in self.__dict__.items() if k not in skip}


def run_case(case: RegtestCase, rng: Any = None, method: str | None = None, alpha: float = 0.05,
             correction: str = "bh", mode: str | None = None) -> CaseResult:
    """Simulate one instance of ``case``, decode it against :func:`candidates`, and score it.

    ``method``: ``"per_report"`` up to 1,000,000 reports, else ``"aggregate"`` (exact in law);
    ``mode``: override the case's hashing mode (``"ldp"`` or ``"google"``)."""
    gen = as_generator(rng)
    params = case.params if mode is None else replace(case.params, mode=mode)
    method = method or ("per_report" if case.n_reports <= _PER_REPORT_MAX else "aggregate")
    truth = true_counts(case, gen)
    cands = candidates(case)
    agg = cast(RapporAggregate, simulate(params, truth, method=method, rng=gen))  # RAPPOR params: its aggregate
    start = time.perf_counter()
    est = decode(agg, cands, alpha=alpha, correction=correction)
    seconds = time.perf_counter() - start
    det = np.asarray(est.detected, dtype=bool)
    counts = dict(zip(est.items, est.count.tolist(), strict=True))
    detected = {it for it, d in zip(est.items, det, strict=True) if d}
    met = case_metrics(truth, counts, detected, case.num_additional)
    n = case.n_reports
    p_true = {v: c / n for v, c in truth.items()}
    estimated = {v: float(np.nan_to_num(counts[v])) / n for v in detected}
    lo, hi = est.ci_low / n, est.ci_high / n
    ci = {it: (float(a), float(b)) for it, a, b, d in zip(est.items, lo, hi, det, strict=True) if d}
    covered = sum(1 for v, (a, b) in ci.items() if a < p_true.get(v, 0.0) < b)
    return CaseResult(case.name, n, met["num_actual"], len(cands), case.num_additional, met["num_detected"],
                      met["fp"], met["fn"], met["fp_rate"], met["fn_rate"], met["total_variation"],
                      met["allocated_mass"], seconds, method, params.mode, covered, p_true, estimated, ci)


def plot_case(result: CaseResult, path: Any, top: int = 50) -> None:
    """PNG of true vs estimated shares: the ``top`` values by true share plus false positives,
    with 95% CIs on detected strings (after compare_dist.R's dist.png). Needs matplotlib."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"plot_case needs matplotlib: {install_hint('matplotlib', 'plot')}; "
                          "or run without plots") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = sorted(result.truth, key=lambda v: -result.truth[v])[:top]
    order += sorted((v for v in result.estimated if v not in result.truth), key=lambda v: -result.estimated[v])
    x = np.arange(len(order))
    true = [result.truth.get(v, 0.0) for v in order]
    est = [result.estimated.get(v, 0.0) for v in order]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.22 * len(order)), 4.5))
    ax.bar(x - 0.2, true, width=0.4, label="true", color="#0072B2")
    colours = ["#D55E00" if v not in result.truth else "#E69F00" for v in order]
    ax.bar(x + 0.2, est, width=0.4, label="estimated (detected)", color=colours)
    has_ci = [i for i, v in enumerate(order) if v in result.ci]
    if has_ci:
        mid = np.array([est[i] for i in has_ci])
        lo = np.array([result.ci[order[i]][0] for i in has_ci])
        hi = np.array([result.ci[order[i]][1] for i in has_ci])
        ax.errorbar(x[has_ci] + 0.2, mid, yerr=[np.maximum(mid - lo, 0), np.maximum(hi - mid, 0)], fmt="none",
                    ecolor="black", elinewidth=0.8, capsize=2, label="95% CI")
    ax.set_xticks(x, order, rotation=90, fontsize=7)
    ax.set_ylabel("share of reports")
    ax.set_title(f"{result.case} ({result.method}, {result.mode}): FP={result.fp} FN={result.fn} "
                 f"TV={result.total_variation:.3f} mass={result.allocated_mass:.3f}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
