"""Association analysis kernels: the EM on a joint table of two privatized variables, and paired simulation.

The data are ``J`` distinct report pairs ``(a_j, b_j)`` with counts ``n_j`` (``Σ n_j = N``), and two
likelihood matrices ``L_A`` (distinct A-reports × A-values) and ``L_B``. The likelihood of a pair under
the joint table ``π`` is ``D_j = L_A[a_j] π L_B[b_j]ᵀ`` and the EM map is

    ``π ← π ⊙ (L_Aᵀ W L_B) / N``,  ``W`` the sparse (distinct A × distinct B) matrix with ``n_j / D_j``,

so a map costs ``O(J·(d_A + d_B) + R_A·d_A·d_B)`` multiply-adds (``R_A`` distinct A-reports), never a
Python loop per client. When ``R_A·R_B`` is small (GRR, small unary domains) ``W`` is dense and a map is
three small matrix products. Every map works on a stack of ``B`` tables at once (the bootstrap).

Acceleration: SQUAREM (Varadhan & Roland, Scand. J. Stat. 2008, scheme S3) — two EM maps, an
extrapolation step ``α = −‖r‖/‖v‖`` (at most −1, halved towards −1 until every cell stays positive), one
stabilizing map; the extrapolated point is kept only if its log-likelihood is not below the cycle's start,
else the plain two-map point is, so the log-likelihood never decreases. Stopping rule: a table stops when
no cell moved by more than ``tol`` (absolute, on probabilities) over one cycle, or after ``max_maps`` maps.
"""

from __future__ import annotations

import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch.threads import threads_for
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.base import ProtocolParams
    from ldp.reports import ReportBatch

__all__ = ["PairData", "EMFit", "em_fit", "independence_start", "draw_cells", "simulate_pairs", "EM_KERNEL",
           "kernel_in_use", "unpack_bits", "bernoulli_logs"]

try:  # optional compiled kernel (ldp/batch/_emkernel.c, built on install where a C compiler is found)
    import ldp.batch._emkernel as _emkernel
except ImportError:  # pragma: no cover - depends on the install
    _emkernel = None  # type: ignore[assignment]  # optional: None when the extension is not built
EM_KERNEL = os.environ.get("LDP_EM_KERNEL") or ("compiled" if _emkernel is not None else "numpy")
"""Which pass the sparse EM map uses: ``"compiled"`` (the C extension, when built) or ``"numpy"``; the
environment variable ``LDP_EM_KERNEL`` chooses (e.g. to benchmark the fallback)."""


def kernel_in_use() -> bool:
    """Whether the EM map (:func:`em_fit`) runs the compiled kernel by default: built, and not switched off by
    ``LDP_EM_KERNEL`` (otherwise the numpy fallback runs)."""
    return EM_KERNEL == "compiled" and _emkernel is not None


def unpack_bits(rows: npt.NDArray[np.uint8], size: int) -> npt.NDArray[np.float64]:
    """Packed bit rows (little bit order, as reports store them) as a (rows × ``size``) array of 0.0 and 1.0."""
    return np.unpackbits(rows, axis=1, bitorder="little", count=size).astype(np.float64)


def bernoulli_logs(p: float, q: float) -> tuple[float, float]:
    """``(log(q/p), log((1−q)/(1−p)))``: a bit's log-ratio when its probability of 1 is ``q`` instead of ``p``
    (what the report likelihoods of bit-vector protocols add per bit)."""
    return math.log(q / p), math.log1p(-q) - math.log1p(-p)


_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
KERNEL_THREADS = max(1, min(4, _CORES))
"""Threads of the compiled pass (the usable cores, at most 4; one below 2¹⁷ pairs)."""

Float = npt.NDArray[np.float64]
Int = npt.NDArray[np.int64]

DENSE_CELLS = 1 << 21
"""Largest ``R_A·R_B`` (per table of the stack) for which ``W`` is held dense."""
_CHUNK = 1 << 16  # pairs per block when gathering the pair likelihoods of the sparse path


