"""PEM with numpy: batch encoding (OLH and GRR groups) and the support of arbitrary 32-bit keys among one
group's OLH reports (a GRR group's support of a prefix is the count of reports equal to it).

A report ``(seed, y)`` supports key ``k`` when ``lh_hash(k, seed, g) = y``. :func:`key_support` runs the
blocks of :func:`ldp.batch.local_hashing.support_counts` (its MurmurHash3 halves, ``_finish`` and the
uint32 divisibility test) over the candidates' keys instead of the items ``0..d−1``: memory bounded, no
Python loop per report. (The compiled kernel takes the items ``0..d−1`` only; called once per key on
seeds ``s ^ K(k)`` — MurmurHash3 of one block depends on ``s ^ K(k)`` only — it measured slower than
these blocks, about 7 ns per pair.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch.local_hashing import BLOCK_ITEMS, BLOCK_REPORTS, _finish, _item_keys, _Matcher, _reduce, lh_hashes
from ldp.batch.murmur import _rotl
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.pem import PEMParams

__all__ = ["pem_encode_batch", "key_support", "string_keys"]


def string_keys(params: PEMParams, strings: Sequence[Any]) -> npt.NDArray[np.uint32]:
    """``(len(strings), G)`` table: each string's key in every group (its checks as the client's)."""
    G = params.groups
    out = np.empty((len(strings), G), np.uint32)
    for i, s in enumerate(strings):
        padded = int.from_bytes(params.padded(s), "big")
        out[i] = [params.key_of(padded, j) for j in range(G)]
    return out


def pem_encode_batch(params: PEMParams, values: Any, rng: Any = None, *, candidates: Any = None,
                     groups: Any = None) -> dict[str, npt.NDArray[Any]]:
    """Columns ``group``, ``seed``, ``y`` of reports of ``values`` (indices into ``candidates``, or strings),
    the client's law vectorized: uniform group (or ``groups``); in an OLH group a uniform seed and GRR over
    ``[0, g)`` of the hash, in a GRR group seed 0 and GRR over ``[0, 2^b_j)`` of the prefix. (With
    ``oracle="olh"`` the draws are those of earlier versions: same generator, same reports.)"""
    gen, G, g = as_generator(rng), params.groups, params.g
    if candidates is None:
        uniq: dict[Any, int] = {}
        idx = np.array([uniq.setdefault(v, len(uniq)) for v in values], np.int64)
        table = string_keys(params, list(uniq))
    else:
        table = string_keys(params, list(candidates))
        idx = np.asarray(values)
        if idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= len(table)):
            raise ValueError(f"values must be indices in [0, {len(table)}) of the candidates")
    n = idx.size
    if groups is None:
        grp = gen.integers(0, G, size=n, dtype=np.uint16 if G <= 65535 else np.uint32)
    else:
        grp = np.asarray(groups)
        if grp.shape != idx.shape or (n and (grp.dtype.kind not in "iu" or grp.min() < 0 or grp.max() >= G)):
            raise ValueError(f"groups must be one int in [0, {G}) per value")
    grp = grp.reshape(-1)
    keys = table[idx.reshape(-1), grp] if n else np.zeros(0, np.uint32)
    seeds = gen.integers(0, params.seed_range, size=n, dtype=np.uint32)
    if params.oracle == "olh":
        hashed = _reduce(lh_hashes(seeds, keys), g)
        other = gen.integers(0, g - 1, size=n, dtype=np.uint32) if g > 2 else np.zeros(n, np.uint32)
        keep_p: npt.NDArray[np.float64] | float = params.p
    else:
        is_grr = np.array([o == "grr" for o in params.oracles])[grp]
        seeds[is_grr] = 0
        hashed = keys.copy()  # a GRR group's value is its prefix (its key: at most 16 bits)
        olh_rows = ~is_grr
        if olh_rows.any():
            hashed[olh_rows] = _reduce(lh_hashes(seeds[olh_rows], keys[olh_rows]), g)
        sizes = np.array([params.y_size(j) for j in range(G)], np.int64)[grp]
        other = gen.integers(0, sizes - 1, dtype=np.int64).astype(np.uint32)  # high 1 (g = 2) gives 0
        keep_p = np.array([params.group_pq(j)[0] for j in range(G)])[grp]
    other += other >= hashed
    keep = gen.random(n) < keep_p
    return {"group": grp, "seed": seeds, "y": np.where(keep, hashed, other)}


def key_support(seeds: npt.NDArray[Any], ys: npt.NDArray[Any], keys: npt.ArrayLike, g: int) -> npt.NDArray[np.int64]:
    """``C_k = #{i : lh_hash(k, seeds_i, g) = ys_i}`` for each 32-bit key, in blocks of reports × keys."""
    k = np.asarray(keys, dtype=np.uint64)
    if k.size and k.max() > 0xFFFFFFFF:
        raise ValueError("keys must be in [0, 2**32)")
    s, y = np.ascontiguousarray(seeds, np.uint32), np.ascontiguousarray(ys, np.uint32)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"seeds and ys must be 1-D of one length, got shapes {s.shape} and {y.shape}")
    counts = np.zeros(k.size, np.int64)
    if not s.size or not k.size:
        return counts
    rows, cols = _rotl(s, 13), _item_keys(k.astype(np.uint32))
    matcher = _Matcher(g, y)
    h = np.empty((BLOCK_REPORTS, BLOCK_ITEMS), np.uint32)
    scratch, hit = np.empty_like(h), np.empty(h.shape, np.bool_)
    for i in range(0, s.size, BLOCK_REPORTS):
        r = rows[i:i + BLOCK_REPORTS, None]
        a, b = matcher.bounds(i, i + BLOCK_REPORTS)
        for j in range(0, k.size, BLOCK_ITEMS):
            c = cols[j:j + BLOCK_ITEMS]
            hb, sb, eb = h[:r.shape[0], :c.size], scratch[:r.shape[0], :c.size], hit[:r.shape[0], :c.size]
            np.bitwise_xor(r, c, out=hb)
            matcher.match(_finish(hb, sb), a, b, sb, eb)
            counts[j:j + c.size] += eb.view(np.uint8).sum(axis=0, dtype=np.uint16)
    return counts
