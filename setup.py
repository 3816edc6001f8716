"""Build hook for the optional compiled fold kernel (``ldp/batch/_foldkernel.c``: server side only, no
numpy headers, no runtime dependency). Everything else is declared in ``pyproject.toml``. Without a
C compiler the build goes on without the kernel, and :mod:`ldp.batch.bits` folds with pure numpy."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ldp.batch._foldkernel", ["ldp/batch/_foldkernel.c"], optional=True)])
