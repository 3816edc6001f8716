"""Types of the optional compiled fold kernel (``ldp/batch/_foldkernel.c``)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

# any buffer; numpy's stubs declare ``ndarray.__buffer__`` only from Python 3.12
_Buf: TypeAlias = Buffer | np.ndarray[Any, Any]

def fold_rows(groups: _Buf, width: int, rows: _Buf, nbytes: int, nbits: int, counts: _Buf | None, ones: _Buf | None,
              hist: _Buf | None, tested: _Buf | None, masks: _Buf | None, nmasks: int, chosen: _Buf | None,
              hits: _Buf | None, /) -> None:
    """One pass over packed little-endian rows of ``nbytes`` bytes (native-endian unsigned groups of ``width`` bytes),
    in place, each part skipped when its arrays are None: ``counts[g] += 1`` and ``ones[g, b] += bit b`` (int64 (G,),
    (G, nbits)); ``hist[ones among the row's first nbits bits] += 1`` (int64 (nbits + 1,)); for a row with bit ``i`` of
    ``tested`` set (packed little-endian, uint8 ((n + 7) // 8,)) whose group ``g`` has ``chosen[g]``: ``hits[0] += 1``
    and ``hits[1 + j] += 1`` when it holds every bit of ``masks[g, j]`` (uint8 masks (G, nmasks, nbytes), chosen (G,),
    int64 hits (nmasks + 1,), or (G, nmasks + 1): ``hits[g, 0] += 1`` and ``hits[g, 1 + j] += 1``, the tests of each
    group apart). All C-contiguous; every group is checked before anything is written."""

def add_signs_by_group(groups: _Buf, gw: int, cells: _Buf, cw: int, bits: _Buf, bw: int, m: int, counts: _Buf,
                       sums: _Buf, /) -> None:
    """``counts[g] += 1`` and ``sums[g, cell] += 2*bit - 1`` for every record (native-endian unsigned columns of
    ``gw``, ``cw``, ``bw`` bytes; int64 counts (G,) and sums (G, m)), in place."""

def pair_counts(cols: _Buf, k: int, words: int, out: _Buf, /) -> None:
    """``out[i, j] = popcount(cols[i] & cols[j])`` over ``words`` uint64 words: ``k`` bit sets (uint64 (k,
    words)), int64 out (k, k), all C-contiguous."""

def choose_sets(rows: _Buf, nmax: int, k: int, n: _Buf, sizes: _Buf, out: _Buf, threads: int = 0, /) -> None:
    """RAPPOR's choice of bits (:func:`ldp.batch.rappor_evidence.chosen_sets_of`) from each of ``m`` samples of
    packed little-endian rows (uint8 ``(m, nmax, ⌈k/8⌉)``: sample ``g``'s first ``n[g]`` rows, int64 ``n`` (m,),
    ``1 <= n[g] <= nmax``): for each size ``s`` of ``sizes`` (int64, each in [1, 65536]), ``out[g, t, :s]`` the
    chosen bits and -1 past them (int64 ``(m, len(sizes), max(sizes))``). Exactly the numpy path's choice (same float
    formulas and order, same ties), on every engine and any number of ``threads`` (0: one per core online, at most
    8; a thread takes 8 samples at least). All C-contiguous; checked before anything is written."""

def free_counts(groups: _Buf, width: int, tested: _Buf, hi: int, counts: _Buf, /) -> None:
    """Per group, the rows among the first ``hi`` whose bit of ``tested`` is clear (RAPPOR's rows to choose from)."""

def latest_free(groups: _Buf, width: int, tested: _Buf, hi: int, limit: int, rows: _Buf, nbytes: int, want: _Buf,
                got: _Buf, out: _Buf, /) -> None:
    """Per group, its latest ``want[g]`` rows to choose from among the last ``limit`` of the first ``hi``, into its
    slot of ``out`` (ending at the slot's end, oldest first); ``got[g]`` how many."""

def engines() -> list[str]:
    """The vector engines this machine runs (``"generic"``, then ``"avx2"``, ``"avx512"`` where the CPU has them)."""

def use_engine(name: str | None = None, /) -> str:
    """Fold with engine ``name`` (one of :func:`engines`) from now on (None: keep it); the engine in use before."""
