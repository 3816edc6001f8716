"""Counting queries, local vs central: seed 004's smoker experiment and its extension to every protocol.

**Seed 004** (§3.2.2–3.2.3, Figures 3.6 and 3.8): 20% of 3,000 people smoke; subsamples of
``n0 = 5, 10, …, 3000`` people, each with exactly ``n0/5`` smokers. Randomized response with fair
coins (``BinaryRRParams.forced_response()``: ``p = 1/4``, ``q = 3/4``, ε = ln 3) estimates the
fraction by eq. 3.7; the Laplace mechanism adds ``Lap(1/ε)`` to the count (sensitivity 1) and divides
by ``n0``. The estimate depends on a subsample only through ``(n0, smokers)``, so each one is an
exact aggregate-level draw (``RRAggregate.simulate``).

**Extension**: the standard error of a count (and of a fraction = count/n) against n and ε, for
binary RR, GRR, RAPPOR, CMS and HCMS, beside central Laplace and Gaussian releases of the same
counts, with the decoders' exact variances as theory.

Neighbouring relation of the central mechanisms: **replace one person's value** (bounded DP, n
public), the relation LDP itself protects. One count then has sensitivity 1; a d-bin histogram has
L1 sensitivity 2 and L2 sensitivity √2 (add/remove one person: 1 and 1, ``relation="add-remove"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.decoders.randomized_response import RRAggregate, rr_variance
from ldp.encoders.base import ProtocolParams
from ldp.encoders.cms import CmsParams
from ldp.encoders.hcms import HcmsParams
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.encoders.rappor import RapporParams
from ldp.protocols import get_protocol
from ldp.randomness import as_generator
from ldp.regression.mechanisms import analytic_gaussian_sigma, laplace_scale
from ldp.simulation.collect import zipf

__all__ = [
    "LOCAL_PROTOCOLS", "CENTRAL_MECHANISMS", "RELATIONS", "LocalProtocol", "CountingSetup", "seed004_rows",
    "seed004_errors", "seed004_slopes", "loglog_slope", "central_noise_sd", "local_params", "protocol_rows",
]

CENTRAL_MECHANISMS = ("laplace", "gaussian")
RELATIONS = ("replace-one", "add-remove")
KURTOSIS_BOUND = 6.0  # Laplace's kurtosis; RR's, GRR's and the sketches' errors are closer to normal (3)
SKETCH_SEED_STEP = 7919  # hash_seed of trial t is 7919·t: a new hash family per trial (> k, families never overlap)


def check_count(value: Any, name: str) -> int:
    """``value`` as an int >= 1, or a ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


# -- seed 004 ------------------------------------------------------------------------------------------
def seed004_rows(*, sizes: npt.ArrayLike | None = None, trials: int = 1, rng: Any = None,
                 fraction: float = 0.2) -> list[dict[str, Any]]:
    """One row per (trial, mechanism, subsample size ``n``): the estimated count and fraction, the
    errors, and the theoretical SDs — RR: ``sqrt(rr_variance)`` (count), ``/n`` (fraction);
    Laplace: ``√2·b`` with ``b = 1/ε`` (count, whatever n), ``√2·b/n`` (fraction)."""
    params = BinaryRRParams.forced_response()
    eps = params.epsilon  # ln 3
    b = laplace_scale(1.0, eps)
    n_all = np.arange(5, 3001, 5) if sizes is None else np.asarray(sizes, dtype=np.int64)
    pos = np.rint(n_all * fraction).astype(np.int64)
    if n_all.ndim != 1 or n_all.min() < 1 or not np.allclose(pos, n_all * fraction):
        raise ValueError(f"every size times the fraction {fraction} must be a positive whole number of people")
    check_count(trials, "trials")
    gen = as_generator(rng)
    rr_sd = np.sqrt([rr_variance(params, [n - s, s])[1] for n, s in zip(n_all.tolist(), pos.tolist(), strict=True)])
    rows: list[dict[str, Any]] = []
    for t in range(trials):
        lap = pos + gen.laplace(0.0, b, n_all.size)
        rr = np.array([RRAggregate.simulate(params, [n - s, s], gen).estimate().count[1]
                       for n, s in zip(n_all.tolist(), pos.tolist(), strict=True)])
        for mech, est, sd in (("rr", rr, rr_sd), ("laplace", lap, np.full(n_all.size, math.sqrt(2) * b))):
            err = est - pos
            rows.extend({"mechanism": mech, "trial": t, "n": int(n), "epsilon": eps, "true_count": int(s),
                         "estimate_count": float(e), "estimate_fraction": float(e / n), "error_count": float(r),
                         "abs_error_count": abs(float(r)), "abs_error_fraction": abs(float(r)) / n,
                         "theory_sd_count": float(v), "theory_sd_fraction": float(v / n)}
                        for n, s, e, r, v in zip(n_all.tolist(), pos.tolist(), est, err, sd, strict=True))
    return rows


