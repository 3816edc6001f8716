"""CORS for ``POST /v1/reports``: web pages on the origins of the config's ``cors_origins`` may upload.

A page's ``fetch`` to the ingest service (another origin, with ``Authorization`` and a non-simple ``Content-Type``) is
preceded by a preflight, ``OPTIONS /v1/reports`` with ``Origin`` and ``Access-Control-Request-Method: POST``:
:meth:`Cors.preflight` answers 204 with the ``Access-Control-Allow-*`` headers for a listed origin, 403 with a
problem document (:mod:`ldp.web.problems`) and no CORS header otherwise (the browser then refuses the upload). The
upload's answer, whatever its status, carries ``Access-Control-Allow-Origin``, ``Vary: Origin`` and
``Access-Control-Expose-Headers: Retry-After`` when its ``Origin`` is listed (:meth:`Cors.allowed`,
:meth:`Cors.expose`), so the page can read its JSON, its status and ``Retry-After``. No cookies are used, so
``Access-Control-Allow-Credentials`` is never sent; with ``cors_origins = ["*"]`` the request's own origin is echoed,
never ``*``.

uvicorn (h11 and httptools alike) and Starlette's test client give the headers as ``scope["headers"]``, a list of
``(name, value)`` bytes with lowercase names: :meth:`Cors.allowed` looks for ``b"origin"`` there, and a
request without it costs one pass over that list. httptools keeps the blanks after a value (h11 strips them, as
RFC 9110 says): they are stripped here."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from starlette.responses import Response

from ldp.web.problems import problem

__all__ = ["Cors", "ALLOW_HEADERS", "MAX_AGE_SECONDS"]

ALLOW_HEADERS = "authorization, content-type, content-encoding, ldp-batch-id"
"""The request headers an upload may carry (``Access-Control-Allow-Headers``)."""
MAX_AGE_SECONDS = 600
"""How long a browser may reuse a preflight's answer (``Access-Control-Max-Age``; Chrome caps it at 7,200)."""
_ANY_ORIGIN = re.compile(rb"[a-z][a-z0-9+.-]*://[\x21-\x7e]{1,300}\Z")
"""An ``Origin`` echoed under ``cors_origins = ["*"]``: a scheme, ``://`` and visible ASCII only (what a browser
sends), so the echo is a valid header value for any HTTP/1.1 server; other values are not echoed."""
_LOGGED_ORIGIN = 200
"""Characters of a refused origin kept in the access log."""


class Cors:
    """The CORS answers of one app: ``origins`` as the config's ``cors_origins`` (``("*",)``: any origin)."""

    __slots__ = ("any", "origins", "_preflight")

    def __init__(self, origins: Iterable[str]) -> None:
        origins = tuple(origins)
        self.any = origins == ("*",)
        self.origins = frozenset(o.encode("ascii") for o in origins if o != "*")
        self._preflight = [(b"access-control-allow-methods", b"POST"),
                           (b"access-control-allow-headers", ALLOW_HEADERS.encode("ascii")),
                           (b"access-control-max-age", str(MAX_AGE_SECONDS).encode("ascii")), (b"vary", b"Origin")]

    def allowed(self, headers: list[tuple[bytes, bytes]]) -> bytes | None:
        """The request's ``Origin`` when it may upload (``None`` without one or when it is not listed)."""
        for name, value in headers:
            if name == b"origin":
                value = value.rstrip(b" \t")  # httptools keeps the blanks after a value (h11 strips them)
                if value in self.origins or (self.any and _ANY_ORIGIN.match(value)):
                    return value
                return None
        return None

    def expose(self, origin: bytes, response: Response) -> None:
        """Let the page of ``origin`` (an allowed one) read ``response``: its body, status and ``Retry-After``."""
        response.raw_headers += [(b"access-control-allow-origin", origin), (b"vary", b"Origin"),
                                 (b"access-control-expose-headers", b"Retry-After")]

    def preflight(self, headers: list[tuple[bytes, bytes]], log: dict[str, Any]) -> Response:
        """The answer to ``OPTIONS /v1/reports`` with an ``Origin``: 204 with the CORS headers when the origin is
        listed and the method asked for is POST, 403 without any CORS header otherwise; what to log goes to
        ``log``."""
        origin = self.allowed(headers)
        method = next((v.rstrip(b" \t") for k, v in headers if k == b"access-control-request-method"), None)
        if origin is None:
            sent = next((v for k, v in headers if k == b"origin"), b"")
            log.update(origin=sent.decode("latin-1")[:_LOGGED_ORIGIN], error="origin_not_allowed")
            return problem(403, "origin_not_allowed", "pages of this origin may not upload here (the ingest service's "
                           "cors_origins)")
        log["origin"] = origin.decode("ascii")
        if method != b"POST":
            log["error"] = "method_not_allowed"
            return problem(403, "method_not_allowed", "only POST may be sent here from another origin "
                           "(Access-Control-Request-Method: POST)")
        response = Response(status_code=204)
        response.raw_headers += [(b"access-control-allow-origin", origin), *self._preflight]
        return response
