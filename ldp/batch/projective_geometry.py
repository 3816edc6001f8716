"""Batch kernels for Projective Geometry Response and its hybrid (:mod:`ldp.encoders.projective_geometry`): the
client's law vectorized, and every hyperplane's count at once.

**Encoding.** Per report: the uniform branch with probability ``γ`` (``Generator.random`` at 2^-53 resolution) and a
uniform ``j`` in ``[0, K)``; else a uniform ``r`` in ``[0, s)`` mapped to the ``r``-th point of the value's
hyperplane by the client's bijection (:func:`~ldp.encoders.projective_space.hyperplane_point`), coordinates as
columns.

**Every hyperplane's count** (:func:`hyperplane_counts`): ``T(v) = Σ_u y(u)·[⟨u, v⟩ = 0]`` for all ``P_t`` points
``v`` of a histogram ``y`` of points, in ``O(P_t·q·t)`` steps, not the ``O(P_t²)`` of the sums one by one. Extend
``y`` to every nonzero vector (``Y(λu) = y(u)``) and move the coordinates one at a time from the reports' side to
the values' side: at step ``l``,

    ``G_l(v_{<l}, s, z) = Σ_{a ∈ F_q^l} Y(a, s)·[⟨a, v_{<l}⟩ = z]``  (``s`` the reports' last ``t − l`` coordinates),

so ``G_0(∅, s, 0) = Y(s)`` and ``G_t(v, ∅, 0) = (q − 1)·T(v)``. One step sums over the moved coordinate ``a``:
``G_{l+1}((v_{<l}, c), s', z) = Σ_a G_l(v_{<l}, (a, s'), z − a·c)``. Two symmetries keep the table the size of
the space: only prefixes ``v_{<l}`` that are zero or canonical are needed (``v`` is canonical), and
``G_l(v, λs, z) = G_l(v, s, z/λ)``, so only zero or canonical ``s`` are stored: ``(a, s')`` with ``a ≠ 0`` is
``a·(1, s'/a)``, whence, writing ``β = 1/a``,

    ``G_{l+1}((v, c), s', z) = G_l(v, (0, s'), z) + Σ_{β ≠ 0} G_l(v, (1, β·s'), β·z − c)``.

A prefix is numbered ``E`` (0 for zero, ``1 + index`` for canonical; appending ``c`` gives ``c`` from zero and
``2 + q(E − 1) + c`` otherwise) and a suffix ``S`` likewise (``(0, s')`` keeps ``s'``'s number; ``(1, r)`` is
``1 + P_m + ρ(r)``, ``ρ`` the base-q number of the ``m = t − l − 1`` coordinates ``r``). The compiled kernel
(``ldp/batch/_pgkernel.c``, used when built) runs the same recursion in C; :func:`hyperplane_counts_reference` is
the direct double sum, for tests.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.encoders.projective_space import points
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.projective_geometry import _ProjectiveParams

try:  # optional compiled kernel (ldp/batch/_pgkernel.c, built on install where a C compiler is found)
    import ldp.batch._pgkernel as _pgkernel
except ImportError:  # pragma: no cover - exercised where no C compiler is found
    _pgkernel = None  # type: ignore[assignment]  # optional: None when the extension is not built
PG_KERNEL = os.environ.get("LDP_PG_KERNEL") or ("compiled" if _pgkernel is not None else "numpy")
"""Which path :func:`hyperplane_counts` takes: ``compiled`` when the extension is built, else ``numpy``; the
environment variable ``LDP_PG_KERNEL`` chooses (e.g. to benchmark the fallback)."""

__all__ = ["pg_encode_batch", "own_points", "point_vectors", "point_indices", "hyperplane_counts",
           "hyperplane_counts_numpy", "hyperplane_counts_reference", "kernel_in_use", "PG_KERNEL"]

_CHUNK = 1 << 20  # reports per step: bounded temporaries


def kernel_in_use() -> bool:
    """Whether :func:`hyperplane_counts` runs the compiled kernel: built, and not switched off by ``LDP_PG_KERNEL``."""
    return PG_KERNEL == "compiled" and _pgkernel is not None


@lru_cache(maxsize=32)
def _inverses(q: int) -> npt.NDArray[np.int64]:
    """``inv[a] = a^{-1} mod q`` (``inv[0] = 0``)."""
    a = np.arange(q, dtype=np.int64)
    return np.array([pow(int(x), q - 2, q) if x else 0 for x in a], dtype=np.int64)


def point_vectors(index: npt.NDArray[np.int64], q: int, t: int) -> npt.NDArray[np.int64]:
    """The canonical vectors (rows of ``t`` coordinates) of points ``index`` (the client's numbering)."""
    bounds = np.array([points(q, m) for m in range(t + 1)], dtype=np.int64)
    k = np.searchsorted(bounds, index, "right") - 1  # the coordinates after the leading 1
    rest = index - bounds[k]
    out = np.zeros((index.size, t), dtype=np.int64)
    for i in range(t - 1):  # coordinate t − 1 − i is digit i of rest, where i < k
        digit, rest = rest % q, rest // q
        out[:, t - 1 - i] = np.where(i < k, digit, 0)
    out[np.arange(index.size), t - 1 - k] = 1
    return out


def point_indices(vectors: npt.NDArray[np.int64], q: int) -> npt.NDArray[np.int64]:
    """The points of nonzero vectors (rows): each canonicalized, then numbered."""
    n, t = vectors.shape
    lead = np.argmax(vectors != 0, axis=1)
    scale = _inverses(q)[vectors[np.arange(n), lead]]
    number = np.zeros(n, dtype=np.int64)
    for j in range(t):
        number = number * q + vectors[:, j] * scale % q
    k = t - 1 - lead
    qk = np.power(np.int64(q), k)
    bounds = np.array([points(q, m) for m in range(t + 1)], dtype=np.int64)
    return bounds[k] + number - qk


def own_points(params: _ProjectiveParams, x: npt.NDArray[np.int64], r: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The own-set reports of values ``x``: the ``r``-th point of each value's hyperplane, in its block."""
    q, t, b = params.field, params.dimension, params.block_points
    block, point = np.divmod(x, b)
    v = point_vectors(point, q, t)
    w = point_vectors(r, q, t - 1)
    i = np.argmax(v != 0, axis=1)  # v's leading 1
    u = np.zeros_like(v)
    for j in range(t):
        before = w[:, j] if j < t - 1 else 0
        after = w[:, j - 1] if j > 0 else 0
        u[:, j] = np.where(j < i, before, np.where(j > i, after, 0))
    dot = (v * u).sum(axis=1) % q  # u_i = 0 so far, v_i = 1
    u[np.arange(x.size), i] = (q - dot) % q
    return block * b + point_indices(u, q)


def pg_encode_batch(params: _ProjectiveParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint32]:
    """Reported ``j`` (uint32) of the value indices ``values``."""
    x = checked_indices(values, params.domain_size)
    gen = as_generator(rng)
    out = np.empty(x.size, np.uint32)
    for start in range(0, x.size, _CHUNK):
        xs = x[start:start + _CHUNK].astype(np.int64)
        uniform = gen.random(xs.size) < params.gamma
        j = gen.integers(0, params.order, size=xs.size, dtype=np.int64)
        own = ~uniform
        r = gen.integers(0, params.set_size, size=int(own.sum()), dtype=np.int64)
        j[own] = own_points(params, xs[own], r)
        out[start:start + xs.size] = j
    return out


@lru_cache(maxsize=32)
def _suffix_sources(q: int, m: int) -> npt.NDArray[np.int64]:
    """``src[S', β − 1] = 1 + P_m + ρ(β·s')``: the suffix ``(1, β·s')`` of each suffix ``S'`` of length ``m``."""
    pm = points(q, m)
    vec = np.zeros((pm + 1, m), dtype=np.int64)
    if m:
        vec[1:] = point_vectors(np.arange(pm, dtype=np.int64), q, m)
    beta = np.arange(1, q, dtype=np.int64)
    scaled = vec[:, None, :] * beta[None, :, None] % q
    rho = np.zeros(scaled.shape[:2], dtype=np.int64)
    for j in range(m):
        rho = rho * q + scaled[:, :, j]
    return 1 + pm + rho


def hyperplane_counts(histogram: npt.ArrayLike, q: int, t: int) -> npt.NDArray[Any]:
    """``T(v) = Σ_{⟨u, v⟩ = 0} y(u)`` for every point ``v`` of ``PG(t−1, q)``, ``y`` the histogram of ``P_t`` points
    (module docstring): exact int64 counts from an integer histogram (the compiled kernel when built), floats from
    a float one (an expected histogram, say: the map is linear)."""
    y = np.asarray(histogram)
    if y.shape != (points(q, t),):
        raise ValueError(f"a histogram of {points(q, t)} points is needed, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        return hyperplane_counts_numpy(y.astype(np.float64), q, t)
    y = np.ascontiguousarray(y, dtype=np.int64)
    if kernel_in_use():
        out = np.empty_like(y)
        _pgkernel.hyperplane_counts(y, q, t, out)
        return out
    return hyperplane_counts_numpy(y, q, t)


def hyperplane_counts_numpy(y: npt.NDArray[Any], q: int, t: int) -> npt.NDArray[Any]:
    """:func:`hyperplane_counts` in numpy (the module docstring's recursion; the fallback without the kernel), in
    ``y``'s dtype: int64 exactly, or float64."""
    z = np.arange(q, dtype=np.int64)
    beta = np.arange(1, q, dtype=np.int64)
    inv = _inverses(q)
    # step 1 from y: G_0(∅, S, z) = y'(S)·[z = 0], y' = (0, y); c ∈ {0, 1}
    m = t - 1
    src = _suffix_sources(q, m)
    dtype = np.int64 if np.issubdtype(y.dtype, np.integer) else np.float64
    yy = np.concatenate([np.zeros(1, dtype), y.astype(dtype)])
    g = np.zeros((2, points(q, m) + 1, q), dtype=dtype)
    g[:, :, 0] = yy[:points(q, m) + 1]
    g[0, :, 0] += yy[src].sum(axis=1)  # β·z − 0 = 0 at z = 0
    g[1][:, inv[beta]] += yy[src]  # β·z − 1 = 0 at z = 1/β (the 1/β are distinct)
    for l in range(1, t - 1):  # noqa: E741  # the step, as in the docstring
        m = t - l - 1
        src = _suffix_sources(q, m)
        pl, pm = points(q, l), points(q, m)
        nxt = np.zeros((points(q, l + 1) + 1, pm + 1, q), dtype=dtype)
        body = nxt[2:].reshape(pl, q, pm + 1, q)
        for c in range(q):
            zi = (beta[:, None] * z[None, :] - c) % q  # (q − 1, q)
            part = g[:, :pm + 1, :] + g[:, src[:, :, None], zi[None, :, :]].sum(axis=2)
            body[:, c] = part[1:]
            if c < 2:
                nxt[c] = part[0]
        g = nxt
    # the last step (s' empty): G_t((v, c)) = G(v, 0, 0) + (q − 1)·G(v, (1), −c)
    pl = points(q, t - 1)
    last = (q - np.arange(q)) % q  # −c
    total = np.empty(points(q, t) + 1, dtype=dtype)
    total[2:] = (g[1:, 0, 0][:, None] + (q - 1) * g[1:, 1, last]).reshape(pl * q)
    total[1] = g[0, 0, 0] + (q - 1) * g[0, 1, q - 1]
    return total[1:] // (q - 1) if dtype == np.int64 else total[1:] / (q - 1)


def hyperplane_counts_reference(y: npt.ArrayLike, q: int, t: int) -> npt.NDArray[np.int64]:
    """:func:`hyperplane_counts` as the direct sums (``P_t × P_t`` incidences): the reference for tests."""
    vec = point_vectors(np.arange(points(q, t), dtype=np.int64), q, t)
    incident = (vec @ vec.T) % q == 0
    return incident.astype(np.int64) @ np.asarray(y, dtype=np.int64)
