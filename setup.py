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

The optional Prio3 binding ``ldp.prio._native`` is Rust (``bindings/prio``: the ``prio`` crate through pyo3, and the
native client's DAP-09 reports and HPKE from ``clients/rust`` by path, its Cargo.lock committed and used ``--locked``;
the sdist carries both crates, MANIFEST.in), built by setuptools-rust when ``cargo`` is on PATH, in release mode, for
the stable ABI (one build serves Python 3.11+). Without cargo, or without setuptools-rust in a build environment that
lacks it (``--no-build-isolation``), the build goes on without it, and :mod:`ldp.prio` says how to get it. Cargo
builds in ``bindings/prio/target`` (``.ci/run`` links it to its build cache) unless ``CARGO_TARGET_DIR`` says
otherwise."""

from setuptools import Extension, setup

try:
    from setuptools_rust import Binding, RustExtension
except ImportError:  # a build environment without setuptools-rust (pyproject.toml asks for it): no Prio3 binding
    RUST_EXTENSIONS = []
else:
    RUST_EXTENSIONS = [RustExtension("ldp.prio._native", path="bindings/prio/Cargo.toml", binding=Binding.PyO3,
                                     cargo_manifest_args=["--locked"], debug=False, optional=True)]

setup(ext_modules=[Extension("ldp.batch._foldkernel", ["ldp/batch/_foldkernel.c"],
                             depends=["ldp/batch/_foldengines.h", "ldp/batch/_foldbytes.h", "ldp/batch/_foldchoice.h"],
                             optional=True),
                   Extension("ldp.batch._lhkernel", ["ldp/batch/_lhkernel.c"], optional=True),
                   Extension("ldp.batch._emkernel", ["ldp/batch/_emkernel.c"], optional=True),
                   Extension("ldp.batch._linekernel", ["ldp/batch/_linekernel.c"], optional=True),
                   Extension("ldp.batch._sskernel", ["ldp/batch/_sskernel.c"], optional=True),
                   Extension("ldp.batch._pgkernel", ["ldp/batch/_pgkernel.c"], optional=True),
                   Extension("ldp.jobs._synckernel", ["ldp/jobs/_synckernel.c"], optional=True)],
      rust_extensions=RUST_EXTENSIONS)
