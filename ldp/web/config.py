"""The one TOML config loader of both HTTP services (``ldp serve``'s, an aggregator's).

Each service declares its own sections (:mod:`ldp.ingest.config`, :mod:`ldp.aggregators.config`); what they share
is here: reading the file (:func:`read_toml`: a file that cannot be read or is not TOML is a
:class:`~ldp.errors.ConfigError` naming it), the refusal of a key nobody knows (:func:`table`: a typo is never
ignored, and a plain key written after a ``[table]`` header — where TOML puts it in that table — is named as such),
and the checks of the values both take: a token's SHA-256 (:func:`token_hash`, the form ``ldp serve token``
prints), numbers in a range, non-empty strings, booleans, paths relative to the file's folder. Secret files (the
tokens and keys a config names) are read under :mod:`ldp.web.secret_files`'s rule.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ldp.errors import ConfigError

__all__ = ["read_toml", "table", "token_hash", "number", "text", "boolean", "relative_path", "section", "HASH_RE"]

HASH_RE = re.compile(r"[0-9a-f]{64}\Z")
"""A token's SHA-256 as a config holds it: 64 lowercase hex digits."""


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The decoded TOML file (:class:`ConfigError` when it cannot be read or is not TOML)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {p}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None


def table(where: str, value: Any, known: Collection[str], *, plain: Collection[str] = ()) -> dict[str, Any]:
    """``value`` when it is a table of ``known`` keys only, else :class:`ConfigError` naming the unknown ones;
    ``plain``: the file's top-level keys that are not tables, named when found in this table (written after a
    ``[table]`` header, they belong to it in TOML)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table, got {type(value).__name__}")
    unknown = sorted(set(value) - set(known))
    if unknown:
        misplaced = [k for k in unknown if k in plain]
        hint = (f"; {', '.join(map(repr, misplaced))} belong(s) at the top of the file: in TOML, a key after a "
                "[table] header belongs to that table" if misplaced else "")
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))} "
                          f"(known: {', '.join(sorted(known))}){hint}")
    return value


def token_hash(where: str, value: Any, command: str = "ldp serve token") -> str:
    """A token's SHA-256 (:data:`HASH_RE`), else :class:`ConfigError` saying how to make one."""
    if not isinstance(value, str) or not HASH_RE.match(value):
        raise ConfigError(f"{where} must be the 64 lowercase hex digits of sha256(token) (run '{command}'), got "
                          f"{value!r}")
    return value


def number(where: str, value: Any, kind: type, low: float, *, low_open: bool = False,
           high: float | None = None) -> Any:
    """``value`` as ``kind`` (``int`` or ``float``; a bool is neither) in ``[low, high]`` (``(low, high]`` with
    ``low_open``), finite, else :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ConfigError(f"{where} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    if value < low or (low_open and value == low) or value != value or value in (math.inf, -math.inf):
        raise ConfigError(f"{where} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and value > high:
        raise ConfigError(f"{where} must be <= {high}, got {value!r}")
    return kind(value)


def text(where: str, value: Any) -> str:
    """A non-empty string, else :class:`ConfigError`."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string, got {value!r}")
    return value


def boolean(where: str, value: Any) -> bool:
    """``true`` or ``false``, else :class:`ConfigError`."""
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def relative_path(base: Path, value: str) -> Path:
    """``value`` from the config file's folder ``base`` (an absolute path stays as it is)."""
    return base / value


def section(doc: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The table ``doc[key]`` (an empty one when absent), else :class:`ConfigError`."""
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a table, got {type(value).__name__}")
    return value
