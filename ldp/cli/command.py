"""The ``ldp`` command: the top-level parser (``--version``, ``-v``/``-q``) with every command of
:mod:`ldp.cli.commands` added by its own module, and :func:`main`, which runs the handler a command registered
(``args.handler(args)``) under the error contract of ``docs/cli.md``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ldp import __version__
from ldp.cli.commands import add_commands
from ldp.cli.log import add_logging_arguments, cli_logging
from ldp.cli.support import BAD_INPUT, _debug_traceback, error_text, report_error
from ldp.extras import DISTRIBUTION

QUICK_START = ("Quick start (README.md), measured on an idle 2-core machine: pip install '.[server]' && ldp demo "
               "(the demo about 6 s, --quick about 2 s); pip install '.[test]' ./bindings/prio && pytest -n auto "
               "(the install about 40 s, the test suite about 9 min).")
"""The timings ``ldp --help`` ends with: the same as README.md's and docs/getting-started.md's."""


def make_parser() -> argparse.ArgumentParser:
    """The ``ldp`` parser: the options every command shares, then the commands (:func:`ldp.cli.commands.add_commands`),
    each with its ``handler``."""
    parser = argparse.ArgumentParser(prog="ldp", description="Telemetry under local differential privacy.",
                                     epilog=QUICK_START)
    parser.add_argument("--version", action="version", version=f"{DISTRIBUTION} {__version__}")
    add_logging_arguments(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    add_commands(commands)
    commands.metavar = "{" + ",".join(a.dest for a in commands._choices_actions) + "}"  # hidden aliases left out
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ldp ARGV``. Exit status: 0 done (also when stdout's reader closed the pipe early); 2 bad
    input or usage, with ``ldp <command>: error: <message>`` as the last line on stderr; 1 a bug
    (one line, or the traceback with ``LDP_DEBUG=1``); 130 interrupted."""
    parser = make_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # argparse's top-level parser would say `ldp: error:`; the command's own parser names the command
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    prog = getattr(args, "command_prog", None) or f"ldp {args.command}"
    if argv is None:  # this process is the command (the console script, python -m ldp): it ends with the run
        _limit_blas_threads(args)
    with cli_logging(args.verbose, args.log_quiet):
        return _main(args, prog)


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
"""The environment variables OpenBLAS reads its thread count from when it is loaded (the first is its own)."""


def _limit_blas_threads(args: argparse.Namespace) -> None:
    """Start numpy's OpenBLAS with the ``blas_threads`` a command's parser sets (``set_defaults``): a command whose
    array work is small (``ldp privacy``'s figures: vector products, FFTs) gains nothing from more, while every
    other thread OpenBLAS starts waits for work spinning, about 0.1 s of CPU after the load and after each call
    (0.2 s of the 0.6 s ``ldp privacy … --windows 365`` took on 2 cores). Only when numpy is not loaded yet (the
    count is read once, at the load) and the user set none of :data:`BLAS_THREAD_VARIABLES` (their choice stands);
    :func:`main` calls it only when the process is the command, so an in-process ``main(argv)`` changes nothing."""
    threads = getattr(args, "blas_threads", None)
    if threads is None or "numpy" in sys.modules or any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` chose: ``ldp spec validate``'s for ``spec validate``."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or chosen not in sub.choices:
            return parser
        parser = sub.choices[chosen]


def _main(args: argparse.Namespace, prog: str) -> int:
    """:func:`main` once the arguments are parsed and logging is set up."""
    try:
        status = _run(args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler
        return status
    except BrokenPipeError:
        _detach_stdout()
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BAD_INPUT as exc:
        return report_error(prog, exc)
    except Exception as exc:  # a bug: one line for users, the traceback on request
        _debug_traceback(exc)
        print(f"{prog}: internal error: {type(exc).__name__}: {error_text(exc)} "
              "(run with LDP_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


def _detach_stdout() -> None:
    """After the reader closed stdout: point it at the null device so the exit-time flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (captured in-process)
        pass


def _run(args: argparse.Namespace) -> int:
    """Run one parsed command: the handler its module registered; bad input raises (see :data:`BAD_INPUT`)."""
    status: int = args.handler(args)
    return status
