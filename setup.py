"""Build hook for the optional compiled server kernels: the fold kernel (``ldp/batch/_foldkernel.c``),
local hashing's support counts (``ldp/batch/_lhkernel.c``), association's EM pass (``ldp/batch/_emkernel.c``),
the JSONL fast path's line matcher (``ldp/batch/_linekernel.c``), Subset Selection's batch subsets
(``ldp/batch/_sskernel.c``) and the collector's group-commit writes (``ldp/server/_synckernel.c``) — simulation and
server side only, no numpy headers, no runtime dependency. Everything else is declared in ``pyproject.toml``.
Without a C compiler the build goes on without them: :mod:`ldp.batch.bits`, :mod:`ldp.batch.local_hashing`,
:mod:`ldp.batch.association`, :mod:`ldp.server.jsonl` and :mod:`ldp.batch.subset_selection` use pure numpy, and
:func:`ldp.server.store.write_synced` ``os.write`` and ``os.fsync``."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ldp.batch._foldkernel", ["ldp/batch/_foldkernel.c"],
                             depends=["ldp/batch/_foldengines.h", "ldp/batch/_foldbytes.h"], optional=True),
                   Extension("ldp.batch._lhkernel", ["ldp/batch/_lhkernel.c"], optional=True),
                   Extension("ldp.batch._emkernel", ["ldp/batch/_emkernel.c"], optional=True),
                   Extension("ldp.batch._linekernel", ["ldp/batch/_linekernel.c"], optional=True),
                   Extension("ldp.batch._sskernel", ["ldp/batch/_sskernel.c"], optional=True),
                   Extension("ldp.server._synckernel", ["ldp/server/_synckernel.c"], optional=True)])
