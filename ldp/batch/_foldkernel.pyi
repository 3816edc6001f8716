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