def seed004_errors(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (mechanism, n): RMSE of the count and of the fraction over the trials, next to the theory."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["mechanism"], r["n"]), []).append(r)
    out = []
    for (mech, n), rs in sorted(groups.items()):
        mse = float(np.mean([r["error_count"] ** 2 for r in rs]))
        sd = rs[0]["theory_sd_count"]
        out.append({"mechanism": mech, "n": n, "trials": len(rs), "rmse_count": math.sqrt(mse),
                    "theory_sd_count": sd, "rmse_fraction": math.sqrt(mse) / n, "theory_sd_fraction": sd / n,
                    "mean_abs_error_fraction": float(np.mean([r["abs_error_fraction"] for r in rs]))})
    return out


def loglog_slope(x: Any, y: Any) -> tuple[float, float]:
    """``(slope, Σ(log x − mean)²)`` of the least-squares line of ``log y`` on ``log x``."""
    lx, ly = np.log(np.asarray(x, dtype=np.float64)), np.log(np.asarray(y, dtype=np.float64))
    sxx = float(((lx - lx.mean()) ** 2).sum())
    return float(((lx - lx.mean()) * (ly - ly.mean())).sum() / sxx), sxx


def seed004_slopes(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Slope of log RMSE on log n per mechanism and scale, beside theory (RR fraction −1/2, count
    +1/2; Laplace fraction −1, count 0), with the slope's standard error: each point's
    ``log RMSE = ½·log(mean of T squared errors)`` has variance ``≈ (κ−1)/(4T)`` (delta method,
    kurtosis ``κ ≤ 6``), so ``SE = sqrt((κ−1)/(4T)/Σ(log n − mean)²)``."""
    theory = {("rr", "count"): 0.5, ("rr", "fraction"): -0.5, ("laplace", "count"): 0.0, ("laplace", "fraction"): -1.0}
    out = []
    for (mech, scale), expected in theory.items():
        rs = [r for r in errors if r["mechanism"] == mech and r[f"rmse_{scale}"] > 0]  # log 0: RR can hit exactly
        if len(rs) < 2:
            continue
        slope, sxx = loglog_slope([r["n"] for r in rs], [r[f"rmse_{scale}"] for r in rs])
        trials = min(r["trials"] for r in rs)
        se = math.sqrt((KURTOSIS_BOUND - 1) / (4 * trials) / sxx)
        out.append({"mechanism": mech, "scale": scale, "slope": slope, "theory_slope": expected, "slope_se": se,
                    "points": len(rs), "trials": trials})
    return out


# -- every protocol ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LocalProtocol:
    """One local protocol of the comparison: its parameters at ε = 1 (each ε of a sweep recalibrates them with
    :meth:`~ldp.encoders.base.ProtocolParams.with_epsilon`), whether it counts the yes/no attribute (else the
    ``d`` values), and how the text summary (``name``) and the figures (``label``, ``color``) show it."""

    params: ProtocolParams
    binary: bool
    name: str
    label: str
    color: str

    @property
    def protocol(self) -> str:
        return self.params.protocol


@dataclass(frozen=True)
class CountingSetup:
    """The populations and protocol parameters of the extension.

    Binary RR: a yes/no attribute held by ``binary_fraction`` of the users (its count of "yes").
    The others: ``d`` values with Zipf(``zipf_s``) frequencies (exact largest-remainder counts), every
    value's count estimated. RAPPOR: one-time RAPPOR (no IRR: ``p = 0``, ``q = 1``, so ε₁ = ε∞),
    ``f = 2/(1 + e^{ε/(2h)})`` so that ε∞ = 2h·ln((1−f/2)/(f/2)) = ε, cohorts split evenly."""

    d: int = 16
    zipf_s: float = 1.1
    binary_fraction: float = 0.2
    rappor_bits: int = 32
    rappor_hashes: int = 2
    rappor_cohorts: int = 8
    sketch_hashes: int = 32
    sketch_width: int = 1024
    delta: float = 1e-8
    relation: str = "replace-one"

    def values(self) -> list[str]:
        return [f"value-{i:03d}" for i in range(self.d)]

    def local(self) -> tuple[LocalProtocol, ...]:
        """The local protocols compared, in order (the experiment's data): binary RR on the yes/no attribute and
        GRR on the ``d`` values at the planner's parameters (``for_epsilon``); one-time RAPPOR and the sketches
        with this setup's Bloom filter and sketch sizes."""
        d = self.d
        rappor = replace(RapporParams.for_epsilon(1.0, d), num_bloombits=self.rappor_bits,
                         num_hashes=self.rappor_hashes, num_cohorts=self.rappor_cohorts).with_epsilon(1.0)
        cms, hcms = (replace(cls.for_epsilon(1.0, d), num_hashes=self.sketch_hashes, width=self.sketch_width)
                     for cls in (CmsParams, HcmsParams))
        return (LocalProtocol(BinaryRRParams.for_epsilon(1.0, 2), True, "randomized response", "binary RR", "tab:blue"),
                LocalProtocol(GRRParams.for_epsilon(1.0, d), False, "GRR", "GRR", "tab:blue"),
                LocalProtocol(rappor, False, "RAPPOR", "RAPPOR (one-time)", "tab:purple"),
                LocalProtocol(cms, False, "CMS", "CMS", "tab:green"),
                LocalProtocol(hcms, False, "HCMS", "HCMS", "tab:olive"))

    def counts(self, n: int, *, binary: bool) -> np.ndarray:
        """True counts: ``[no, yes]`` for the yes/no attribute (``yes = round(fraction·n)``), Zipf counts of the
        ``d`` values otherwise."""
        if binary:
            yes = int(round(self.binary_fraction * n))
            return np.array([n - yes, yes], dtype=np.int64)
        return zipf(self.d, self.zipf_s).counts(int(n), exact=True)


LOCAL_PROTOCOLS = tuple(lp.protocol for lp in CountingSetup().local())


def central_noise_sd(mechanism: str, epsilon: float, *, binary: bool, delta: float = 1e-8,
                     relation: str = "replace-one") -> float:
    """SD of the noise on each count of a central release at ε: Laplace ``√2·Δ₁/ε`` (Dwork & Roth
    Thm 3.6), Gaussian the analytic σ for ``Δ₂`` at (ε, δ) (Balle & Wang 2018). One count (binary):
    Δ₁ = Δ₂ = 1; a histogram: replace-one Δ₁ = 2, Δ₂ = √2, add/remove 1 and 1."""
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    hist = not binary and relation == "replace-one"
    if mechanism == "laplace":
        return math.sqrt(2) * laplace_scale(2.0 if hist else 1.0, epsilon)
    if mechanism == "gaussian":
        return analytic_gaussian_sigma(float(epsilon), float(delta), math.sqrt(2) if hist else 1.0)
    raise ValueError(f"mechanism must be one of {CENTRAL_MECHANISMS}, got {mechanism!r}")


def _chosen(protocols: Sequence[str] | None, setup: CountingSetup) -> list[LocalProtocol]:
    """The setup's local protocols named in ``protocols`` (in that order; ``None``: all of them)."""
    known = {lp.protocol: lp for lp in setup.local()}
    if protocols is None:
        return list(known.values())
    unknown = [p for p in protocols if p not in known]
    if unknown:
        raise ValueError(f"protocol must be one of {tuple(known)}, got {unknown[0]!r}")
    return [known[p] for p in protocols]


def local_params(protocol: str, epsilon: float, setup: CountingSetup = CountingSetup(), trial: int = 0) -> Any:
    """The protocol's parameters at ε (a hash family of its own for each ``trial``: ``hash_seed = 7919·trial``
    where the parameters have one)."""
    lp = _chosen([protocol], setup)[0]
    return lp.params.with_epsilon(epsilon).with_hash_seed(SKETCH_SEED_STEP * trial)


def _row(protocol: str, kind: str, n: int, eps: float, err: np.ndarray, var: np.ndarray,
         extra: dict[str, Any]) -> dict[str, Any]:
    """Summary of a (trials × items) error table against the exact variances: RMSEs, and the ratio
    ``mean_t mean_i err²/Var`` with its standard error ``sd_t/√T`` over the independent trials."""
    z2 = (err**2 / var).mean(axis=1)
    trials = err.shape[0]
    rmse, theory = math.sqrt(float((err**2).mean())), math.sqrt(float(var.mean()))
    return {"protocol": protocol, "kind": kind, "n": int(n), "epsilon": float(eps), "trials": trials,
            "items": err.shape[1], "rmse_count": rmse, "theory_se_count": theory, "rmse_fraction": rmse / n,
            "theory_se_fraction": theory / n, "mse_ratio": float(z2.mean()),
            "mse_ratio_se": float(z2.std(ddof=1) / math.sqrt(trials)) if trials > 1 else math.nan,
            "per_user_variance": float(var.mean()) / n if kind == "local" else math.nan, **extra}


def protocol_rows(*, ns: Sequence[int], epsilons: Sequence[float], trials: int, rng: Any = None,
                  protocols: Sequence[str] | None = None, setup: CountingSetup = CountingSetup(),
                  sweep: str = "") -> list[dict[str, Any]]:
    """One row per (protocol or central mechanism, n, ε): simulated RMSE of the counts over
    ``trials`` collections beside the exact standard error (local: the decoders' variances,
    ``Aggregate.simulate_estimates``; central: the noise SD). ``protocols``: names among the setup's
    local protocols (default: all, :data:`LOCAL_PROTOCOLS`). The central releases are listed for both
    domains: a yes/no protocol (binary RR) compares with one count, its "yes" (``domain = 2``), the
    others with a d-bin histogram."""
    check_count(trials, "trials")
    if not len(ns) or min(ns) < 1:
        raise ValueError(f"ns must be user counts >= 1, got {list(ns)!r}")
    chosen = _chosen(protocols, setup)
    gen = as_generator(rng)
    values = setup.values()
    rows = []
    for n in ns:
        for eps in epsilons:
            for lp in chosen:
                truth = setup.counts(int(n), binary=lp.binary)
                items = slice(1, None) if lp.binary else slice(None)  # yes/no: the count of "yes"
                aggregate = get_protocol(lp.protocol).aggregate_type
                params_eps = lp.params.with_epsilon(eps)
                err, var = [], None
                for t in range(trials):
                    params = params_eps.with_hash_seed(SKETCH_SEED_STEP * t)
                    est, var = aggregate.simulate_estimates(params, truth, gen, values=values)
                    err.append(est[items] - truth[items])
                    var = var[items]
                domain = 2 if lp.binary else setup.d
                rows.append(_row(lp.protocol, "local", n, eps, np.array(err), np.asarray(var, dtype=np.float64),
                                 {"domain": domain, "delta": 0.0, "sweep": sweep}))
            domains = [b for b, wanted in ((True, any(lp.binary for lp in chosen)),
                                           (False, not all(lp.binary for lp in chosen))) if wanted]
            for binary in domains:
                items_n = 1 if binary else setup.d
                for mech in CENTRAL_MECHANISMS:
                    sd = central_noise_sd(mech, eps, binary=binary, delta=setup.delta, relation=setup.relation)
                    noise = gen.laplace(0.0, sd / math.sqrt(2), (trials, items_n)) if mech == "laplace" \
                        else gen.normal(0.0, sd, (trials, items_n))
                    rows.append(_row(mech, "central", n, eps, noise, np.full(items_n, sd**2),
                                     {"domain": 2 if binary else setup.d,
                                      "delta": setup.delta if mech == "gaussian" else 0.0, "sweep": sweep}))
    return rows
