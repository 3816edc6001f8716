"""The one ``Authorization`` parser of both HTTP services (``ldp serve``, ``ldp serve --role leader|helper``).

RFC 9110 §11.6.2: ``Authorization = credentials``; §11.1: ``credentials = auth-scheme [ 1*SP ( token68 /
#auth-param ) ]``, and "the authentication scheme is case-insensitive". So ``Bearer``, ``bearer`` and ``BEARER``
name the one scheme (RFC 6750 §2.1's), and one or more spaces — never a tab — come between it and the token. The
scheme starts the header: what a proxy or a client put before it is not stripped (a server's parser already drops
the blanks around a field value, RFC 9110 §5.5; anything else there is not a bearer credential).

Around the token only HTTP's whitespace (``OWS``: space and tab, RFC 9110 §5.6.3) is dropped: a token with a
trailing space is the token (httptools keeps the blanks after a value, h11 strips them). ``str.strip`` would be
wrong: it also drops separators such as ``\\x1c`` to ``\\x1f``, ``\\x85`` and ``\\xa0``, so a token followed by one
of them would be taken as the token. An empty token is no token.

Tokens are never kept: each party holds the SHA-256 of the tokens it takes (``token_sha256``, 32 random bytes so one
unsalted hash suffices), and a request's token is compared by its hash against every one with
:func:`hmac.compare_digest` — no early exit at the first difference, nor at the first match — so the time an answer
takes says nothing about how close a wrong token came, or which holder a right one belongs to.

Standard library only: the services' modules that only check tokens (:mod:`ldp.ingest.access`,
:mod:`ldp.ingest.health`) import no HTTP stack.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import TypeVar

__all__ = ["SCHEME", "OWS", "bearer_token", "token_digest", "bearer_digest", "digest_of", "holder_of", "holds",
           "dap_auth_digest", "DAP_AUTH_TOKEN", "CHALLENGE"]

SCHEME = "bearer"
"""RFC 6750's scheme, lowercase: compared case-insensitively (RFC 9110 §11.1)."""
OWS = " \t"
"""HTTP's optional whitespace (RFC 9110 §5.6.3): the only characters dropped around a token."""
DAP_AUTH_TOKEN = "DAP-Auth-Token"
"""The header DAP's earlier drafts, and DAP implementations since (Janus, its interoperation test design), carry an
aggregator's or collector's token in, bare, instead of ``Authorization: Bearer``: the aggregators take either."""
CHALLENGE = "Bearer"
"""``WWW-Authenticate`` of a 401 (RFC 9110 §11.6.1: a 401 carries a challenge)."""

T = TypeVar("T")


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, without the OWS around it; ``None`` without a
    header, for another scheme, without the space after the scheme, or for an empty token."""
    if not header:
        return None
    scheme, space, rest = header.partition(" ")
    if not space or not scheme.isascii() or scheme.lower() != SCHEME:
        return None
    token = rest.strip(OWS)
    return token or None


def token_digest(token: str) -> bytes:
    """The SHA-256 of a token as the configs hold it (hex there), the OWS around it dropped first; any character
    (a header decoded as Latin-1 may hold lone surrogates after a round trip) is hashed, none refused."""
    return hashlib.sha256(token.strip(OWS).encode("utf-8", "surrogateescape")).digest()


def bearer_digest(header: str | None) -> bytes | None:
    """The SHA-256 of the token of an ``Authorization: Bearer <token>`` header (``None`` without one)."""
    token = bearer_token(header)
    return None if token is None else token_digest(token)


def digest_of(token_sha256: str | bytes | None) -> bytes | None:
    """A configured token hash (64 hex digits, or the 32 bytes) as bytes; ``None`` stays ``None``."""
    if token_sha256 is None or isinstance(token_sha256, bytes):
        return token_sha256
    return bytes.fromhex(token_sha256)


def holder_of(digest: bytes | None, holders: Iterable[tuple[bytes, T]]) -> T | None:
    """Whose token ``digest`` is among ``holders`` (pairs of a token's SHA-256 and its holder): compared with every
    one in constant time (:func:`hmac.compare_digest`), the last match kept (a config never lists a token twice)."""
    if digest is None:
        return None
    found: T | None = None
    for want, holder in holders:
        if hmac.compare_digest(digest, want):
            found = holder
    return found


def dap_auth_digest(value: str | None) -> bytes | None:
    """The SHA-256 of a ``DAP-Auth-Token`` header's token (:data:`DAP_AUTH_TOKEN`), the OWS around it dropped;
    ``None`` without one or for an empty one."""
    token = (value or "").strip(OWS)
    return token_digest(token) if token else None


def holds(header: str | None, hashes: Iterable[str | bytes | None], dap_auth: str | None = None) -> bool:
    """Whether an ``Authorization`` header bears one of the tokens whose SHA-256 are ``hashes`` (``None`` entries:
    a role with no token configured, which nobody holds); or, where the service takes it (the aggregators), a
    ``DAP-Auth-Token`` header ``dap_auth`` does, when there is no bearer token."""
    wanted = [(want, True) for h in hashes if (want := digest_of(h)) is not None]
    digest = bearer_digest(header)
    if digest is None and header is None:
        digest = dap_auth_digest(dap_auth)
    return holder_of(digest, wanted) is not None
