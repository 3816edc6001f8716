"""RAPPOR decode files users exchange with Google's tools: ``results.csv`` and candidate lists.

**results.csv** is what Google's ``decode_dist.R`` writes from ``Decode()$fit`` (github.com/google/rappor,
``analysis/R/decode.R``): one row per *detected* string, by decreasing estimate, with the columns
``string, estimate, std_error, proportion, prop_std_error, prop_low_95, prop_high_95``:
``estimate = floor(count)``, ``std_error = floor(standard error)``, ``proportion = estimate / N``,
``prop_std_error = std_error / N`` and the interval ``proportion ∓ 1.96·prop_std_error`` clamped to
[0, 1]. Text as R's ``write.csv(row.names = FALSE)``: every field name and string in double quotes
(a quote doubled), numbers with up to 15 significant digits, fixed or scientific notation whichever
is narrower (``1e+05``, ``9.98399999999999e-05``; :func:`r_number`), lines ending in ``\\n``.

The interval columns are named for the decode's confidence level: at 95 % they are Google's
``prop_low_95``/``prop_high_95`` with Google's rounded z = 1.96 (so the file is the one Google's
decoder would write from the same counts); at another level, say 90 %, they are ``prop_low_90``/
``prop_high_90`` with that level's exact z, so no tool reads a 90 % interval as a 95 % one.

**Candidate files** (:func:`read_candidates`): UTF-8 text, one candidate per line (``\\n``,
``\\r\\n`` or ``\\r``), each kept exactly as written (spaces included); a leading byte-order mark is
dropped, blank lines (empty or white space only) are skipped, a repeated candidate is an error.
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from ldp.decoders.results import Estimates, normal_quantile

__all__ = ["GOOGLE_COLUMNS", "GoogleResult", "GoogleResults", "decode_text", "detected_only", "google_results",
           "google_results_csv", "level_name", "r_number", "read_candidates", "read_google_results"]

logger = logging.getLogger(__name__)

GOOGLE_COLUMNS = ("string", "estimate", "std_error", "proportion", "prop_std_error", "prop_low_95", "prop_high_95")
"""The header of Google's ``results.csv`` (95 % intervals)."""
GOOGLE_Z95 = 1.96  # Google's decode.R: "1.96 standard deviations gives 95% confidence interval"
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_SPECIAL = {"NA": math.nan, "NaN": math.nan, "Inf": math.inf, "-Inf": -math.inf}
E = TypeVar("E", bound=Estimates)


def r_number(x: float) -> str:
    """``x`` as R's ``write.csv`` writes a double: 15 significant digits at most, trailing zeros dropped,
    fixed notation unless scientific is narrower (R's ``scipen = 0`` rule), ``NA``/``NaN``/``Inf``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    mantissa, exp_text = f"{x:.14e}".split("e")
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0")
    nsig, power, neg = len(digits), int(exp_text), int(x < 0)
    decimals = max(0, nsig - power - 1)
    fixed_width = neg + max(power, 0) + 1 + (decimals + 1 if decimals else 0)
    sci_width = neg + (nsig + 1 if nsig > 1 else 1) + (4 if abs(power) < 100 else 5)
    if fixed_width <= sci_width:
        return f"{x:.{decimals}f}"
    return f"{x:.{nsig - 1}e}"


def level_name(confidence: float) -> str:
    """The interval columns' suffix for ``confidence``: ``"95"`` for 0.95, ``"90"``, ``"97.5"``..."""
    normal_quantile(confidence)  # checks 0 < confidence < 1
    return f"{confidence * 100:.10g}"


@dataclass(frozen=True)
class GoogleResult:
    """One row of ``results.csv``."""

    string: str
    estimate: float
    std_error: float
    proportion: float
    prop_std_error: float
    prop_low: float
    prop_high: float

    def fields(self) -> list[str]:
        """The row's CSV fields as R writes them."""
        nums = (self.estimate, self.std_error, self.proportion, self.prop_std_error, self.prop_low, self.prop_high)
        return [_r_string(self.string), *map(r_number, nums)]


@dataclass(frozen=True)
class GoogleResults:
    """The rows of a ``results.csv`` and the level of its intervals (``"95"`` in Google's files)."""

    rows: list[GoogleResult]
    level: str = "95"

    @property
    def columns(self) -> tuple[str, ...]:
        return (*GOOGLE_COLUMNS[:5], f"prop_low_{self.level}", f"prop_high_{self.level}")

    def proportions(self) -> dict[str, float]:
        """``{string: proportion}``: what Google's ``compare_dist.R`` metrics score (the dev cases' ``score.py``)."""
        return {r.string: r.proportion for r in self.rows}

    def to_csv(self) -> str:
        """The file as R's ``write.csv(row.names = FALSE)`` writes it (module docstring)."""
        lines = [",".join(map(_r_string, self.columns))] + [",".join(r.fields()) for r in self.rows]
        return "\n".join(lines) + "\n"


