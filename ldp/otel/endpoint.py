"""The ingest endpoint a privatizing reader uploads to (:mod:`ldp.otel.reader`), checked when the reader is made, and
what the log says of an upload that failed. Standard library and :mod:`ldp.client` only.

``ldp serve`` takes reports on ``POST /v1/reports`` (``ldp.ingest.app.UPLOAD_PATH``) and answers anything else at its
root with an error (a ``POST`` to the base URL: 405). A reader given the base URL would queue every report and fail
each upload, so its ``url`` must name the endpoint itself: an http(s) URL whose path ends with ``/v1/reports`` (a
reverse proxy may put a prefix before it: ``https://example.com/telemetry/v1/reports``)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

from ldp.client.uploader import _endpoints

__all__ = ["INGEST_PATH", "check_ingest_url", "shown_url", "upload_failure"]

INGEST_PATH = "/v1/reports"
"""The path ``ldp serve`` takes reports on (``ldp.ingest.app.UPLOAD_PATH``, which a test keeps equal)."""


def shown_url(url: str) -> str:
    """``url`` as a log line or an error may show it: scheme, host, port and path only (no user, password, query or
    fragment, which may carry secrets)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # e.g. an unclosed "[": nothing of it is shown
        return "(not a URL)"
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:  # a port that is not a number: shown without it
        port = ""
    return "".join(c if c.isprintable() else "?" for c in f"{parts.scheme}://{host}{port}{parts.path}")


def check_ingest_url(url: str | Sequence[str]) -> list[str]:
    """The reader's ``url`` as a list of endpoints, each an ``ldp serve`` upload endpoint; ``ValueError`` saying
    which one is not and what was probably meant (the uploader's own checks first: http(s), a host, none twice)."""
    urls = _endpoints(url)
    for i, one in enumerate(urls):
        path = urllib.parse.urlsplit(one).path
        if not path.endswith(INGEST_PATH):
            which = "url" if len(urls) == 1 else f"url {i}"
            meant = shown_url(one).rstrip("/") + INGEST_PATH
            raise ValueError(f"{which} {shown_url(one)!r} is not an ingest service's upload endpoint: `ldp serve` "
                             f"takes reports on POST {INGEST_PATH}, so the URL must end with it (did you mean "
                             f"{meant!r}?)")
    return urls


def upload_failure(exc: BaseException) -> str:
    """What a failed upload's log line says of ``exc``: the HTTP status and the server's reason of an
    :class:`~ldp.errors.UploadError` (``no answer`` when none came), the exception's type and text otherwise. Never a
    report line or the token (neither is in these errors)."""
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    if hasattr(exc, "status") and hasattr(exc, "reason"):
        said = f"HTTP {status}" if isinstance(status, int) else "no answer"
        return f"{said} ({reason}), {type(exc).__name__}"
    return f"{type(exc).__name__}: {exc}"
