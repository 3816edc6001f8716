"""Types of the optional compiled kernel of association analysis's EM (``ldp/batch/_emkernel.c``)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

# any buffer; numpy's stubs declare ``ndarray.__buffer__`` only from Python 3.12
_Buf: TypeAlias = Buffer | np.ndarray[Any, Any]

def pair_step(m: _Buf, lb: _Buf, ia: _Buf, ib: _Buf, counts: _Buf, j: int, ra: int, rb: int, d: int, g: _Buf,
              /) -> float:
    """For every pair ``t < j``: ``D = m[ia[t]] · lb[ib[t]]``, ``g[ia[t]] += counts[t] / D · lb[ib[t]]``
    (``g`` zeroed by the caller); returns ``Σ counts[t] · log D`` (float64 m, g of ``ra × d``, lb of
    ``rb × d``; int64 ia, ib and float64 counts of ``j``; all C-contiguous; indices are checked)."""
