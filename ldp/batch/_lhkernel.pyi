"""Types of the optional compiled kernel of local hashing's server (``ldp/batch/_lhkernel.c``)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

# any buffer; numpy's stubs declare ``ndarray.__buffer__`` only from Python 3.12
_Buf: TypeAlias = Buffer | np.ndarray[Any, Any]

def support_counts(seeds: _Buf, ys: _Buf, n: int, g: int, counts: _Buf, d: int, /) -> None:
    """``counts[v] += #{i < n : mmh3(uint32_LE(v), seeds[i]) mod g == ys[i]}`` for every ``v < d``, in place
    (native uint32 seeds and ys of ``n`` entries, int64 counts of ``d``, all C-contiguous; ``2 <= g <= 2**32``)."""
