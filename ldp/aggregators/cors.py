"""CORS at the aggregators' two device routes, so that a web page of any origin can upload DAP reports.

A page's ``fetch`` of ``PUT /tasks/{task}/reports`` (leader) sends ``Content-Type: application/dap-report``, which
is no CORS-safelisted type: the browser first sends a preflight, ``OPTIONS`` on the same path, and sends the upload
only if the preflight's answer allows it; it then lets the page read the upload's answer (its status, its problem
document) only if that answer carries ``Access-Control-Allow-Origin`` too. ``GET /hpke_config`` (both roles) is a
simple request, but its answer must carry the header as well for the page to read the config list.

The policy, fixed (no config key): **any origin, no credentials.** ``Access-Control-Allow-Origin: *`` on every
answer of ``PUT /tasks/{task}/reports`` (the leader's; refusals and 5xx included, so a page can read why a report
was refused) and of ``GET``/``HEAD /hpke_config``; ``OPTIONS`` on either path answered 204 with
``Access-Control-Allow-Origin: *``, ``-Allow-Methods`` (``PUT``, resp. ``GET``), ``-Allow-Headers: content-type``
and ``-Max-Age`` (:data:`MAX_AGE_SECONDS`), whatever the request's headers (an answer that depends on nothing in the
request needs no ``Vary``). ``Access-Control-Allow-Credentials`` is never sent: a browser refuses a ``*`` answer to
a request made with credentials, and no request header but ``content-type`` is allowed. The reasons: these two
routes take no token and no cookie (anyone may upload: DAP-09 §4.4.2 lets aggregators require client authentication,
``ldp`` requires none), and a report is sealed and carries no identifier, so a list of origins would protect nothing
that a program outside a browser cannot do already. Janus chose the same (divviup/janus,
``aggregator/src/aggregator/http_handlers.rs``: a CORS layer on these two routes only, any origin, its draft's
upload method resp. GET, ``content-type``, a day's max age; it echoes the ``Origin`` where this sends ``*``). DAP-09
itself says nothing about CORS. The ingest service differs (:mod:`ldp.ingest.cors`): its uploads carry an app's
token, so its origins are listed in its config.

Every other route (the helper's aggregation routes, the collector's and operator's, ``/status``, ``/``,
``/healthz``) answers without any CORS header, preflights included (405 or 404 as before): a page of another
origin can neither call nor read them.

Both servers answer alike (``tests/aggregators/test_front.py``): :class:`AggregatorApp` puts :class:`DeviceCors`
outside the whole Starlette stack (so that a 500 of the server-error middleware carries the header too), and the
native door's batched uploads (:mod:`ldp.aggregators.uploads`) add :data:`ALLOW_ANY_ORIGIN` to each answer. One
answer differs: when a request's handling raises, uvicorn sends the server-error middleware's 500 (with the header)
while :class:`ldp.web.front.Front` sends its own 500 (without it)."""

from __future__ import annotations

import re
from typing import Any

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["AggregatorApp", "DeviceCors", "ALLOW_ANY_ORIGIN", "MAX_AGE_SECONDS", "UPLOAD_PATH", "cors_headers",
           "with_cors"]

ALLOW_ANY_ORIGIN = (b"access-control-allow-origin", b"*")
"""The header every answer of a device route carries (module docstring)."""
MAX_AGE_SECONDS = 86400
"""How long a browser may reuse a preflight's answer (``Access-Control-Max-Age``): a day, Firefox's cap (Chromium
caps it at 2 hours); the answer never changes, the policy being fixed."""
UPLOAD_PATH = re.compile(r"/tasks/([^/]+)/reports")
"""The upload route's path (Starlette's ``{task}``: one segment), matched on the decoded path as Starlette does."""
_HPKE_CONFIG = "/hpke_config"


def _allowed_method(role: str, path: str) -> str | None:
    """The method a page may send to ``path`` at an aggregator of ``role``: ``PUT`` for the leader's upload route,
    ``GET`` for ``/hpke_config``; ``None`` for every other path (no CORS)."""
    if path == _HPKE_CONFIG:
        return "GET"
    if role == "leader" and UPLOAD_PATH.fullmatch(path):
        return "PUT"
    return None


def cors_headers(role: str, method: str, path: str) -> list[tuple[bytes, bytes]]:
    """The CORS headers of the answer to ``method path`` (the decoded path) at an aggregator of ``role``: the
    preflight's for ``OPTIONS`` on a device route, :data:`ALLOW_ANY_ORIGIN` for the route's own method (and
    ``HEAD`` beside ``GET``), none otherwise (module docstring)."""
    allowed = _allowed_method(role, path)
    if allowed is None:
        return []
    if method == "OPTIONS":
        return [ALLOW_ANY_ORIGIN, (b"access-control-allow-methods", allowed.encode("ascii")),
                (b"access-control-allow-headers", b"content-type"),
                (b"access-control-max-age", str(MAX_AGE_SECONDS).encode("ascii"))]
    if method == allowed or (allowed == "GET" and method == "HEAD"):
        return [ALLOW_ANY_ORIGIN]
    return []


def with_cors(response: Response) -> Response:
    """``response`` (an answer of the upload route) with :data:`ALLOW_ANY_ORIGIN` appended to its headers."""
    response.raw_headers.append(ALLOW_ANY_ORIGIN)
    return response


class DeviceCors:
    """An ASGI app answering the device routes' preflights itself and adding :func:`cors_headers` to ``app``'s
    answers of the device routes; every other request passed through untouched (module docstring)."""

    def __init__(self, app: ASGIApp, role: str) -> None:
        self.app, self.role = app, role

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        extra = cors_headers(self.role, scope["method"], scope["path"]) if scope["type"] == "http" else []
        if not extra:
            await self.app(scope, receive, send)
        elif scope["method"] == "OPTIONS":
            preflight = Response(status_code=204)
            preflight.raw_headers.extend(extra)
            await preflight(scope, receive, send)
        else:
            async def send_with_cors(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), *extra]}
                await send(message)

            await self.app(scope, receive, send_with_cors)


class AggregatorApp(Starlette):
    """An aggregator's Starlette app (:func:`ldp.aggregators.routes.create_app`): :class:`DeviceCors` around its
    whole middleware stack, for the role of its ``state.aggregator`` (set before the first request)."""

    def build_middleware_stack(self) -> Any:
        """Starlette's stack (its server-error middleware outermost) inside :class:`DeviceCors`."""
        return DeviceCors(super().build_middleware_stack(), self.state.aggregator.role)
