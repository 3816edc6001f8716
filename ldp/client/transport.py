"""The uploader's HTTP exchange under a deadline: one ``POST`` whose connect, send and whole answer end by a
time set in advance (:func:`post`), however slowly the other end sends or reads.

Socket timeouts bound one operation each, so a server answering one byte per second under a 5 s timeout keeps a
plain ``urlopen`` going for as long as it likes. Here, with the handlers of :func:`default_opener`, every socket
operation after the connection is made (each ``send`` of the request, each ``recv`` of the status line, headers
and body) first sets the socket's timeout to the time left before the deadline, and fails at once when none is
left; connecting (and the TLS handshake, which CPython bounds as a whole) gets the time left when the request
starts. The answer is read in chunks of at most 8 KiB and at most ``limit + 1`` bytes in all. Not bounded by the
deadline: name resolution (``getaddrinfo``: the system resolver's own timeout applies) and, through an HTTPS
proxy, the proxy's answer to ``CONNECT`` (each read bounded by the time left when the request started).

An opener of the caller's own (``upload(opener=...)``) gets the time left as its socket timeout, and the answer
is read in chunks with the deadline checked between them: it may overrun the deadline by one socket timeout.
Standard library only; no threads.
"""

from __future__ import annotations

import http.client
import io
import json
import math
import ssl
import time
import urllib.error
import urllib.request
from typing import Any, Protocol

__all__ = ["Answer", "Opener", "default_opener", "post"]

_CHUNK = 8192  # bytes per read or send
_MAX_SOCKET_TIMEOUT = 1e6  # seconds: socket.settimeout refuses values that do not fit a C timeval


def _left(deadline: float) -> float:
    """Seconds left before ``deadline`` (``time.monotonic``), capped for ``settimeout``; ``TimeoutError`` (handled
    like any socket timeout) when none is left."""
    left = deadline - time.monotonic()
    if not left > 0:
        raise TimeoutError("the request's deadline passed")
    return min(left, _MAX_SOCKET_TIMEOUT)


class _DeadlineReader(io.RawIOBase):
    """The socket's file for reading the answer: each read first sets the timeout to the time left."""

    def __init__(self, raw: io.RawIOBase, sock: Any, deadline: float) -> None:
        super().__init__()
        self._raw, self._sock, self._deadline = raw, sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(_left(self._deadline))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()  # the socket's own file: the socket closes when its last file does
        super().close()


