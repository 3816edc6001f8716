"""The ``ldp`` command: :func:`main` builds the parser (:mod:`ldp.cli.command`) from one module per group of
commands."""

from ldp.cli.command import main

__all__ = ["main"]
