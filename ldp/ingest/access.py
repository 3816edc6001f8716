"""Who may read the dashboard and ``GET /v1/estimates``: the analysts (issue 57, item 4).

Three roles hold tokens, each its own (the config refuses a token listed for two): an app's clients upload
(``[apps.X] token_sha256``), the scraper reads ``/metrics`` when ``[metrics] token_sha256`` is set, an analyst reads
the estimates (``[analysts] tokens_sha256``). The read paths answer an analyst only, unless ``public = true`` opens
them on purpose: estimates are aggregates of privatized reports, but still the operator's data, and the ingest
counters beside them say how much each app sends.

An analyst proves it with ``Authorization: Bearer <token>`` (curl, scripts) or, in a browser, with a cookie. A
browser sends no bearer header when it follows a link or reloads the page, so the dashboard's sign-in form POSTs the
token once to ``login``, which answers with the cookie and a redirect back to the page. A token in a URL
(``?token=``) is never taken: URLs end up in proxies' logs and in browsers' histories.

The cookie (:meth:`ReadAccess.cookie_for`) holds an expiry and an HMAC-SHA256 of the analyst's token hash and that
expiry under a key only the ingest service has (``DATA/analyst-cookie.key``, made at the first use, mode 0600): never
the token, so a stolen cookie is worth :data:`SESSION_SECONDS` at most; an analyst removed from the config is signed out
at the next request (the HMAC names their hash, which is no longer there); deleting the key file signs everyone out
at the next start. It is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page makes the
browser send it, so no cross-site request forgery) and ``Secure`` when the request came over HTTPS (through a reverse
proxy that says so with ``X-Forwarded-Proto``: uvicorn believes a proxy on the loopback). It has no ``Path``: the
browser scopes it to the folder of the page, so a dashboard the proxy serves under ``/ldp/`` works too.

The bearer header is read by the services' one parser (:mod:`ldp.web.auth`: the scheme case-insensitive, only OWS
dropped around the token) and the key file kept under their one secret-file rule (:mod:`ldp.web.secret_files`).
Every check compares digests with :func:`hmac.compare_digest`, against every analyst. This module imports no HTTP
stack: the routes are in :mod:`ldp.ingest.dashboard`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ldp.errors import ConfigError
from ldp.web.auth import bearer_digest, holder_of, token_digest
from ldp.web.secret_files import create_secret, read_secret_bytes

if TYPE_CHECKING:
    from ldp.ingest.config import IngestConfig

__all__ = ["ReadAccess", "bearer_digest", "COOKIE_NAME", "KEY_FILE", "SESSION_SECONDS", "Via"]

logger = logging.getLogger(__name__)

COOKIE_NAME = "ldp_analyst"
KEY_FILE = "analyst-cookie.key"
"""The cookie key's file, in ``data_dir``: 32 random bytes."""
SESSION_SECONDS = 12 * 3600
"""How long a sign-in lasts: a working day. After it the page (which reloads itself) shows the sign-in form again."""
_MAC_CONTEXT = b"ldp analyst cookie v1\0"
_MAX_COOKIES = 8
"""Cookies of our name looked at in one request (several paths may each hold one)."""
Via = Literal["public", "bearer", "cookie"]
"""How a request was let in."""


def _cookie_values(header: str | None) -> list[str]:
    """The values of every :data:`COOKIE_NAME` in a ``Cookie`` header (at most :data:`_MAX_COOKIES`)."""
    found: list[str] = []
    for part in (header or "").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name == COOKIE_NAME:
            found.append(value.strip().strip('"'))
            if len(found) == _MAX_COOKIES:
                break
    return found


