"""CPU load for tests that must hold on a busy machine (CI's 2 cores are shared with other jobs).

:func:`cpu_hogs` starts busy-looping child processes (``while True: pass``, with a look at their parent every
few milliseconds) and kills them on the way out, whatever the test did (they end on their own if the test process
is killed outright); a test run inside it competes with them for every core, as on a loaded machine. The
Kotlin client's tests do the same with threads (``clients/kotlin/.../testing/Load.kt``, ``CpuHog``)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

__all__ = ["cpu_hogs"]

# Busy, and gone within milliseconds of the test process (its parent) dying by a signal that skips the ``finally``
_BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    for _ in range(100_000): pass\n"


@contextlib.contextmanager
def cpu_hogs(n: int = 2) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` busy-looping Python processes for the time of the ``with`` block; each is killed and reaped after it
    (also when the block raises or the start of a later one fails). Yields the processes once they all run."""
    if n < 1:
        raise ValueError(f"cpu_hogs needs n >= 1, got {n}")
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-S", "-c", _BUSY], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.1)  # past the interpreter's start-up: they are in their loops when the test starts
        dead = [h.returncode for h in hogs if h.poll() is not None]
        if dead:
            raise RuntimeError(f"a CPU hog exited at once (status {dead[0]})")
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
