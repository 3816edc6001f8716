"""Logging for the ``ldp`` command: ``-v``/``-q`` to log levels, records on stderr.

The library only logs (``logging.getLogger(__name__)`` under ``ldp``) and never configures logging;
the command does, for the length of one run (:func:`cli_logging`), and puts everything back after,
so ``main()`` called in-process (tests, notebooks) leaves the host's logging as it found it.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FORMAT", "add_logging_arguments", "cli_logging", "log_level"]

FORMAT = "ldp: %(levelname)s: %(message)s"


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    """Top-level ``-v``/``--verbose`` (repeatable) and ``-q``/``--quiet``, given before the command.

    ``-q`` is stored as ``log_quiet``: a subcommand's own ``--quiet`` (``ldp fold -q``) keeps
    its ``quiet`` and its meaning."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="count", default=0,
                       help="log more on stderr: -v what the commands do (INFO), -vv details (DEBUG)")
    group.add_argument("-q", "--quiet", dest="log_quiet", action="store_true",
                       help="log only errors on stderr (no warnings)")


def log_level(verbose: int, quiet: bool) -> int:
    """WARNING by default; ``-v`` INFO, ``-vv`` DEBUG; ``-q`` ERROR."""
    if quiet:
        return logging.ERROR
    return {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)


class _StderrHandler(logging.Handler):
    """Writes to the current ``sys.stderr`` (looked up at each record: redirected stderr works)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except (OSError, ValueError):  # pragma: no cover - a closed stream: logging's own policy
            self.handleError(record)


@contextmanager
def cli_logging(verbose: int = 0, quiet: bool = False) -> Iterator[logging.Logger]:
    """Send the ``ldp`` loggers' records at the level of ``-v``/``-q`` to stderr as
    ``ldp: LEVEL: message`` while the block runs; the logger's level and handlers are restored after."""
    logger = logging.getLogger("ldp")
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    old_level = logger.level
    logger.setLevel(log_level(verbose, quiet))
    logger.addHandler(handler)
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
