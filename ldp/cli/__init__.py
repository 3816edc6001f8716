"""The ``ldp`` command: :func:`main` (:mod:`ldp.cli.command`) builds the parser from the modules of
:mod:`ldp.cli.commands`, one per command, each registering its parser and handler."""

from ldp.cli.command import main

__all__ = ["main"]