@dataclass(frozen=True)
class PairData:
    """Distinct report pairs (``ia``, ``ib``: rows of ``L_A``, ``L_B``; sorted by ``ia``) and their counts."""

    la: Float  # (R_A, d_A) likelihoods, each row up to a positive factor
    lb: Float  # (R_B, d_B)
    ia: Int  # (J,)
    ib: Int  # (J,)
    counts: Float  # (J,)

    @classmethod
    def group(cls, la: Float, lb: Float, ra: Int, rb: Int) -> PairData:
        """Group per-client rows ``ra``, ``rb`` (indices into ``la``, ``lb``) into distinct pairs."""
        key = ra.astype(np.int64) * lb.shape[0] + rb
        uniq, counts = np.unique(key, return_counts=True)
        return cls(la, lb, uniq // lb.shape[0], uniq % lb.shape[0], counts.astype(np.float64))

    @property
    def dense(self) -> bool:
        """Hold ``W`` dense: few distinct reports, most of their pairs seen (GRR, small unary domains)."""
        cells = self.la.shape[0] * self.lb.shape[0]
        return cells <= min(DENSE_CELLS, max(4 * self.ia.size, 4096))


@dataclass(frozen=True)
class EMFit:
    """Tables ``pi`` (B, d_A, d_B), their log-likelihoods (up to a constant), maps used, convergence."""

    pi: Float
    loglik: Float
    maps: int
    converged: npt.NDArray[np.bool_]


class _Mapper:
    """The EM map on a stack of tables, for count vectors ``counts`` (B, J)."""

    def __init__(self, data: PairData, counts: Float, kernel: str | None = None) -> None:
        self.data, self.counts = data, counts
        self.kernel = kernel or EM_KERNEL
        if self.kernel not in ("compiled", "numpy") or (self.kernel == "compiled" and _emkernel is None):
            raise ValueError(f"kernel must be 'numpy' or, when built, 'compiled'; got {self.kernel!r}")
        self.total = counts.sum(axis=1)
        self.maps = 0
        if data.dense:
            ra, rb = data.la.shape[0], data.lb.shape[0]
            cells = np.zeros((counts.shape[0], ra * rb))
            cells[:, data.ia * rb + data.ib] = counts
            self.cells = cells.reshape(-1, ra, rb)
        self.indptr = np.searchsorted(data.ia, np.arange(data.la.shape[0] + 1))
        # the compiled pass runs on KERNEL_THREADS parts of the pairs, cut between A-rows (the GIL is released)
        ways = KERNEL_THREADS if data.ia.size >= 1 << 17 else 1
        cuts = self.indptr[np.searchsorted(self.indptr, np.arange(1, ways) * data.ia.size // ways)]
        self.parts = [0, *sorted(set(cuts.tolist()) - {0, data.ia.size}), data.ia.size]

    def __call__(self, pi: Float, rows: Int) -> tuple[Float, Float]:
        """``(F(pi), loglik(pi))`` for the tables ``pi`` (len(rows), d_A, d_B) of stack rows ``rows``."""
        self.maps += 1
        d = self.data
        if d.dense:
            c = self.cells[rows]
            lik = (_left(d.la, pi).reshape(-1, pi.shape[2]) @ d.lb.T).reshape(c.shape)  # (b, R_A, R_B)
            pos = c > 0
            w = np.divide(c, lik, out=np.zeros_like(c), where=pos)
            ll = np.einsum("bij,bij->b", c, np.log(lik, out=np.zeros_like(lik), where=pos))
            t = _left(d.la.T, (w.reshape(-1, w.shape[2]) @ d.lb).reshape(w.shape[0], w.shape[1], -1))
        else:
            t, ll = np.empty_like(pi), np.empty(len(rows))
            for k, row in enumerate(rows):
                g, ll[k] = self._sparse_pass(d.la @ pi[k], self.counts[row])
                t[k] = d.la.T @ g
        new = pi * t / self.total[rows, None, None]
        new /= new.sum(axis=(1, 2), keepdims=True)
        return new, ll


    def _sparse_pass(self, m: Float, n: Float) -> tuple[Float, float]:
        """``(W L_B, Σ n_j log D_j)`` with ``D_j = m[a_j]·L_B[b_j]``, ``W`` the sparse matrix of ``n_j / D_j``:
        the compiled kernel (``ldp/batch/_emkernel.c``, one pass over the pairs) or numpy (blocked gathers)."""
        d = self.data
        if self.kernel == "compiled" and _emkernel is not None:
            g, m, n = np.zeros_like(m), np.ascontiguousarray(m), np.ascontiguousarray(n)
            parts = self.parts

            def run(k: int) -> float:  # the pairs of A-rows [lo, hi): their rows of g are this part's alone
                lo, hi = parts[k], parts[k + 1]
                return _emkernel.pair_step(m, d.lb, d.ia[lo:hi], d.ib[lo:hi], n[lo:hi], hi - lo, m.shape[0],
                                           d.lb.shape[0], m.shape[1], g)

            if len(parts) == 2:
                return g, run(0)
            return g, math.fsum(_pool().map(run, range(len(parts) - 1)))
        import scipy.sparse as sp

        lik = np.concatenate([np.einsum("jv,jv->j", m[d.ia[s:s + _CHUNK]], d.lb[d.ib[s:s + _CHUNK]])
                              for s in range(0, d.ia.size, _CHUNK)] or [np.empty(0)])
        w = sp.csr_matrix((n / lik, d.ib, self.indptr), shape=(d.la.shape[0], d.lb.shape[0]))
        return np.asarray(w @ d.lb), float(n @ np.log(lik))


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(KERNEL_THREADS, thread_name_prefix="ldp-em")


def _left(a: Float, x: Float) -> Float:
    """``a @ x[b]`` for every table of the stack ``x`` (b, r, c), as one 2-D matrix product (BLAS)."""
    b, r, c = x.shape
    prod = (a @ x.transpose(1, 0, 2).reshape(r, b * c)).reshape(a.shape[0], b, c)
    return np.ascontiguousarray(prod.transpose(1, 0, 2))


def em_fit(data: PairData, pi0: Float, counts: Float | None = None, *, tol: float = 1e-8, max_maps: int = 3000,
           accelerate: bool = True, kernel: str | None = None) -> EMFit:
    """Maximum-likelihood joint tables by EM (module docstring), from ``pi0`` (B, d_A, d_B) or (d_A, d_B).

    ``counts`` (B, J) weights the pairs per table (default: ``data.counts`` for every table); ``kernel``
    chooses the sparse path's pass (default :data:`EM_KERNEL`)."""
    pi = np.array(pi0, dtype=np.float64, ndmin=3)
    b = pi.shape[0]
    work = b * (data.la.shape[0] * pi.shape[1] * pi.shape[2] + data.ia.size * (pi.shape[1] + pi.shape[2]))
    with threads_for(float(work)):  # small products: one BLAS thread (many are 10-100x slower on a busy box)
        return _em_fit(data, pi, counts, tol, max_maps, accelerate, kernel)


def independence_start(data: PairData, counts: Float | None = None, *, mix: float = 1e-3, tol: float = 1e-10,
                       max_maps: int = 3000) -> Float:
    """Starting tables (B, d_A, d_B) for :func:`em_fit`: the product of the two marginals, each fitted by
    its own EM on the same reports (cheap: ``O(R·d)`` a map), mixed with ``mix`` of the uniform table so
    that no cell starts at 0 (EM never moves a cell off 0).

    The joint EM then only has the dependence left to find: at 10⁶ RAPPOR pairs of 100 × 100 values it
    takes about 15 % fewer maps to the same tolerance than from the uniform table, to the same maximum."""
    import scipy.sparse as sp

    c = np.atleast_2d(data.counts if counts is None else counts)
    margins = []
    for lik, idx in ((data.la, data.ia), (data.lb, data.ib)):
        rows = lik.shape[0]
        pick = sp.csr_matrix((np.ones(idx.size), (idx, np.arange(idx.size))), shape=(rows, idx.size))
        per_report = np.asarray((pick @ c.T).T)  # (B, rows): each distinct report's count
        single = PairData(lik, np.ones((1, 1)), np.arange(rows, dtype=np.int64), np.zeros(rows, dtype=np.int64),
                          per_report[0])
        d = lik.shape[1]
        fit = em_fit(single, np.full((per_report.shape[0], d, 1), 1.0 / d), per_report, tol=tol, max_maps=max_maps)
        margins.append(fit.pi[:, :, 0])
    table = margins[0][:, :, None] * margins[1][:, None, :]
    return (1.0 - mix) * table + mix / (table.shape[1] * table.shape[2])


def _em_fit(data: PairData, pi: Float, counts: Float | None, tol: float, max_maps: int, accelerate: bool,
            kernel: str | None) -> EMFit:
    b = pi.shape[0]
    counts = np.broadcast_to(data.counts if counts is None else counts, (b, data.ia.size))
    step = _Mapper(data, np.asarray(counts, dtype=np.float64), kernel)
    loglik = np.full(b, -np.inf)
    done = np.zeros(b, dtype=bool)
    while not done.all() and step.maps < max_maps:
        rows = np.flatnonzero(~done)
        x0 = pi[rows]
        x1, ll0 = step(x0, rows)
        if accelerate:
            x2, _ = step(x1, rows)
            r, v = x1 - x0, x2 - 2.0 * x1 + x0
            sv = np.einsum("bij,bij->b", v, v)
            alpha = -np.sqrt(np.einsum("bij,bij->b", r, r) / np.where(sv > 0, sv, 1.0))
            alpha = np.where(sv > 0, np.minimum(alpha, -1.0), -1.0)
            for _ in range(60):  # halve towards -1 (which gives x2 > 0) until every cell is positive
                xe = x0 - 2.0 * alpha[:, None, None] * r + (alpha**2)[:, None, None] * v
                bad = (xe <= 0).any(axis=(1, 2)) & (alpha < -1.0)
                if not bad.any():
                    break
                alpha = np.where(bad, np.maximum((alpha - 1.0) / 2.0, -1.0), alpha)
            xe = np.where((alpha == -1.0)[:, None, None], x2, xe)
            xe /= xe.sum(axis=(1, 2), keepdims=True)
            x3, lle = step(xe, rows)
            keep = lle >= ll0
            xn = np.where(keep[:, None, None], x3, x2)
        else:
            xn = x1
        done[rows] = np.abs(xn - x0).max(axis=(1, 2)) <= tol
        pi[rows], loglik[rows] = xn, ll0
    final = np.arange(b)
    _, loglik = _Mapper(data, np.asarray(counts, dtype=np.float64), kernel)(pi, final)  # loglik at the returned tables
    return EMFit(pi, loglik, step.maps, done)


def draw_cells(joint: Any, n: int, rng: Any = None) -> tuple[Int, Int]:
    """``n`` clients' true value pairs ``(u, v)`` drawn i.i.d. from ``joint`` (any non-negative d_A × d_B table)."""
    table = np.asarray(joint, dtype=np.float64)
    if table.ndim != 2 or not table.size or (table < 0).any() or not np.isfinite(table).all() or table.sum() <= 0:
        raise ValueError("joint must be a non-empty 2-D table of non-negative finite weights with a positive sum")
    gen = as_generator(rng)
    cells = gen.choice(table.size, size=n, p=(table / table.sum()).ravel())
    return (cells // table.shape[1]).astype(np.int64), (cells % table.shape[1]).astype(np.int64)


def simulate_pairs(params_a: ProtocolParams, params_b: ProtocolParams, joint: Any, n: int, rng: Any = None, *,
                   candidates_a: Any = None, candidates_b: Any = None) -> tuple[ReportBatch, ReportBatch, Int, Int]:
    """Paired reports of ``n`` fresh clients whose values are drawn from ``joint`` (rows: values of A).

    Each variable goes through its encoder's ``encode_batch`` (vectorized); an open-domain variable
    (RAPPOR) needs ``candidates_*``, the strings that ``joint``'s rows (A) or columns (B) stand for. Returns
    ``(reports_a, reports_b, u, v)``, ``u``, ``v`` the true value indices."""
    from ldp.protocols import client_protocols

    gen = as_generator(rng)
    u, v = draw_cells(joint, n, gen)
    out = []
    for params, values, cands in ((params_a, u, candidates_a), (params_b, v, candidates_b)):
        if cands is not None and params.domain_size is not None:
            raise ValueError(f"candidates are for open-domain variables (RAPPOR) only, not {params.protocol!r} "
                             f"(a fixed domain of {params.domain_size} values)")
        encoder = client_protocols()[params.protocol][1](params, rng=gen, simulation=True)
        kwargs = {} if cands is None else {"candidates": list(cands)}
        out.append(encoder.encode_batch(values, gen, **kwargs))
    return out[0], out[1], u, v