class ReadAccess:
    """The read paths' rule: ``public``, or a bearer analyst token, or a valid sign-in cookie.

    ``analysts``: the hex SHA-256 of each analyst's token. ``key_file``: where the cookie key is kept (``None``: a key
    in memory only, lost at exit). With no analyst and not ``public`` nobody reads (:attr:`closed`)."""

    def __init__(self, analysts: Iterable[str] = (), *, public: bool = False,
                 key_file: str | os.PathLike[str] | None = None, session_seconds: int = SESSION_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.analysts = [bytes.fromhex(a) for a in dict.fromkeys(analysts)]
        self.public = public
        self.key_file = Path(key_file) if key_file is not None else None
        self.session_seconds, self.clock = session_seconds, clock
        self._key: bytes | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: IngestConfig) -> ReadAccess:
        """The config's analysts and ``public``, the cookie key in ``DATA/analyst-cookie.key``."""
        return cls(config.analysts, public=config.public, key_file=config.data_dir / KEY_FILE)

    @property
    def closed(self) -> bool:
        """No analyst and not public: every read is refused."""
        return not self.public and not self.analysts

    def is_analyst(self, digest: bytes | None) -> bool:
        """Whether ``digest`` (a token's SHA-256) is an analyst's, compared with every one in constant time."""
        return holder_of(digest, ((want, True) for want in self.analysts)) is not None

    def allows(self, authorization: str | None, cookie: str | None) -> Via | None:
        """How a request with these ``Authorization`` and ``Cookie`` headers may read (``None``: it may not)."""
        if self.public:
            return "public"
        if self.is_analyst(bearer_digest(authorization)):
            return "bearer"
        if any(self._cookie_ok(v) for v in _cookie_values(cookie)):
            return "cookie"
        return None

    def cookie_for(self, token: str) -> str | None:
        """The cookie's value for an analyst's ``token`` (``None`` when it is not one): ``<expiry>.<mac>``, the MAC in
        URL-safe base64 without padding."""
        digest = token_digest(token)
        if not self.is_analyst(digest):
            return None
        expiry = str(int(self.clock()) + self.session_seconds)
        return f"{expiry}.{self._mac(expiry, digest).decode('ascii')}"

    def set_cookie(self, value: str, secure: bool) -> str:
        """The ``Set-Cookie`` header's value that signs a browser in with ``value``."""
        return (f"{COOKIE_NAME}={value}; Max-Age={self.session_seconds}; HttpOnly; SameSite=Strict"
                + ("; Secure" if secure else ""))

    @staticmethod
    def clear_cookie(secure: bool) -> str:
        """The ``Set-Cookie`` header's value that signs a browser out."""
        return f"{COOKIE_NAME}=; Max-Age=0; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")

    def _cookie_ok(self, value: str) -> bool:
        """The MAC is compared as the text it was issued as (decoding base64 first would take a last character
        changed in its unused low bits as the same MAC)."""
        expiry, sep, mac_text = value.partition(".")
        if not sep or not expiry.isascii() or not expiry.isdigit() or len(expiry) > 12:
            return False
        now = self.clock()
        if not now < int(expiry) <= now + self.session_seconds + 60:  # expired, or longer than we ever give
            return False
        mac = mac_text.encode("utf-8", "surrogateescape")
        found = False
        for digest in self.analysts:
            found |= hmac.compare_digest(mac, self._mac(expiry, digest))
        return found

    def _mac(self, expiry: str, digest: bytes) -> bytes:
        """HMAC-SHA256 under :meth:`key` of the expiry and the analyst's token hash, in URL-safe base64 (no ``=``)."""
        mac = hmac.new(self.key(), _MAC_CONTEXT + expiry.encode("ascii") + b"\0" + digest, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=")

    def key(self) -> bytes:
        """The cookie key: read from :attr:`key_file`, made there (mode 0600) the first time. A file that cannot be
        read or written leaves a key in memory (logged): sign-ins then last until the process ends."""
        if self._key is not None:
            return self._key
        with self._lock:
            if self._key is None:
                self._key = self._load_key()
            return self._key

    def _load_key(self) -> bytes:
        """The key file read under the services' secret-file rule (made there first, mode 0600, if missing)."""
        if self.key_file is None:
            return secrets.token_bytes(32)
        try:
            if not os.path.lexists(self.key_file):
                try:  # whole before it has its name; never replaces a key another process made meanwhile
                    create_secret(self.key_file, secrets.token_bytes(32))
                except FileExistsError:
                    pass
            key = read_secret_bytes(self.key_file, "the analysts' cookie key")
            if len(key) == 32:
                return key
            logger.warning("%s is not a 32-byte key: delete it to have a new one made; sign-ins last until the "
                           "process ends meanwhile", self.key_file)
        except OSError as exc:
            logger.warning("cannot keep the analysts' cookie key in %s (%s): sign-ins last until the process ends",
                           self.key_file, exc.strerror)
        except ConfigError as exc:  # the secret-file rule refused it (readable by others, not a file, ...)
            logger.warning("%s: sign-ins last until the process ends", exc)
        return secrets.token_bytes(32)
