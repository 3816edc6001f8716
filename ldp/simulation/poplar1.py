"""Simulated Poplar1 heavy-hitter collections (issue 89, item 4): exact prefix counts plus each aggregator's noise,
walked by the collector's own :func:`~ldp.prio.heavy_hitters.walk`, and the discovery threshold measured.

**Poplar1 with noise, simulated.** The cryptography returns exactly each candidate prefix's count (its shares add up
to it); each aggregator adds its own noise. So a simulated level is ``exact count + Z₀ + Z₁`` with ``Z₀, Z₁`` drawn
independently from the calibrated law (:class:`~ldp.prio.heavy_hitters.NoiseLaw`, by its inverse distribution
function from a seeded numpy generator: simulation only, its tails below 2⁻⁵³ lost). The exact counts of every
prefix at every level are computed once (:class:`PrefixCounts`: the strings sorted, then each level's prefixes
``value >> (L − 1 − ℓ)`` grouped by ``numpy`` boundaries and ``add.reduceat``, one pass per level and none per
report); each trial draws fresh noise on the same data, since the data are fixed and only the noise varies.

**The empirical discovery threshold** (:func:`empirical_threshold`, for any protocol's trials): each string with h
holders found in s of r trials; the found rate is fitted non-decreasing in h (pool-adjacent-violators, weights the
trials: the maximum-likelihood isotonic fit of Bernoulli rates), and the threshold is the smallest h where the
fit reaches ``power``, interpolated linearly in log h from the fitted point below. Strings are planted into the
data at chosen holder counts (:func:`plant`) so that the counts around the threshold are covered.

Strings are ints below ``2^L`` in ``uint64``: ``L ≤ 64`` here (the walk itself takes up to 256 bits).
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.prio.heavy_hitters import NoiseLaw, WalkCalibration, WalkResult, walk
from ldp.randomness import as_generator

__all__ = ["MAX_SIM_BITS", "random_strings", "plant", "PrefixCounts", "NoiseDraws", "simulate_walks",
           "found_counts", "empirical_threshold", "words_as_ints"]

MAX_SIM_BITS = 64
"""The longest strings simulated (``uint64``)."""


def _check_bits(bits: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= MAX_SIM_BITS:
        raise ValueError(f"bits must be an int in [1, {MAX_SIM_BITS}] to simulate, got {bits!r}")
    return bits


def random_strings(count: int, bits: int, rng: Any = None, exclude: npt.ArrayLike = ()) -> npt.NDArray[np.uint64]:
    """``count`` distinct uniform ``bits``-bit strings (``uint64``), none of ``exclude``, in random order."""
    gen, bits = as_generator(rng), _check_bits(bits)
    taken = np.unique(np.asarray(exclude, dtype=np.uint64))
    if count > 2 ** bits - taken.size:
        raise ValueError(f"only {2 ** bits - taken.size} {bits}-bit strings are left, {count} asked")
    out = np.zeros(0, np.uint64)
    while out.size < count:
        raw = gen.integers(0, 2 ** bits, size=2 * (count - out.size) + 8, dtype=np.uint64)
        raw = raw[~np.isin(raw, taken) & ~np.isin(raw, out)]
        _, first = np.unique(raw, return_index=True)
        out = np.concatenate([out, raw[np.sort(first)]])[:count]
    return out


def words_as_ints(words: Sequence[str], bits: int) -> npt.NDArray[np.uint64]:
    """Each word's UTF-8 bytes, zero-padded to ``bits`` bits, as an int (first byte most significant): Poplar1's
    bit order (:func:`ldp.prio.poplar1.bits_of`). ``ValueError`` for a word that does not fit."""
    size = _check_bits(bits) // 8
    if size * 8 != bits:
        raise ValueError(f"words are whole bytes: bits must be a multiple of 8, got {bits}")
    raw = [w.encode("utf-8") for w in words]
    if any(len(b) > size for b in raw):
        raise ValueError(f"a word is longer than {size} bytes")
    return np.array([int.from_bytes(b.ljust(size, b"\0"), "big") for b in raw], dtype=np.uint64)


def plant(values: npt.ArrayLike, counts: npt.ArrayLike, holders: npt.ArrayLike, bits: int,
          rng: Any = None) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
    """The data ``values``/``counts`` with new random strings held by ``holders`` users each (distinct from the
    data's): ``(values, counts, planted)``."""
    v, c = np.asarray(values, dtype=np.uint64), np.asarray(counts, dtype=np.int64)
    h = np.asarray(holders, dtype=np.int64)
    if h.size and h.min() < 1:
        raise ValueError("a planted string has at least one holder")
    new = random_strings(h.size, bits, rng, exclude=v)
    return np.concatenate([v, new]), np.concatenate([c, h]), new


class PrefixCounts:
    """Every prefix's exact count at every level, for strings ``values`` (ints below ``2^bits``, repeats summed)
    held by ``counts`` users (module docstring)."""

    def __init__(self, values: npt.ArrayLike, counts: npt.ArrayLike, bits: int) -> None:
        self.bits = _check_bits(bits)
        v, c = np.asarray(values, dtype=np.uint64), np.asarray(counts, dtype=np.int64)
        if v.shape != c.shape or v.ndim != 1:
            raise ValueError("values and counts must be 1-D of one length")
        if c.size and (c.min() < 0 or (bits < 64 and int(v.max()) >> bits)):
            raise ValueError(f"counts must be >= 0 and values below 2^{bits}")
        order = np.argsort(v, kind="stable")
        v, c = v[order], c[order]
        keep = c > 0
        self.n = int(c.sum())
        self._levels: list[tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]] = []
        for level in range(bits):
            p = v[keep] >> np.uint64(bits - 1 - level)
            starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]]) if p.size else np.zeros(0, np.int64)
            self._levels.append((p[starts], np.add.reduceat(c[keep], starts) if p.size else np.zeros(0, np.int64)))

    def counts_at(self, level: int, prefixes: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The exact count of each prefix of ``level + 1`` bits (0 for a prefix nobody holds)."""
        uniq, sums = self._levels[level]
        p = np.asarray(prefixes, dtype=np.uint64)
        if not uniq.size:
            return np.zeros(p.size, np.int64)
        i = np.minimum(np.searchsorted(uniq, p), uniq.size - 1)
        return np.where(uniq[i] == p, sums[i], 0)

    def path_counts(self, value: int, levels: Sequence[int] | None = None) -> npt.NDArray[np.int64]:
        """The count of each prefix of the string ``value`` at ``levels`` (default every level)."""
        lv = range(self.bits) if levels is None else levels
        return np.array([int(self.counts_at(ell, [value >> (self.bits - 1 - ell)])[0]) for ell in lv], np.int64)

    def holders_above(self, threshold: float) -> list[int]:
        """At each level, how many prefixes have an exact count of at least ``threshold``."""
        return [int((sums >= threshold).sum()) for _, sums in self._levels]


class NoiseDraws:
    """The two aggregators' noise on counts, drawn in blocks from a seeded generator (:class:`NoiseLaw`'s inverse
    distribution function): ``take(k)`` returns ``Z₀ + Z₁`` for k counts."""

    def __init__(self, law: NoiseLaw, rng: Any = None, block: int = 1 << 16) -> None:
        self._cdf = np.cumsum(law.pmf)
        self._k, self._gen, self._block = law.half_width, as_generator(rng), block
        self._pool, self._at = np.zeros(0, np.int64), 0

    def _draw(self, size: int) -> npt.NDArray[np.int64]:
        i = np.searchsorted(self._cdf, self._gen.random(size), side="right")
        return np.minimum(i, self._cdf.size - 1).astype(np.int64) - self._k

    def take(self, k: int) -> npt.NDArray[np.int64]:
        if self._at + k > self._pool.size:
            size = max(self._block, k)
            self._pool, self._at = self._draw(size) + self._draw(size), 0
        out = self._pool[self._at:self._at + k]
        self._at += k
        return out


def simulate_walks(data: PrefixCounts, calibration: WalkCalibration | None, threshold: float, max_candidates: int,
                   trials: int, rng: Any = None, *, levels: Sequence[int] | None = None) -> list[WalkResult]:
    """``trials`` walks of ``data`` (:func:`~ldp.prio.heavy_hitters.walk`), each level's counts exact plus fresh
    noise of ``calibration`` (``None``: noise off, every trial the same)."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be an int >= 1, got {trials!r}")
    draws = None if calibration is None else NoiseDraws(NoiseLaw.of(calibration.level_noise), rng)

    def counts_at(level: int, prefixes: list[int]) -> list[int]:
        exact = data.counts_at(level, prefixes)
        return (exact if draws is None else exact + draws.take(exact.size)).tolist()

    return [walk(counts_at, data.bits, threshold, max_candidates, levels=levels) for _ in range(trials)]


