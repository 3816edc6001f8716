"""What every ``ldp`` command shares: the error contract and the argument types.

The contract (``docs/cli.md``): bad input exits 2 with one last stderr line ``ldp <command>: error:
<message>`` (:func:`report_error`); argparse ``type=`` functions here check options where they are
read, so the message names the rule broken.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from collections.abc import Callable
from typing import Any

from ldp.errors import error_text
from ldp.extras import install_hint
from ldp.protocols import protocols_taking

__all__ = ["COUNT_PROTOCOLS", "PROTOCOLS_HELP",
           "BAD_INPUT", "error_text", "report_error", "number", "count", "input_file", "positive_int",
           "non_negative_int", "finite_float", "positive_float", "open_unit", "matplotlib_missing",
           "matplotlib_missing_error", "given_options", "refuse_options", "apply_defaults", "output"]



COUNT_PROTOCOLS = protocols_taking("counts")
"""The protocols that estimate counts (of the values or strings their users hold), by name: the registry's
protocols whose collections take counts (:func:`ldp.protocols.registry.protocols_taking`)."""
PROTOCOLS_HELP = (", ".join(COUNT_PROTOCOLS) + "; or a mean: " + ", ".join(protocols_taking("numbers"))
                  + "; or several attributes (--param attributes=JSON): " + ", ".join(protocols_taking("attributes")))
"""The protocols as the help texts list them: the counting ones, the means, the attributes."""

#: Exceptions that mean "bad input" (a value, a file, a missing extra): exit status 2 and one line.
BAD_INPUT: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, ArithmeticError, csv.Error,
                                              ImportError, MemoryError, RecursionError, SyntaxError)


def report_error(prog: str, exc: BaseException) -> int:
    """Print ``<prog>: error: <message>`` as the last line on stderr and return 2. A spec with several
    errors lists them first, indented, one per line."""
    from ldp.spec.schema import SpecError

    if isinstance(exc, SpecError) and len(exc.errors) > 1:
        for e in exc.errors:
            print(f"  {error_text(ValueError(e))}", file=sys.stderr)
        message = f"{error_text(ValueError(exc.source))}: {len(exc.errors)} error(s), listed above"
    elif isinstance(exc, SpecError):
        message = error_text(ValueError(f"{exc.source}: {exc.errors[0] if exc.errors else 'invalid'}"))
    else:
        message = error_text(exc)
    _debug_traceback(exc)
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def _debug_traceback(exc: BaseException) -> None:
    """With ``LDP_DEBUG`` set, print the traceback before the one-line error (the status stays the same)."""
    if os.environ.get("LDP_DEBUG"):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)


def number(kind: type, low: float | None = None, high: float | None = None, *, low_open: bool = False,
            high_open: bool = False) -> Callable[[str], Any]:
    """An argparse ``type=``: an int (or a finite float) within the bounds, or a message naming the rule."""
    rules = [f"{'>' if low_open else '>='} {low:g}"] if low is not None else []
    rules += [f"{'<' if high_open else '<='} {high:g}"] if high is not None else []
    rule = ("an integer" if kind is int else "a finite number") + (" " + " and ".join(rules) if rules else "")

    def convert(text: str) -> Any:
        try:
            value = int(text) if kind is int else float(text)
        except (ValueError, OverflowError):
            value = None
        if (value is None or not math.isfinite(value)
                or (low is not None and (value < low or (low_open and value == low)))
                or (high is not None and (value > high or (high_open and value == high)))):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
        return value

    convert.__name__ = rule
    return convert


def count(text: str) -> int:
    """An argparse ``type=``: a whole number >= 1, also written as a float (``1e6``)."""
    try:
        value = float(text)
        whole = math.isfinite(value) and value.is_integer() and value >= 1
    except (ValueError, OverflowError):
        whole = False
    if not whole:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1 (1e6 is accepted), got {text!r}")
    return int(text) if text.strip().isdigit() else int(value)


def store_option(text: str) -> tuple[str, str]:
    """An argparse ``type=``: ``KEY=VALUE``, an option of an object store's filesystem (``endpoint_url=...``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"takes KEY=VALUE, got {text!r}")
    return key.strip(), value


def input_file(text: str) -> str:
    """An argparse ``type=``: the path of an existing file (not a folder)."""
    if not os.path.isfile(text):
        why = "is a folder, not a file" if os.path.isdir(text) else "no such file"
        raise argparse.ArgumentTypeError(f"{why}: {text!r}")
    return text


positive_int, non_negative_int = number(int, 1), number(int, 0)
finite_float, positive_float = number(float), number(float, 0, low_open=True)
open_unit = number(float, 0, 1, low_open=True, high_open=True)  # a confidence level or significance level


def matplotlib_missing_error(option: str, alternative: str | None = None) -> None:
    """For an ``ldp`` option that draws figures: an ``ImportError`` (exit status 2) naming ``option``, the extra to
    install and ``alternative`` when matplotlib is not installed; checked before the run, which takes seconds."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError(f"{option} needs matplotlib: {install_hint('matplotlib', 'plot')}"
                          + (f"; or {alternative}" if alternative else ""))


def given_options(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    """The options among ``names`` (argparse ``dest`` names) given on the command line, as flags (``--target-se``):
    those not ``None`` (their parsers' default)."""
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n, None) is not None]


def refuse_options(args: argparse.Namespace, names: tuple[str, ...], why: str) -> None:
    """A ``ValueError`` (exit status 2) when any option of ``names`` is given: ``<flags>: <why>``."""
    given = given_options(args, names)
    if given:
        raise ValueError(f"{', '.join(given)}: {why}")


def output(text: object, *, end: str = "\n", to_stderr: bool = False) -> None:
    """Write what a command shows its user: ``text`` on stdout (``to_stderr``: on stderr, beside a ``--json`` document
    on stdout). The command-line modules write through here or print; the library logs instead."""
    print(text, end=end, file=sys.stderr if to_stderr else sys.stdout)


def apply_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Give the options a command's parser leaves at ``None`` (to tell whether they were given: :func:`refuse_options`)
    their documented values, from the parser's ``set_defaults(option_defaults={...})``; returns ``args``."""
    for name, value in getattr(args, "option_defaults", {}).items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    return args


def matplotlib_missing(no_plots: bool, install: str = install_hint("matplotlib", "plot")) -> bool:
    """For command-line scripts: ``True`` (after saying so on stderr) when plots are wanted but
    matplotlib is not installed."""
    import importlib.util

    if no_plots or importlib.util.find_spec("matplotlib") is not None:
        return False
    print(f"error: plots need matplotlib ({install}); or pass --no-plots", file=sys.stderr)
    return True
