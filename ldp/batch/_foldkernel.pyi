"""Types of the optional compiled fold kernel (``ldp/batch/_foldkernel.c``)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

# any buffer; numpy's stubs declare ``ndarray.__buffer__`` only from Python 3.12
_Buf: TypeAlias = Buffer | np.ndarray[Any, Any]

def add_ones_by_group(groups: _Buf, width: int, rows: _Buf, nbytes: int, counts: _Buf, ones: _Buf,
                      nbits: int, /) -> None:
    """``counts[g] += 1`` and ``ones[g, b] += bit b of the row`` for every record, in place (native-endian
    unsigned groups of ``width`` bytes, packed little-endian rows of ``nbytes`` bytes, int64 counts (G,)
    and ones (G, nbits), all C-contiguous)."""

def report_stats(groups: _Buf, width: int, rows: _Buf, nbytes: int, nbits: int, tested: _Buf, masks: _Buf,
                 nmasks: int, chosen: _Buf, hist: _Buf, hits: _Buf, /) -> None:
    """``hist[ones of the row's first nbits bits] += 1`` for every record; for a record with bit ``i`` of ``tested``
    set (packed little-endian, uint8 ((n + 7) // 8,)) whose group ``g`` has ``chosen[g]``, ``hits[0] += 1`` and
    ``hits[1 + j] += 1`` when it holds every bit of ``masks[g, j]`` (uint8 masks (G, nmasks, nbytes), uint8 chosen
    (G,), int64 hist (nbits + 1,) and hits (nmasks + 1,), all C-contiguous)."""

def pair_counts(cols: _Buf, k: int, words: int, out: _Buf, /) -> None:
    """``out[i, j] = popcount(cols[i] & cols[j])`` over ``words`` uint64 words: ``k`` bit sets (uint64 (k,
    words)), int64 out (k, k), all C-contiguous."""