def google_results(est: Estimates) -> GoogleResults:
    """The detected candidates of a RAPPOR decode as Google's ``Decode()$fit`` rows (module docstring).

    Rows are by decreasing (unrounded) count, ties in ``est``'s order, as Google orders them. A
    detected candidate indistinguishable from another (``duplicate_of`` set: its count is NaN, the
    group's count is on the first member) has no row; a warning says how many were left out."""
    if "detected" not in est.extra:
        raise ValueError(f"results.csv needs a decode with a 'detected' column ({est.protocol} estimates have none)")
    detected = np.asarray(est.extra["detected"], dtype=bool)
    keep = detected & np.isfinite(est.count) & np.isfinite(est.std_error)
    if int(detected.sum()) > int(keep.sum()):
        logger.warning("results.csv: %d detected candidate(s) left out: they share every Bloom bit with an "
                       "earlier candidate (duplicate_of), which holds the group's count", detected.sum() - keep.sum())
    level = level_name(est.confidence)
    z = GOOGLE_Z95 if level == "95" else normal_quantile(est.confidence)
    order = sorted(np.flatnonzero(keep).tolist(), key=lambda i: -float(est.count[i]))
    rows = []
    for i in order:
        estimate, std_error = math.floor(est.count[i]), math.floor(est.std_error[i])
        proportion, prop_se = estimate / est.n, std_error / est.n
        rows.append(GoogleResult(est.items[i], float(estimate), float(std_error), proportion, prop_se,
                                 max(proportion - z * prop_se, 0.0), min(proportion + z * prop_se, 1.0)))
    return GoogleResults(rows, level)


def google_results_csv(est: Estimates) -> str:
    """``results.csv`` text in Google's layout from a RAPPOR decode (:func:`google_results`)."""
    return google_results(est).to_csv()


def read_google_results(text: str, name: str = "results.csv") -> GoogleResults:
    """Parse a ``results.csv`` (Google's, or :func:`google_results_csv`'s); ``ValueError`` naming the line
    for a wrong header, a wrong number of fields, a field that is not a number, or a repeated string."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{name} is empty: expected the header {','.join(GOOGLE_COLUMNS)}")
        level = _check_header(header, name)
        rows: list[GoogleResult] = []
        seen: dict[str, int] = {}
        for rec in reader:
            where = f"{name} line {reader.line_num}"
            if len(rec) != len(GOOGLE_COLUMNS):
                raise ValueError(f"{where}: expected {len(GOOGLE_COLUMNS)} fields, got {len(rec)}")
            if rec[0] in seen:
                raise ValueError(f"{where}: string {rec[0]!r} repeats line {seen[rec[0]]}")
            seen[rec[0]] = reader.line_num
            rows.append(GoogleResult(rec[0], *(_r_float(v, where, col) for v, col in zip(rec[1:], GOOGLE_COLUMNS[1:],
                                                                                         strict=True))))
    except csv.Error as exc:
        raise ValueError(f"{name} line {reader.line_num}: not valid CSV ({exc})") from None
    return GoogleResults(rows, level)


def _check_header(header: Sequence[str], name: str) -> str:
    """The interval level named by a valid header (``"95"``); ``ValueError`` otherwise."""
    low = header[5] if len(header) == len(GOOGLE_COLUMNS) else ""
    level = low.removeprefix("prop_low_")
    if (len(header) != len(GOOGLE_COLUMNS) or list(header[:5]) != list(GOOGLE_COLUMNS[:5]) or not level
            or low == level or header[6] != f"prop_high_{level}"):
        raise ValueError(f"{name} line 1: expected the header {','.join(GOOGLE_COLUMNS)} (or another level than "
                         f"95 in the last two), got {','.join(header)}")
    return level


def _r_float(text: str, where: str, column: str) -> float:
    if text in _SPECIAL:
        return _SPECIAL[text]
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{where}: {column} {text!r} is not a number")
    return float(text)


def _r_string(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def detected_only(est: E) -> E:
    """The rows of ``est`` whose ``detected`` column is true (every column kept)."""
    keep = np.flatnonzero(np.asarray(est.extra["detected"], dtype=bool))
    return replace(est, items=[est.items[i] for i in keep], count=est.count[keep], std_error=est.std_error[keep],
                   extra={k: np.asarray(v)[keep] for k, v in est.extra.items()})


def decode_text(data: bytes, name: str) -> str:
    """``data`` as UTF-8 text: a leading byte-order mark dropped, line ends ``\\r\\n`` and ``\\r`` made
    ``\\n``; ``ValueError`` naming ``name``, the byte offset and line of the first invalid byte."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not data.startswith(codecs.BOM_UTF8):
        raise ValueError(f"{name} is not UTF-8 text: it starts with a UTF-16 byte-order mark; convert it, "
                         "e.g. iconv -f UTF-16 -t UTF-8")
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = skip + exc.start
        line = data[:at].replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1
        raise ValueError(f"{name} is not UTF-8 text: byte {at} (line {line}) is {data[at:at + 1]!r} "
                         f"({exc.reason}); convert it to UTF-8, e.g. iconv -f LATIN1 -t UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_candidates(data: bytes, name: str = "candidates") -> list[str]:
    """The candidate strings of a candidate file (module docstring): one a line, exactly as written;
    blank lines skipped; ``ValueError`` for text that is not UTF-8 or a candidate given twice (both lines named)."""
    lines = decode_text(data, name).split("\n")  # not splitlines(): \x85, \u2028... may be in a candidate
    first: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line in first:
            raise ValueError(f"{name} line {number}: candidate {line!r} repeats line {first[line]}")
        first[line] = number
    return list(first)
