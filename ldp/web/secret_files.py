"""The one secret-file rule of both HTTP services: how a token, a key or a verify key is read from a file.

A secret file must be

* a regular file (not a folder, a FIFO or a device, whose read may block or never end), read through the descriptor
  that was checked (``fstat`` after ``open``: no swap between the check and the read); a symbolic link to one is
  followed (a mounted secret often is one);
* readable by its owner only: no permission bit for the group or others (``chmod 600``), on POSIX; ssh refuses a
  private key otherwise, and so does this;
* owned by the user the service runs as (or root, who could read it anyway);
* small: at most :data:`MAX_SECRET_BYTES` (a token is 43 characters, a key file under 1 KiB).

A refusal is a :class:`~ldp.errors.ConfigError` naming the key the file was given by and why, which stops the
service at its start. Its text loses the line breaks and the blanks around it (``" \\t\\r\\n"``; never
``str.strip``, which drops other separators too, :mod:`ldp.web.auth`). New secret files are made whole before they
have their name, mode 0600, and never replace a file that is there (:func:`create_secret`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from ldp.errors import ConfigError

__all__ = ["MAX_SECRET_BYTES", "read_secret", "read_secret_bytes", "create_secret", "write_secret",
           "check_secret_mode"]

MAX_SECRET_BYTES = 64 * 1024
"""The largest secret file read."""
_BLANKS = " \t\r\n"


def check_secret_mode(st: os.stat_result, path: Path, what: str) -> None:
    """The rule's checks on a secret file's status (module docstring): :class:`ConfigError` for the first broken."""
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{what}: {path} is not a regular file")
    if os.name != "posix":
        return
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{what}: {path} is readable by others (mode {stat.S_IMODE(st.st_mode):o}): chmod 600 it")
    if st.st_uid not in (os.geteuid(), 0):
        raise ConfigError(f"{what}: {path} belongs to another user (uid {st.st_uid}): a secret file is its user's own")
    if st.st_size > MAX_SECRET_BYTES:
        raise ConfigError(f"{what}: {path} is {st.st_size:,} bytes, more than a secret file holds "
                          f"({MAX_SECRET_BYTES:,} at most)")


def read_secret_bytes(path: Path, what: str) -> bytes:
    """A secret file's bytes, under the rule (module docstring); ``what`` names it in a refusal."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)  # a FIFO must not block open
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    try:
        check_secret_mode(os.fstat(fd), path, what)
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(MAX_SECRET_BYTES + 1)[:MAX_SECRET_BYTES]
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_secret(path: Path, what: str) -> str:
    """A secret file's text (UTF-8), without the blanks and line breaks around it."""
    try:
        return read_secret_bytes(path, what).decode("utf-8").strip(_BLANKS)
    except UnicodeDecodeError:
        raise ConfigError(f"{what}: {path} is not UTF-8 text") from None


def create_secret(path: Path, data: bytes) -> None:
    """Make ``path`` hold ``data``, mode 0600: written whole and synced under a temporary name, then linked to its
    name, so a crash leaves no half secret and a file already there is never replaced (:class:`FileExistsError`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    try:
        with os.fdopen(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.link(part, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part)


def write_secret(path: Path, text: str) -> None:
    """:func:`create_secret` of ``text`` in UTF-8 (refuses to overwrite: :class:`FileExistsError`)."""
    create_secret(path, text.encode("utf-8"))
