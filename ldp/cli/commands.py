"""The ``ldp`` commands: the modules that add them, in the order ``ldp --help`` lists them.

Each module named in :data:`COMMAND_MODULES` has a ``register(subparsers)`` function that adds its command(s) to the
``ldp`` parser with ``set_defaults(handler=...)``: the function :func:`ldp.cli.command.main` calls with the parsed
arguments. A command lives in one module, next to the code it runs; a protocol family's own command (``rappor-decode``,
``sfp-discover``, ``pem-discover``, ``ngrams-discover``) in the family's module ``ldp/cli/<family stem>.py``.

Why a list and not a scan of the package (as the protocol registry scans ``ldp.encoders``): the order of ``ldp
--help`` is part of the interface (from trying the package, through a collection's life, to the family tools), and a
scan would give file-name order; a list in this one place says it. ``tests/cli/test_commands.py`` checks that every
module of ``ldp.cli`` with a ``register`` function is listed, once, so a command cannot be forgotten here. Building
the parser imports these modules: they import numpy, scipy and the rest only inside their handlers (``ldp --help``
and ``ldp --version`` stay fast; a test checks it).
"""

from __future__ import annotations

import argparse
import importlib

__all__ = ["COMMAND_MODULES", "add_commands"]

COMMAND_MODULES = (
    "ldp.cli.demo",           # demo
    "ldp.cli.compare",        # compare
    "ldp.spec.cli",           # spec validate
    "ldp.cli.jobs",         # aggregate, merge, decode
    "ldp.cli.serve",          # serve
    "ldp.cli.collect",        # collect
    "ldp.cli.watch",          # watch
    "ldp.cli.shuffle",        # shuffle
    "ldp.cli.privacy",        # privacy
    "ldp.cli.simulate",       # simulate
    "ldp.cli.plan",           # plan
    "ldp.cli.rappor",         # rappor-decode
    "ldp.cli.sfp",            # sfp-discover
    "ldp.cli.pem",            # pem-discover
    "ldp.cli.rappor_ngrams",  # ngrams-discover
    "ldp.cli.associate",      # associate
)
"""The modules whose ``register(subparsers)`` adds the ``ldp`` commands, in help order."""


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add every command of :data:`COMMAND_MODULES` to ``subparsers``, in order."""
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