def found_counts(results: Sequence[WalkResult], values: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """For each string of ``values``, in how many of the walks ``results`` it was found."""
    v = np.asarray(values, dtype=np.uint64)
    out = np.zeros(v.size, np.int64)
    for r in results:
        found = np.fromiter(r.strings, dtype=np.uint64, count=len(r.strings))
        out += np.isin(v, found)
    return out


@dataclass(frozen=True)
class _Fit:
    holders: npt.NDArray[np.float64]
    rate: npt.NDArray[np.float64]
    weight: npt.NDArray[np.float64]


def _isotonic(holders: npt.NDArray[np.int64], found: npt.NDArray[np.int64], trials: npt.NDArray[np.int64]) -> _Fit:
    """The weighted pool-adjacent-violators fit of found/trials, non-decreasing in holders (one point per count)."""
    h, inv = np.unique(holders, return_inverse=True)
    s, r = np.bincount(inv, found).astype(float), np.bincount(inv, trials).astype(float)
    blocks: list[list[float]] = []  # [successes, trials, points]
    for si, ri in zip(s, r, strict=True):
        blocks.append([si, ri, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    rate = np.repeat([b[0] / b[1] for b in blocks], [int(b[2]) for b in blocks])
    return _Fit(h.astype(float), rate, r)


def empirical_threshold(holders: npt.ArrayLike, found: npt.ArrayLike, trials: npt.ArrayLike | int,
                        power: float = 0.9) -> dict[str, Any]:
    """The smallest holder count found with probability ``power`` (module docstring): ``threshold`` (``inf`` when the
    fit never reaches it, the smallest count observed when it already does there, flagged ``below_range``), and
    the observations (strings × trials) within a factor 1.5 of it."""
    h, f = np.asarray(holders, dtype=np.int64), np.asarray(found, dtype=np.int64)
    r = np.broadcast_to(np.asarray(trials, dtype=np.int64), h.shape)
    use = (h > 0) & (r > 0)
    if not use.any():
        raise ValueError("no string with holders and trials")
    fit = _isotonic(h[use], f[use], r[use])
    hit = np.flatnonzero(fit.rate >= power)
    if not hit.size:
        return {"threshold": float("inf"), "below_range": False, "observations_near": 0}
    i = int(hit[0])
    if i == 0:
        t = float(fit.holders[0])
    else:
        lo, hi = np.log(fit.holders[i - 1]), np.log(fit.holders[i])
        a, b = fit.rate[i - 1], fit.rate[i]
        t = float(np.exp(lo + (power - a) / (b - a) * (hi - lo)))
    near = (fit.holders >= t / 1.5) & (fit.holders <= t * 1.5)
    return {"threshold": t, "below_range": i == 0, "observations_near": int(fit.weight[near].sum())}
