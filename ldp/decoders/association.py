"""Association analysis: the joint distribution of two variables reported by the same clients, by EM.

Each client sends one report of variable A and one of B, each with its own protocol: one whose aggregate
gives the likelihood of a report (:meth:`Aggregate.report_loglik <ldp.decoders.base.Aggregate.report_loglik>`,
for the params types of its ``report_loglik_types``; :func:`joint_protocols`: RAPPOR, GRR, binary RR, OUE and
SUE). Given the values ``(u, v)`` the two reports are independent, so a pair's likelihood under the joint table
``π`` is ``D = L_A[r_A] π L_B[r_B]ᵀ``, ``L[r, u] = Pr[report r | value u]``:

* RAPPOR, candidate ``u`` with Bloom bits ``B`` in the report's cohort: ``Π_{i∈B} q*^{r_i}(1−q*)^{1−r_i} ·
  Π_{i∉B} p*^{r_i}(1−p*)^{1−r_i}``. An open-domain variable's values are candidate strings, and the optional
  **other** value (``other=True``) any string not among them (for RAPPOR: ``h`` uniform hash positions,
  averaged exactly; :mod:`ldp.decoders.rappor_likelihood`).
* GRR: ``p`` if ``r = u``, else ``q``; binary RR: ``q^r(1−q)^{1−r}`` for 1, ``p^r(1−p)^{1−r}`` for 0;
  OUE/SUE: bit ``u`` is 1 w.p. ``p``, every other bit w.p. ``q`` (all realized probabilities).

Identical reports share a likelihood row and identical pairs are grouped with their counts; the EM
(:mod:`ldp.batch.association`, SQUAREM-accelerated) maximizes ``Σ n_j log D_j`` over the simplex.

Standard errors (``se=``):

* ``"bootstrap"`` (default): the nonparametric bootstrap over clients — ``replicates`` multinomial
  re-weightings of the distinct pairs, each refitted by EM from the product of its own fitted
  marginals (:func:`~ldp.batch.association.independence_start`; all replicates in one stacked EM).
  It needs no ``K × K`` matrix (``K = d_A·d_B`` cells: 10⁴ for 100 × 100, whose information
  matrix alone is 800 MB), respects the simplex by construction, and is calibrated in the tests.
* ``"information"``: the observed information (Google's ``Σ x xᵀ/(xᵀπ̂)²``) in the free parameters of
  ``π``: cells below ``1e-9`` are held at 0 (boundary), the largest cell is ``1 − Σ others``, and the
  covariance is the inverse of ``Hᵀ diag(n) H`` with ``H = (x_c − x_ref)/D``. Exact asymptotics, but it
  costs ``J·K²``: for small tables only (refused above :data:`INFORMATION_WORK`).

Intervals are ``π̂ ± z·SE`` clipped to [0, 1]. Budget: a client sends two reports, so the pair costs the
sum of their costs (sequential composition, :func:`pair_cost`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.batch import check_candidates
from ldp.batch.association import EMFit, PairData, em_fit, independence_start
from ldp.decoders.tabular import ResultTable
from ldp.encoders.base import ProtocolParams
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import as_generator
from ldp.reports import Report, ReportBatch

__all__ = ["Variable", "Association", "associate", "pair_cost", "report_loglik", "joint_protocols", "SE_METHODS"]

Float = npt.NDArray[np.float64]
Int = npt.NDArray[np.int64]

SE_METHODS = ("bootstrap", "information", "none")
INFORMATION_WORK = 5e9
"""Largest ``J·K²`` (distinct pairs × squared free cells) the ``"information"`` method accepts."""
OTHER = "(other)"


@cache
def joint_protocols() -> tuple[str, ...]:
    """The registered protocols a variable may use: those whose aggregate gives their reports' likelihood
    (their params type is among its ``report_loglik_types``)."""
    from ldp.protocols import protocols

    return tuple(name for name, p in protocols().items()
                 if p.aggregate_type is not None and p.params_type in p.aggregate_type.report_loglik_types)


def __getattr__(name: str) -> Any:
    """``PROTOCOLS`` (deprecated, kept for one release): :func:`joint_protocols`, computed on first use (the
    registry imports every decoder, so not at import)."""
    if name == "PROTOCOLS":
        return joint_protocols()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Variable:
    """One variable of the pair: its protocol parameters, the RAPPOR candidates, and whether to add "other"."""

    params: ProtocolParams
    candidates: Sequence[str | bytes] | None = None
    other: bool = False

    def __post_init__(self) -> None:
        pr = self.params
        if pr.protocol not in joint_protocols():
            raise ValueError(f"association supports the protocols {joint_protocols()}, got {pr.protocol!r}")
        _ = pr.privacy_cost  # refuses non-private (e.g. p* = 0) RAPPOR parameters: likelihoods must be > 0
        if pr.domain_size is None:  # an open domain: the values are candidate strings
            if self.candidates is None:
                raise ValueError(f"a {pr.protocol} variable (an open domain) needs its candidate strings")
            object.__setattr__(self, "candidates", tuple(check_candidates(self.candidates)))
            if not self.candidates and not self.other:
                raise ValueError(f"a {pr.protocol} variable needs at least one candidate (or other=True)")
        elif self.candidates is not None or self.other:
            raise ValueError(f"{pr.protocol} has a fixed domain: no candidates or 'other' category")

    @cached_property
    def labels(self) -> list[str]:
        """The values estimated: candidates (+ ``"(other)"``), or a fixed domain's labels (indices as strings)."""
        pr = self.params
        if pr.domain_size is None:
            names = [c if isinstance(c, str) else c.decode("utf-8", "backslashreplace") for c in self.candidates or ()]
            return names + [OTHER] * self.other
        return [pr.label_of(i) for i in range(pr.domain_size)]

    def loglik(self, cols: dict[str, Any]) -> Float:
        """``log Pr[report | value]`` (reports × values) for report columns: the protocol's aggregate says
        (:meth:`~ldp.decoders.base.Aggregate.report_loglik`)."""
        from ldp.protocols import get_protocol

        aggregate = get_protocol(self.params.protocol).aggregate_type
        out: Float = aggregate.report_loglik(self.params, cols, self.candidates or (), self.other)
        return out

    def columns(self, reports: Any) -> dict[str, Any]:
        """The report columns from a :class:`ReportBatch`, a sequence of :class:`Report` or a column mapping."""
        pr = self.params
        if isinstance(reports, ReportBatch):
            if reports.protocol != pr.protocol or reports.fingerprint != pr.fingerprint:
                raise ValueError(f"reports are {reports.protocol}/{reports.fingerprint}, expected "
                                 f"{pr.protocol}/{pr.fingerprint} (other parameters?)")
            cols = dict(reports.columns)
        elif isinstance(reports, Mapping):
            cols = dict(reports)
        elif isinstance(reports, Sequence) and not isinstance(reports, (str, bytes)):
            for r in reports:
                if not isinstance(r, Report):
                    raise TypeError(f"reports must be Report objects, got {type(r).__name__}")
                pr.validate(r)
            cols = {f.name: (np.array([r.payload[f.name] for r in reports], dtype=np.int64) if f.kind == "uint" else
                             _pack([r.payload[f.name] for r in reports], f.size)) for f in pr.schema}
        else:
            raise TypeError(f"reports must be a ReportBatch, a sequence of Reports or a column mapping, "
                            f"got {type(reports).__name__}")
        for f in pr.schema:
            if f.name not in cols:
                raise ValueError(f"{pr.protocol} reports need the column {f.name!r}")
            col = np.asarray(cols[f.name])
            if f.kind == "uint" and col.size and (col.ndim != 1 or col.dtype.kind not in "iu" or col.min() < 0
                                                  or col.max() >= f.size):
                raise ValueError(f"column {f.name!r} must be 1-D integers in [0, {f.size})")
            if f.kind == "bits" and (col.ndim != 2 or col.shape[1] != (f.size + 7) // 8 or col.dtype != np.uint8):
                raise ValueError(f"column {f.name!r} must be uint8 packed rows of shape (n, {(f.size + 7) // 8})")
            cols[f.name] = col
        return cols


def _pack(bits: list[Any], size: int) -> npt.NDArray[np.uint8]:
    raw = np.frombuffer(b"".join(b.unpack() for b in bits), dtype=np.uint8).reshape(len(bits), size)
    return np.packbits(raw, axis=1, bitorder="little")


def _distinct(cols: dict[str, Any], n: int) -> tuple[Int, dict[str, Any]]:
    """``(row of each report, the distinct reports' columns)``."""
    parts = [c if c.ndim == 2 else np.asarray(c, dtype=np.uint64).reshape(n, 1).view(np.uint8)[:, :_width(c)]
             for c in cols.values()]
    keys = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
    flat: npt.NDArray[Any]
    if keys.shape[1] <= 8:  # one integer per report: a fast sort
        keys = np.pad(keys, ((0, 0), (0, 8 - keys.shape[1])))
        flat = np.ascontiguousarray(keys).view(np.uint64).ravel()
    else:
        flat = np.ascontiguousarray(keys).view(np.dtype((np.void, keys.shape[1]))).ravel()
    _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), {k: c[first] for k, c in cols.items()}