class _DeadlineSocket:
    """A connected socket (plain or TLS) whose sends and reads end by ``deadline``; anything else is passed on."""

    def __init__(self, sock: Any, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def sendall(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            self._sock.settimeout(_left(self._deadline))
            sent += self._sock.send(view[sent:sent + _CHUNK])

    def makefile(self, mode: str = "r", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if mode != "rb":  # http.client reads its answers with makefile("rb") only
            raise ValueError(f"unsupported mode {mode!r}")
        return io.BufferedReader(_DeadlineReader(self._sock.makefile("rb", buffering=0), self._sock,
                                                 self._deadline))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _DeadlineConnection(http.client.HTTPConnection):
    """An ``HTTPConnection`` whose socket, once connected, ends every operation by ``deadline``."""

    def __init__(self, host: str, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(host, *args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self._deadline)


class _DeadlineHTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
    """The same over TLS (the handshake is done when the socket is wrapped)."""


class _DeadlineOpen:
    """Handlers' ``do_open`` with urllib's connection classes replaced by the deadline ones, when the request
    carries a deadline (``request.ldp_deadline``, set by :func:`post`)."""

    def do_open(self, http_class: Any, req: urllib.request.Request, **kwargs: Any) -> Any:
        deadline = getattr(req, "ldp_deadline", None)
        if deadline is not None:
            swap = {http.client.HTTPConnection: _DeadlineConnection,
                    http.client.HTTPSConnection: _DeadlineHTTPSConnection}
            http_class, kwargs = swap.get(http_class, http_class), {**kwargs, "deadline": deadline}
        return super().do_open(http_class, req, **kwargs)  # type: ignore[misc]


class _DeadlineHTTPHandler(_DeadlineOpen, urllib.request.HTTPHandler):
    pass


class _DeadlineHTTPSHandler(_DeadlineOpen, urllib.request.HTTPSHandler):
    pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: following one would send the token and the reports to another address."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


class Opener(Protocol):
    """What ``upload`` needs of a ``urllib.request.OpenerDirector``."""

    def open(self, fullurl: urllib.request.Request, data: None = None, timeout: float = ...) -> Any: ...


def default_opener(*handlers: urllib.request.BaseHandler, context: ssl.SSLContext | None = None
                   ) -> urllib.request.OpenerDirector:
    """urllib's opener (proxies from the environment, HTTPS checked with ``context``, default: the system's CAs),
    redirects refused, every request under its deadline; ``handlers`` are added (a ``ProxyHandler`` of the
    app's, say). The HTTP and HTTPS handlers are this module's: pass a TLS context as ``context``."""
    if any(isinstance(h, (urllib.request.HTTPHandler, urllib.request.HTTPSHandler)) for h in handlers):
        raise ValueError("default_opener makes its own HTTP(S) handlers (they keep the deadline): give a TLS "
                         "context as default_opener(context=...) instead of an HTTPSHandler")
    return urllib.request.build_opener(_NoRedirect(), _DeadlineHTTPHandler(), _DeadlineHTTPSHandler(context=context),
                                       *handlers)


class Answer:
    """One exchange: ``status`` (``None``: no whole HTTP answer), ``Retry-After``, the body (``over``: it was longer
    than the limit, and cut there), or the connection error; ``timed_out``: the deadline passed."""

    def __init__(self, status: int | None, retry_after: str | None = None, body: bytes = b"", error: str = "",
                 over: bool = False, timed_out: bool = False) -> None:
        self.status, self.retry_after, self.body, self.error = status, retry_after, body, error
        self.over, self.timed_out = over, timed_out

    def reason(self) -> str:
        """The server's ``error`` field, else the connection error, else ``HTTP <status>``."""
        try:
            data = json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return "".join(c if c.isprintable() else "?" for c in data["error"][:100])
        return self.error or f"HTTP {self.status}"


def _read(response: Any, limit: int, deadline: float) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the answer's body, and whether there was more; the deadline is checked before
    each chunk (``read1``: what one socket read gives, so a trickle cannot hold one call). A body that ends before
    its ``Content-Length`` (the server died mid-answer) is ``http.client.IncompleteRead``: no answer, not a short
    one."""
    read = getattr(response, "read1", None) or response.read
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        _left(deadline)
        chunk = read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            missing = getattr(response, "length", None)  # http.client: bytes of Content-Length not read yet
            if isinstance(missing, int) and missing > 0:
                raise http.client.IncompleteRead(b"".join(parts), missing)
            break
        parts.append(chunk)
        size += len(chunk)
    body = b"".join(parts)
    return body[:limit], size > limit


def post(opener: Opener, url: str, headers: dict[str, str], body: bytes, deadline: float, limit: int,
         method: str = "POST") -> Answer:
    """``POST body`` to ``url`` (or ``method``: a DAP upload is a ``PUT``), ended by ``deadline``
    (``time.monotonic``); at most ``limit`` bytes of answer are read. Never raises for what the network or the server
    does: the :class:`Answer` says it."""
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    request.ldp_deadline = deadline  # type: ignore[attr-defined]  # read by the deadline handlers
    try:
        timeout = _left(deadline)
        with opener.open(request, timeout=timeout) as response:
            status, retry_after = response.status, response.headers.get("Retry-After")
            data, over = _read(response, limit, deadline)
            return Answer(status, retry_after, data, over=over)
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                data, over = _read(exc, limit, deadline)
            except (OSError, http.client.HTTPException, ValueError):
                data, over = b"", False
            return Answer(exc.code, exc.headers.get("Retry-After"), data, over=over)
    except (OSError, http.client.HTTPException, ValueError) as exc:  # URLError, timeouts, resets, closed files
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        timed_out = isinstance(reason, TimeoutError) or (math.isfinite(deadline) and time.monotonic() >= deadline)
        if timed_out:
            return Answer(None, error="no whole answer before the request's deadline", timed_out=True)
        return Answer(None, error=f"{type(exc).__name__}: {reason}"[:200])
