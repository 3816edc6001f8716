"""Types of the optional compiled kernel of Subset Selection's batch path (``ldp/batch/_sskernel.c``)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

# any buffer; numpy's stubs declare ``ndarray.__buffer__`` only from Python 3.12
_Buf: TypeAlias = Buffer | np.ndarray[Any, Any]

def floyd_rows(seed: _Buf, v: _Buf, own: _Buf, w: int, d: int, rows: _Buf, /) -> None:
    """OR into packed row ``i`` a uniform ``(w − own[i])``-subset of the ``d − 1`` columns other than ``v[i]``
    (Floyd's algorithm, draws from xoshiro256** seeded with the four uint64 of ``seed``), then bit ``v[i]`` if
    ``own[i]``."""

def fixup_rows(seed: _Buf, v: _Buf, own: _Buf, w: int, d: int, threshold: int, planes: int, rows: _Buf, /) -> None:
    """Write into packed row ``i`` a uniform ``(w − own[i])``-subset of the ``d − 1`` columns other than ``v[i]``:
    independent Bernoulli(``threshold / 2**planes``) columns corrected to that size by uniform additions or
    removals (draws from xoshiro256** seeded with the four uint64 of ``seed``), then bit ``v[i]`` if ``own[i]``."""
