"""The one body limit of both HTTP services: a request body is read as it streams in, and refused with 413 (a
problem document, :mod:`ldp.web.problems`) before more than its limit is read.

A ``Content-Length`` over the limit is refused before a byte of the body is read (RFC 9110 §15.5.14: the server
may close the connection then); a body without one (chunked) is counted as it comes, and refused at the chunk that
passes the limit: a client can never make the service hold more than the limit and one chunk. Each route has its
own limit (the ingest service's ``[limits] max_body_bytes``, an aggregator's report, job or collection request);
the rule is this one.

A ``sink`` takes each chunk instead of the body being kept (the ingest service inflates a gzip body as it arrives
and charges what it holds to its memory budget: its own refusals, 400 or 429, pass through). ``timeout`` bounds the
whole body (408, ``body_timeout``). A client gone mid-body is Starlette's ``ClientDisconnect``, answered by the
layer's handler (400, ``client_disconnected``) unless the route catches it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request

__all__ = ["check_length", "read_body", "too_large"]


def too_large(limit: int) -> HTTPException:
    """The refusal of a body over ``limit`` bytes (413, ``too_large``)."""
    return HTTPException(413, f"the body is over {limit} bytes", headers={"Connection": "close"})


def check_length(request: Request, limit: int) -> None:
    """413 when the request's ``Content-Length`` says more than ``limit`` bytes (before any byte is read)."""
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise too_large(limit)


async def read_body(request: Request, limit: int, *, timeout: float | None = None,
                    sink: Callable[[bytes], None] | None = None) -> tuple[bytes, int]:
    """The body (``b""`` when a ``sink`` took it) and its size on the wire, read under ``limit`` bytes (413) and
    within ``timeout`` seconds (408; ``None``: no bound)."""
    check_length(request, limit)
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                if sink is not None:
                    sink(chunk)
                else:
                    parts.append(chunk)
    except TimeoutError:
        raise HTTPException(408, f"the body took over {timeout} s", headers={"Connection": "close"}) from None
    return b"".join(parts), size
