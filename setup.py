"""Build hook for the optional compiled server kernels: the fold kernel (``ldp/batch/_foldkernel.c``),
local hashing's support counts (``ldp/batch/_lhkernel.c``), association's EM pass (``ldp/batch/_emkernel.c``),
the JSONL fast path's line matcher (``ldp/batch/_linekernel.c``), Subset Selection's batch subsets
(``ldp/batch/_sskernel.c``), Projective Geometry Response's hyperplane counts (``ldp/batch/_pgkernel.c``) and the
collector's group-commit writes (``ldp/jobs/_synckernel.c``) — simulation and server side only, no numpy headers,
no runtime dependency. Everything else is declared in ``pyproject.toml``.
Without a C compiler the build goes on without them: :mod:`ldp.batch.bits`, :mod:`ldp.batch.local_hashing`,
:mod:`ldp.batch.association`, :mod:`ldp.jobs.jsonl`, :mod:`ldp.batch.subset_selection` and
:mod:`ldp.batch.projective_geometry` use pure numpy, and
:func:`ldp.jobs.store.write_synced` ``os.write`` and ``os.fsync``.

Each kernel is linked stripped of its debug information (``-Wl,--strip-debug`` on Linux): Python's own CFLAGS say
``-g``, which made them 0.93 MB where they need 0.3 (the fold kernel 0.68 MB, 0.19 stripped), in every install
including a client's, which never imports them. They are the only compiled code in this distribution: the Prio3
binding of the two-aggregator mode (``ldp.prio``, Rust) is a distribution of its own, ``ldp-telemetry-prio``
(``bindings/prio``: ``pip install ./bindings/prio`` with cargo on PATH, ``pip install 'ldp-telemetry[prio]'`` from an
index), so that this build needs no Rust and a client's install ships none (tests/client/test_client_wheel.py)."""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class StrippedBuildExt(build_ext):
    """``build_ext`` that links each kernel without its debug information (on Linux, whose linkers take
    ``--strip-debug``); elsewhere as setuptools builds it."""

    def build_extension(self, ext: Extension) -> None:
        if sys.platform.startswith("linux"):
            ext.extra_link_args = [*ext.extra_link_args, "-Wl,--strip-debug"]
        super().build_extension(ext)


setup(ext_modules=[Extension("ldp.batch._foldkernel", ["ldp/batch/_foldkernel.c"],
                             depends=["ldp/batch/_foldengines.h", "ldp/batch/_foldbytes.h", "ldp/batch/_foldchoice.h"],
                             optional=True),
                   Extension("ldp.batch._lhkernel", ["ldp/batch/_lhkernel.c"], optional=True),
                   Extension("ldp.batch._emkernel", ["ldp/batch/_emkernel.c"], optional=True),
                   Extension("ldp.batch._linekernel", ["ldp/batch/_linekernel.c"], optional=True),
                   Extension("ldp.batch._sskernel", ["ldp/batch/_sskernel.c"], optional=True),
                   Extension("ldp.batch._pgkernel", ["ldp/batch/_pgkernel.c"], optional=True),
                   Extension("ldp.jobs._synckernel", ["ldp/jobs/_synckernel.c"], optional=True)],
      cmdclass={"build_ext": StrippedBuildExt})
