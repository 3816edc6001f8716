"""Types of the optional compiled kernel of Projective Geometry Response's decoder (``ldp/batch/_pgkernel.c``)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

# any buffer; numpy's stubs declare ``ndarray.__buffer__`` only from Python 3.12
_Buf: TypeAlias = Buffer | np.ndarray[Any, Any]

def hyperplane_counts(y: _Buf, q: int, t: int, out: _Buf, /) -> None:
    """Write into ``out`` (int64, ``P_t`` entries) the sum of ``y`` (int64, ``P_t`` entries) over the points
    orthogonal to each point of ``PG(t−1, q)``."""
