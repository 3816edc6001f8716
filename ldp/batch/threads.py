"""How many BLAS/OpenMP threads a numeric step gets (server side: ``threadpoolctl``).

On a shared machine OpenBLAS's default threads made small steps 10–100× slower (threads spinning
against other processes; measured in the RAPPOR decoder and the association EM), while a step this
small takes well under a second on one core. Large steps keep the library's default threads."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from functools import lru_cache
from typing import Any

__all__ = ["SMALL_WORK", "threads_for"]

SMALL_WORK = 1e10
"""Multiply-adds below which one thread beats several (see the module docstring)."""


def threads_for(work: float) -> AbstractContextManager[Any]:
    """Limit BLAS and OpenMP to one thread for a step of fewer than :data:`SMALL_WORK` multiply-adds."""
    if work >= SMALL_WORK:
        return nullcontext()
    loaded = tuple(name in sys.modules for name in _NATIVE)
    return _thread_controller(loaded).limit(limits=1)


_NATIVE = ("scipy.linalg", "sklearn")  # they load their own BLAS / OpenMP libraries beside numpy's


@lru_cache(maxsize=4)
def _thread_controller(loaded: tuple[bool, ...]) -> Any:
    """A ``threadpoolctl`` controller for the native libraries loaded so far (finding them takes ms,
    limiting µs): one per set of :data:`_NATIVE` modules imported, since a controller only limits the
    libraries that were loaded when it was made."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()
