"""The de-biased mean sketch: one server for Apple's CMS and HCMS (apple-and-theory.md §1.2–§2.3).

Sufficient statistics (integers, so merging is exact): reports per hash index ``n_j`` and a
``k × m`` table ``sums``: for CMS the number of reports of row ``j`` with bit ``l`` set, for HCMS
the sum of the ±1 bits reported for ``(j, l)``. The de-biased sketch is

* CMS: ``M[j, l] = k·(c·(2·ones_jl − n_j)/2 + n_j/2)``, ``c = (e^{ε/2}+1)/(e^{ε/2}−1)``;
* HCMS: ``M = (k·c·sums)·H_m`` (each row by a fast Walsh–Hadamard transform), ``c = (e^ε+1)/(e^ε−1)``;

and the frequency oracle is ``f̃(d) = m/(m−1)·((1/k)·Σ_j M[j, h_j(d)] − n/m)``, unbiased over
the clients' randomness and the draw of the hash functions. Its exact variance (over both), with
``F2(d) = Σ_{d'≠d} f(d')²``:

* CMS: ``(m/(m−1))²·n·(c²−1)/4 + ((1 − 1/k)(n − f) + F2/k)/(m − 1)``;
* HCMS: ``(m/(m−1))²·(n·c² − f − (n − f)(1/(km) + (1 − 1/k)/m²)) + F2/(k(m − 1))``.

Standard errors plug in ``f̂`` (clipped to [0, n]) and ``F2`` estimated from the candidates' own
estimates (``Σf̂²`` corrected for the estimates' variance, itself a function of ``F2``), so mass
outside the candidate list is not counted in the collision term.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch import check_candidates
from ldp.batch.bits import add_ones_by_group, add_signs_by_group
from ldp.batch.sketch import hadamard_sign, sketch_buckets
from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.results import Estimates
from ldp.encoders.cms import CmsParams, SketchParams
from ldp.encoders.hcms import HcmsParams
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.decoders.rappor import OpenDomainCounts, S

__all__ = ["SketchAggregate", "sketch_variance", "even_f2", "sketch_counts", "fwht"]


def fwht(a: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Unnormalized fast Walsh–Hadamard transform of each row (``a @ H_m``, Sylvester order), O(m log m)."""
    x = np.array(a, dtype=np.float64)
    rows, m = x.shape
    h = 1
    while h < m:
        y = x.reshape(rows, m // (2 * h), 2, h)
        top, bottom = y[:, :, 0, :].copy(), y[:, :, 1, :]
        y[:, :, 0, :] += bottom
        y[:, :, 1, :] = top - bottom
        h *= 2
    return x


def even_f2(n: float, count: float, domain_size: int) -> float:
    """``F2`` of the other ``n − count`` users spread evenly over the other ``domain_size − 1`` values:
    ``(n − count)²/(domain_size − 1)`` (the planner's assumption)."""
    return (n - count) / max(domain_size - 1, 1) * (n - count)


def sketch_variance(params: SketchParams, f: npt.ArrayLike, n: float, f2: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[f̃(d)]`` for true counts ``f`` of the estimated items, ``n`` reports and ``F2(d)`` (all may
    be fractional: the planner's expected counts)."""
    k, m = params.num_hashes, params.width
    f, f2 = np.asarray(f, dtype=np.float64), np.asarray(f2, dtype=np.float64)
    r = (m / (m - 1)) ** 2
    c = params.c
    if isinstance(params, HcmsParams):
        return r * (n * c**2 - f - (n - f) * (1 / (k * m) + (1 - 1 / k) / m**2)) + f2 / (k * (m - 1))
    return r * n * (c**2 - 1) / 4 + ((1 - 1 / k) * (n - f) + f2 / k) / (m - 1)


def sketch_counts(params: SketchParams, groups: np.ndarray, columns: Mapping[str, np.ndarray], num_groups: int,
                  out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(reports per group, sums (num_groups, m))`` of validated CMS (``bits``) or HCMS (``row``,
    ``bit``) columns; ``groups`` is the hash index, or any grouping of it (SFP: position·k + hash).
    With ``out`` (int64, C-contiguous), the counts are added to it in place and it is returned."""
    m = params.width
    if out is None:
        out = (np.zeros(num_groups, np.int64), np.zeros((num_groups, m), np.int64))
    if isinstance(params, HcmsParams):
        add_signs_by_group(groups, columns["row"], columns["bit"], *out)
        return out
    add_ones_by_group(groups, columns["bits"], *out)
    return out


class SketchAggregate(Aggregate):
    """Reports per hash index ``row_n`` (k,) and the ``sums`` table (k, m) of CMS or HCMS reports."""

    params_type: ClassVar[Any] = (CmsParams, HcmsParams)
    params: SketchParams
    row_n: npt.NDArray[np.int64]  # (k,), created by _init_state
    sums: npt.NDArray[np.int64]  # (k, m)

    @classmethod
    def state_layout(cls, params: SketchParams) -> StateLayout:
        k, m = params.num_hashes, params.width
        return {"row_n": (np.dtype(np.int64), (k,)), "sums": (np.dtype(np.int64), (k, m))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        sketch_counts(self.params, columns["hash"], columns, self.params.num_hashes, out=(self.row_n, self.sums))

    # -- the sketch and the frequency oracle -------------------------------------------------------
    def sketch(self) -> npt.NDArray[np.float64]:
        """The de-biased ``k × m`` sketch ``M`` (module docstring)."""
        pr = self.params
        k, c = pr.num_hashes, pr.c
        if isinstance(pr, HcmsParams):
            return fwht(k * c * self.sums.astype(np.float64))
        n_j = self.row_n[:, None].astype(np.float64)
        return k * (c * (2 * self.sums - n_j) / 2 + n_j / 2)

    candidate_dictionary: ClassVar[str] = "required"

    def decode(self, candidates: Sequence[str] | None = None, *, confidence: float = 0.95, alpha: float = 0.05,
               top: int | None = None, selection: str = "auto") -> Estimates:
        """:meth:`estimate` of the candidates (``top``, ``selection``: unused)."""
        if not candidates:
            raise ValueError(f"{self.params.protocol} estimates the counts of candidate strings: give them")
        return self.estimate(list(candidates), confidence=confidence, alpha=alpha)

    def estimate(self, candidates: Sequence[str | bytes], confidence: float = 0.95, alpha: float = 0.05) -> Estimates:
        """Unbiased counts of every candidate (vectorized), standard errors, CIs and heavy-hitter flags.

        ``detected``: the count exceeds ``z_{1−α/M}`` times its standard error under ``f = 0``
        (Bonferroni over the ``M`` candidates)."""
        cands = check_candidates(candidates)
        pr = self.params
        if not cands:
            return Estimates(pr.protocol, [], self.n, np.zeros(0), np.zeros(0), confidence, pr.privacy_cost,
                             {"threshold": np.zeros(0), "detected": np.zeros(0, bool)})
        count, se, threshold = self.oracle(sketch_buckets(pr, cands), alpha)
        items = [c if isinstance(c, str) else c.decode("utf-8", "backslashreplace") for c in cands]
        notes = ("standard errors: exact variance with f and F2 plugged in from these candidates' estimates",)
        return Estimates(pr.protocol, items, self.n, count, se, confidence, pr.privacy_cost,
                         {"threshold": threshold, "detected": count > threshold}, notes)

    def oracle(self, table: np.ndarray, alpha: float = 0.05,
               sketch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(count, standard error, detection threshold)`` of the ``d`` candidates whose buckets
        are ``table`` (d × k, :func:`~ldp.batch.sketch.sketch_buckets`): the core of :meth:`estimate`,
        arrays only, for callers that hash once and score many sketches (SFP). ``sketch`` is
        :meth:`sketch` when the caller already has it."""
        pr, n = self.params, self.n
        k, m = pr.num_hashes, pr.width
        size = table.shape[0]
        if size == 0:
            return np.zeros(0), np.zeros(0), np.zeros(0)
        # CMS with fewer candidates than buckets: the sums at their cells de-biased alone (elementwise, the numbers
        # sketch() gives there), not the whole k × m sketch
        cells_only = sketch is None and not isinstance(pr, HcmsParams) and size < m
        sk = None if cells_only else self.sketch() if sketch is None else sketch
        n_j, c = self.row_n.astype(np.float64), pr.c
        total_hash = np.zeros(size)
        for start in range(0, size, 4096):  # blocks of rows that stay in cache; the same sums in the same order
            rows, acc = table[start:start + 4096], total_hash[start:start + 4096]
            for j in range(k):  # one gather per hash function: no (d, k) float temporary
                if sk is None:
                    acc += k * (c * (2 * self.sums[j].take(rows[:, j]) - n_j[j]) / 2 + n_j[j] / 2)
                else:
                    acc += sk[j].take(rows[:, j])
        count = m / (m - 1) * (total_hash / k - n / m)
        # F2 plug-in: E[f̂²] = f² + Var, and each Var holds F2/(k(m−1)) besides v0 (its value at f = F2 = 0),
        # so Σf² ≈ (Σf̂² − C·v0)/(1 + C/(k(m−1))) over the C candidates
        v0 = sketch_variance(pr, 0.0, n, 0.0)
        total = max((float(np.dot(count, count)) - size * v0) / (1 + size / (k * (m - 1))), 0.0)
        f_hat = count.clip(0.0, n)
        f2 = np.maximum(total - np.maximum(f_hat**2 - v0, 0.0), 0.0)
        se = np.sqrt(sketch_variance(pr, f_hat, n, f2))
        z = NormalDist().inv_cdf(1 - alpha / size)
        return count, se, z * np.sqrt(sketch_variance(pr, 0.0, n, f2))

    def heavy_hitters(self, candidates: Sequence[str | bytes], alpha: float = 0.05,
                      confidence: float = 0.95) -> Estimates:
        """The candidates whose count is significantly above 0 (see :meth:`estimate`), largest first."""
        est = self.estimate(candidates, confidence=confidence, alpha=alpha)
        keep = np.flatnonzero(est.extra["detected"])
        keep = keep[np.argsort(-est.count[keep], kind="stable")]
        return Estimates(est.protocol, [est.items[i] for i in keep], est.n, est.count[keep], est.std_error[keep],
                         est.confidence, est.privacy, {k: v[keep] for k, v in est.extra.items()}, est.notes)

    @staticmethod
    def exact_variance(params: SketchParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Exact variance of each item's estimate when ``true_counts`` are all the users' values."""
        t = np.asarray(true_counts, dtype=np.float64)
        return sketch_variance(params, t, int(t.sum()), (t**2).sum() - t**2)

    @classmethod
    def _simulate_reports(cls, params: SketchParams, values: Sequence[str | bytes], counts: np.ndarray,
                          gen: np.random.Generator) -> SketchAggregate:
        """The same distribution by encoding every report in vectorized batches (exact too)."""
        from ldp.encoders.cms import CmsEncoder
        from ldp.encoders.hcms import HcmsEncoder

        encoder = HcmsEncoder(params) if isinstance(params, HcmsParams) else CmsEncoder(params)
        agg = cls(params)
        idx = np.repeat(np.arange(counts.size), counts)
        for start in range(0, idx.size, 1 << 20):
            agg.add(encoder.encode_batch(idx[start:start + (1 << 20)], gen, candidates=values))
        return agg

    # -- exact aggregate-level simulation ------------------------------------------------------------
    @classmethod
    def simulate(cls, params: SketchParams, true_counts: OpenDomainCounts[S], rng: Any = None, *,
                 values: Sequence[S] | None = None) -> SketchAggregate:
        """Exact draw of the aggregate: rows by a multinomial per value; CMS bits as binomials per
        cell; HCMS per (row, bucket) group a multinomial over (Hadamard row, reported sign), or, when
        that costs more (groups × m > 8n), every report encoded in vectorized batches."""
        from ldp.decoders.rappor import open_domain_counts

        values, counts = open_domain_counts(true_counts, values)
        gen = as_generator(rng)
        k, m, p = params.num_hashes, params.width, params.flip_probability
        per_row = gen.multinomial(counts, np.full(k, 1.0 / k)) if counts.size else np.zeros((0, k), np.int64)
        table = sketch_buckets(params, check_candidates(values)) if counts.size else np.zeros((0, k), np.int64)
        cells = np.zeros((k, m), dtype=np.int64)  # users per (row j, bucket a)
        # flat index j·m + h_j(value) of each (value, row j): one 1-d add.at (numpy's fast path), exact in int64
        np.add.at(cells.reshape(-1), (table + np.arange(0, k * m, m, dtype=np.int64)).ravel(), per_row.ravel())
        agg = cls(params)
        agg.row_n[:] = per_row.sum(axis=0)
        agg.n = int(counts.sum())
        if isinstance(params, CmsParams):
            # kept ones among the users of each cell, drawn only where there are some: a draw of Binomial(0, ·) takes
            # nothing from the stream, so these are the very numbers a draw over every cell gives
            hit = np.nonzero(cells)
            kept = np.zeros_like(cells)
            kept[hit] = gen.binomial(cells[hit], 1 - p)
            agg.sums[:] = kept + gen.binomial(agg.row_n[:, None] - cells, p)
            return agg
        jj, aa = np.nonzero(cells)
        if jj.size * m > 8 * agg.n:  # the group draw would cost more than encoding every report: do that
            return cls._simulate_reports(params, values, counts, gen)
        lanes = np.arange(m)
        for start in range(0, jj.size, 1024):
            j, a = jj[start:start + 1024], aa[start:start + 1024]
            plus = hadamard_sign(a[:, None], lanes[None, :])  # (groups, m): true sign of each Hadamard row
            prob_one = np.where(plus, 1 - p, p) / m  # Pr[row l, reported +1]
            probs = np.concatenate([prob_one, 1.0 / m - prob_one], axis=1)
            draws = gen.multinomial(cells[j, a], probs)
            np.add.at(agg.sums, j, draws[:, :m] - draws[:, m:])
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """:func:`sketch_variance`, whose collision term needs ``F2`` of the other items (default: the even spread,
        ``F2 = (n − count)²/(domain_size − 1)``)."""
        return float(sketch_variance(params, count, n, even_f2(n, count, domain_size) if f2 is None else f2))