def _width(col: Any) -> int:
    """Bytes that hold the largest value of an unsigned column (little-endian low bytes)."""
    top = int(np.max(col)) if len(col) else 0
    return max(1, (top.bit_length() + 7) // 8)


def report_loglik(var: Variable, cols: dict[str, Any]) -> Float:
    """``log Pr[report | value]`` (reports × values of ``var``) for report columns (RAPPOR: given the cohort)."""
    return var.loglik(cols)


def pair_cost(params_a: ProtocolParams, params_b: ProtocolParams, reports: int = 1) -> PrivacyCost:
    """What each client pays for ``reports`` pairs of one value pair: the sum of the two variables' costs
    (sequential composition), each its cost of ``reports`` reports of one value
    (:meth:`~ldp.encoders.base.ProtocolParams.horizon_cost`: a RAPPOR variable pays ``min(t·ε₁, ε∞)``, its
    memoized PRR caps it)."""
    if isinstance(reports, bool) or not isinstance(reports, int) or reports < 1:
        raise ValueError(f"reports must be an integer >= 1, got {reports!r}")
    total = PrivacyCost(0.0)
    for pr in (params_a, params_b):
        total = total + pr.horizon_cost(reports, 1)[1]
    return total


@dataclass(frozen=True, repr=False)
class Association(ResultTable):
    """The estimated joint table (proportions, rows: A's values), its standard errors and intervals.

    As a result table it has one row per cell (``a``, ``b``, ``proportion``, ``std_error``, ``ci_low``,
    ``ci_high``, ``count``); ``str()`` prints the table of cells with ``± SE`` (:meth:`format`). Its field
    ``table`` is the proportions, so its text view is ``str()``, not a ``table()`` method."""

    labels_a: list[str]
    labels_b: list[str]
    table: Float = field()  # type: ignore[assignment]  # the proportions (no default: not the views' table())
    se: Float
    level: float
    n: int
    loglik: float
    maps: int
    converged: bool
    se_method: str
    privacy_cost: PrivacyCost

    @property
    def lower(self) -> Float:
        return np.clip(self.table - self._z * self.se, 0.0, 1.0)

    @property
    def upper(self) -> Float:
        return np.clip(self.table + self._z * self.se, 0.0, 1.0)

    @property
    def _z(self) -> float:
        return NormalDist().inv_cdf(0.5 + self.level / 2)

    @property
    def counts(self) -> Float:
        return self.table * self.n

    def columns(self) -> dict[str, Any]:
        ka, kb = len(self.labels_a), len(self.labels_b)
        return {"a": [a for a in self.labels_a for _ in range(kb)], "b": list(self.labels_b) * ka,
                "proportion": self.table.ravel(), "std_error": self.se.ravel(), "ci_low": self.lower.ravel(),
                "ci_high": self.upper.ravel(), "count": self.counts.ravel()}

    def metadata(self) -> dict[str, Any]:
        return {"n": self.n, "level": self.level, "loglik": self.loglik, "maps": self.maps,
                "converged": self.converged, "se_method": self.se_method, "privacy": self.privacy_cost.to_dict(),
                "notes": []}

    def title(self) -> str:
        return (f"joint table of {self.n} clients, {len(self.labels_a)}×{len(self.labels_b)} values, SE by "
                f"{self.se_method}, {self.level:.0%} CI, {self.privacy_cost}"
                + ("" if self.converged else f"; EM not converged after {self.maps} maps"))

    def row_count(self) -> int:
        return int(self.table.size)

    def __str__(self) -> str:
        return f"{self.title()}\n{self.format()}"

    def format(self, digits: int = 3) -> str:
        """The table with ``± SE``, one row per value of A."""
        cells = [[f"{t:.{digits}f}±{s:.{digits}f}" for t, s in zip(tr, sr, strict=True)]
                 for tr, sr in zip(self.table, self.se, strict=True)]
        width = max(len(c) for row in cells for c in row + [*self.labels_b])
        lw = max(len(x) for x in self.labels_a)
        lines = [" " * lw + " " + " ".join(lb.rjust(width) for lb in self.labels_b)]
        lines += [la.ljust(lw) + " " + " ".join(c.rjust(width) for c in row)
                  for la, row in zip(self.labels_a, cells, strict=True)]
        return "\n".join(lines)


def associate(a: Variable, b: Variable, reports_a: Any, reports_b: Any, *, se: str = "bootstrap",
              replicates: int = 200, level: float = 0.95, tol: float = 1e-8, max_maps: int = 3000,
              rng: Any = None) -> Association:
    """Estimate the joint table of ``a`` and ``b`` from paired reports (row ``i`` of each: client ``i``).

    ``se``: one of :data:`SE_METHODS` (module docstring); ``replicates``: bootstrap size; ``rng``: the
    bootstrap's randomness; ``tol``/``max_maps``: the EM stopping rule (:func:`~ldp.batch.association.em_fit`)."""
    if se not in SE_METHODS:
        raise ValueError(f"se must be one of {SE_METHODS}, got {se!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return fit_pair(a, b, pair_data(a, b, reports_a, reports_b), se=se, replicates=replicates, level=level, tol=tol,
                    max_maps=max_maps, rng=rng)


def fit_pair(a: Variable, b: Variable, data: PairData, *, se: str, replicates: int, level: float, tol: float,
             max_maps: int, rng: Any) -> Association:
    """:func:`associate` on the pair's reports already tabulated (:func:`pair_data`; its arguments checked there),
    for a caller that fits one pair more than once."""
    n = int(data.counts.sum())
    fit = em_fit(data, independence_start(data), tol=tol, max_maps=max_maps)
    pi = fit.pi[0]
    if se == "bootstrap":
        err = _bootstrap_se(data, pi, replicates, rng, tol, max_maps)
    elif se == "information":
        err = information_se(data, pi)
    else:
        err = np.full_like(pi, np.nan)
    return Association(a.labels, b.labels, pi, err, level, n, float(fit.loglik[0]), fit.maps,
                       bool(fit.converged[0]), se, pair_cost(a.params, b.params))


def pair_data(a: Variable, b: Variable, reports_a: Any, reports_b: Any) -> PairData:
    """The grouped pairs and the two likelihood matrices (rows scaled by their maximum: EM is unaffected)."""
    ca, cb = a.columns(reports_a), b.columns(reports_b)
    na, nb = (len(next(iter(c.values()))) for c in (ca, cb))
    if na != nb:
        raise ValueError(f"paired reports must have the same length: {na} reports of A, {nb} of B")
    if na == 0:
        raise ValueError("no reports: association needs at least one client")
    ra, ua = _distinct(ca, na)
    rb, ub = _distinct(cb, nb)
    la, lb = (np.exp(ll - ll.max(axis=1, keepdims=True)) for ll in (report_loglik(a, ua), report_loglik(b, ub)))
    return PairData.group(la, lb, ra, rb)


def _bootstrap_se(data: PairData, pi: Float, replicates: int, rng: Any, tol: float, max_maps: int) -> Float:
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 2:
        raise ValueError(f"replicates must be an integer >= 2, got {replicates!r}")
    gen = as_generator(rng)
    n = data.counts.sum()
    counts = gen.multinomial(int(n), data.counts / n, size=replicates).astype(np.float64)
    start = independence_start(data, counts)  # each replicate reruns the whole estimator
    fit: EMFit = em_fit(data, start, counts, tol=tol, max_maps=max_maps)
    return np.asarray(fit.pi.std(axis=0, ddof=1))


def information_se(data: PairData, pi: Float, active_tol: float = 1e-9) -> Float:
    """Standard errors from the observed information in the free cells (module docstring); 0 on the boundary."""
    flat = pi.ravel()
    active = np.flatnonzero(flat > active_tol)
    k = active.size
    if data.ia.size * float(k) ** 2 > INFORMATION_WORK:
        raise ValueError(f"se='information' needs J·K² = {data.ia.size}·{k}² multiply-adds (limit "
                         f"{INFORMATION_WORK:g}): use se='bootstrap'")
    ref = int(np.argmax(flat[active]))
    db = pi.shape[1]
    u, v = active // db, active % db
    info = np.zeros((k - 1, k - 1))
    step = max(1, int(1e7 // max(k, 1)))
    for s in range(0, data.ia.size, step):
        x = data.la[data.ia[s:s + step]][:, u] * data.lb[data.ib[s:s + step]][:, v]  # (chunk, K)
        h = x / (x @ flat[active])[:, None]
        h = np.delete(h - h[:, [ref]], ref, axis=1) * np.sqrt(data.counts[s:s + step])[:, None]
        info += h.T @ h
    cov = np.linalg.inv(info)
    var = np.zeros(flat.size)
    var[np.delete(active, ref)] = np.diag(cov)
    var[active[ref]] = cov.sum()
    return np.sqrt(np.maximum(var, 0.0)).reshape(pi.shape)
