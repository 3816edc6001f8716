"""How ``ldp serve`` runs uvicorn: the HTTP/1.1 protocol with per-connection deadlines, the server
config, the open-files limit and the start-up line.

uvicorn's own protocols only time out a connection *between* requests, and only once it has
answered one: a connection that never sends a byte, or sends its headers one byte at a time, stays
open forever, and ``limit_concurrency`` counts such connections, so a thousand of them turn every
request away with 503. :class:`DeadlineHttpToolsProtocol` (uvicorn's protocol on the httptools parser, the
``serve`` extra's default) and :class:`DeadlineH11Protocol` (uvicorn's pure-Python h11 protocol, used when
httptools is not installed) close a connection that

* sends no byte for ``idle_timeout_seconds`` while no request is in progress (a new connection, or
  a keep-alive one after its last answer), or
* has not sent the complete headers of its next request ``header_timeout_seconds`` after the
  connection was accepted or its last answer sent, whatever it sends meanwhile (answered 408 if
  it sent part of a request).

Once the headers are complete the request belongs to the app, whose ``body_timeout_seconds`` bounds
the body. A request whose headers are not complete within ``max_header_bytes`` is answered 400 (h11 counts
them itself; for httptools the bytes received since the deadline was armed are counted after each read, so
one read of at most 256 KiB may pass the limit before the answer). httptools parses a request in C, which
frees the event loop's time for validation (``simulations/bench_serve.py``).

The server has no connection cap (:func:`server_config`): connections are bounded by the deadlines, the
open-files limit (raised to the hard limit by :func:`raise_open_files_limit`) and the listen backlog; memory by
``max_header_bytes`` per connection (what it may buffer before its headers are complete; 400 beyond) and
``max_buffered_bytes`` for the bodies. No WebSocket upgrades."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import resource
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools comes with the serve extra
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from ldp.ingest.config import IngestConfig, Limits

__all__ = ["RateLimitFilter", "limit_server_log", "ConnectionStats", "DeadlineH11Protocol",
           "DeadlineHttpToolsProtocol", "protocol_class",
           "server_config", "ListeningServer", "raise_open_files_limit", "startup_line", "print_startup_line",
           "BACKLOG", "SWITCH_INTERVAL"]

BACKLOG = 2048
"""The listen backlog: connections the kernel completes before the server accepts them (capped by
``net.core.somaxconn``, 4096 on Linux since 5.4)."""

ACCEPT_BATCH = 64
"""Connections accepted per turn of the event loop. asyncio accepts up to its ``backlog`` argument per
turn, then sets each one up before anything else runs: 2,000 sockets opened at once held every upload
for about 100 ms. :class:`ListeningServer` gives asyncio this smaller number and sets the kernel's
queue to :data:`BACKLOG` itself, so a burst is accepted in slices between other requests."""

SWITCH_INTERVAL = 0.0005
"""``sys.setswitchinterval`` of ``ldp serve`` (Python's default: 0.005 s). The event loop gives up the GIL inside
every numpy operation over 500 elements and every system call; taking it back waits until the thread holding it
(the segment writer, the shuffling of a closing segment, the fold) yields, up to the switch interval each time.
At 0.5 ms an upload waits less behind them: +5 to +17 % reports/s in three interleaved pairs of runs of
``simulations/bench_serve.py`` on a 2-core machine."""

_TIMEOUT_BODY = b'{"error": "header_timeout", "detail": "the request headers took too long to arrive"}'
_TIMEOUT_408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY))


JITTER = 0.2
"""Each deadline is its limit times a factor drawn uniformly from [1, 1 + JITTER] (per connection for the
idle one, per request for the header one): a crowd opened at one moment then expires over a spread of
moments instead of all in one turn of the event loop, which held every other request back (390 ms for
2,000 sockets; 60 ms once spread, ``simulations/bench_connections.py``)."""


def _jitter(limit: float) -> float:
    """``limit`` times U(1, 1 + JITTER): never earlier than the limit a client was promised."""
    return limit * (1.0 + JITTER * random.random())  # noqa: S311  # spreading timers, not a secret


@dataclass
class ConnectionStats:
    """Connections open now, and counts since start, shared by every connection of one server. The event loop
    changes them under :attr:`lock`, a connection leaves ``open`` when the server decides to close it (not a
    turn later, when the socket is gone), and :meth:`snapshot` reads them under the lock: the counts a scrape
    sees add up (``accepted`` = ``open`` + ``idle_closed`` + ``header_timeouts`` + the other closes)."""

    open: int = 0
    accepted: int = 0
    idle_closed: int = 0
    header_timeouts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def snapshot(self) -> ConnectionStats:
        """A copy of the counts, taken at one moment."""
        with self.lock:
            return ConnectionStats(self.open, self.accepted, self.idle_closed, self.header_timeouts)


class _Deadlines(asyncio.Protocol):
    """An idle timeout from the accept on and a header deadline per request, for a uvicorn HTTP protocol (the
    class this is mixed into). Use :func:`protocol_class` to get a subclass with the limits set."""

    header_timeout: ClassVar[float] = 10.0
    idle_timeout: ClassVar[float] = 5.0
    max_header_bytes: ClassVar[int] = 8192
    stats: ClassVar[ConnectionStats] = ConnectionStats()
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    timeout_keep_alive: int
    timeout_keep_alive_task: asyncio.TimerHandle | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = _jitter(self.idle_timeout)  # type: ignore[assignment]  # uvicorn's timer
        self._deadline: asyncio.TimerHandle | None = None
        self._partial = 0  # bytes received since the deadline was armed
        self._closed = False  # counted out of ConnectionStats.open

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        with self.stats.lock:
            self.stats.accepted += 1
            self.stats.open += 1
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._count_close(None)
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deadline is not None:
            self._partial += len(data)
        super().data_received(data)
        if self._deadline is not None:
            if self._in_request():
                self._disarm()
            elif self._partial > self.max_header_bytes and not self.transport.is_closing():
                self._headers_too_large()

    def _headers_too_large(self) -> None:
        """Headers over ``max_header_bytes`` and still incomplete (a protocol without its own count)."""

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]  # arms the idle timer; may start a pipelined request
        if not self.transport.is_closing() and not self._in_request():
            self._arm()

    def timeout_keep_alive_handler(self) -> None:
        if not self.transport.is_closing():
            self._count_close("idle_closed")
        super().timeout_keep_alive_handler()  # type: ignore[misc]

    def _count_close(self, cause: str | None) -> None:
        """The connection leaves ``open`` (once), counted under ``cause`` when the server closes it for one."""
        if self._closed:
            return
        self._closed = True
        with self.stats.lock:
            self.stats.open -= 1
            if cause is not None:
                setattr(self.stats, cause, getattr(self.stats, cause) + 1)

    def _unset_keepalive_if_required(self) -> None:
        super()._unset_keepalive_if_required()  # type: ignore[misc]

    def _answering(self) -> bool:
        """An answer is being written (a 408 would land in its middle)."""
        return False

    def _in_request(self) -> bool:
        """A request's headers are complete and its answer is not (the app owns the connection)."""
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._partial = 0
        self._deadline = self.loop.call_later(_jitter(self.header_timeout), self._header_timeout)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _header_timeout(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self._in_request():
            return
        self._count_close("header_timeouts")
        if self._partial and not self._answering():  # part of a request, no answer under way
            self.transport.write(_TIMEOUT_408)
        self._unset_keepalive_if_required()
        self.transport.close()


class DeadlineH11Protocol(_Deadlines, H11Protocol):
    """uvicorn's h11 protocol with the deadlines (:class:`_Deadlines`); h11 bounds the headers itself."""

    def _answering(self) -> bool:
        return self.conn.our_state is not h11.IDLE


if HttpToolsProtocol is not None:
    class DeadlineHttpToolsProtocol(_Deadlines, HttpToolsProtocol):
        """uvicorn's httptools protocol with the deadlines (:class:`_Deadlines`) and the header limit: answered
        400 and closed, as h11 does, once ``max_header_bytes`` came without the end of the headers."""

        def _headers_too_large(self) -> None:
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
else:  # pragma: no cover - httptools comes with the serve extra
    DeadlineHttpToolsProtocol = None  # type: ignore[assignment,misc]


def protocol_class(limits: Limits, stats: ConnectionStats | None = None,
                   parser: str | None = None) -> type[asyncio.Protocol]:
    """A subclass of :class:`DeadlineHttpToolsProtocol` (``parser="httptools"``, the default when installed) or
    :class:`DeadlineH11Protocol` (``"h11"``) with the deadlines and header limit of ``limits`` (and its own
    counters)."""
    parser = parser or ("httptools" if DeadlineHttpToolsProtocol is not None else "h11")
    if parser == "httptools" and DeadlineHttpToolsProtocol is None:
        raise ImportError("httptools is not installed: pip install httptools, or use the h11 protocol")
    base: type[_Deadlines] = DeadlineHttpToolsProtocol if parser == "httptools" else DeadlineH11Protocol
    attrs = {"header_timeout": float(limits.header_timeout_seconds),
             "idle_timeout": float(limits.idle_timeout_seconds), "max_header_bytes": int(limits.max_header_bytes),
             "stats": stats or ConnectionStats()}
    return type(base.__name__, (base,), attrs)


def server_config(app: Any, limits: Limits, *, host: str, port: int, stats: ConnectionStats | None = None,
                  parser: str | None = None) -> uvicorn.Config:
    """The uvicorn config of ``ldp serve``: no connection cap (idle and slow connections are closed by
    the deadlines instead), the HTTP protocol with them (:func:`protocol_class`), and a graceful shutdown as long
    as a body may take."""
    return uvicorn.Config(
        app, host=host, port=port, http=protocol_class(limits, stats, parser), ws="none", log_config=None,
        access_log=False, lifespan="on", limit_concurrency=None, backlog=ACCEPT_BATCH,
        timeout_keep_alive=max(1, math.ceil(limits.idle_timeout_seconds)),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        timeout_graceful_shutdown=int(limits.body_timeout_seconds) + 5, server_header=False)


class ListeningServer(uvicorn.Server):
    """A uvicorn server that calls ``on_listening`` with the bound addresses once it accepts connections,
    its listen queue set to :data:`BACKLOG` while asyncio accepts :data:`ACCEPT_BATCH` per turn."""

    def __init__(self, config: uvicorn.Config, on_listening: Callable[[list[tuple[Any, ...]]], None]) -> None:
        super().__init__(config)
        self.on_listening = on_listening

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        for server in self.servers:
            for s in server.sockets or ():
                with socket.socket(fileno=os.dup(s.fileno())) as listener:  # the same socket, another descriptor
                    listener.listen(max(BACKLOG, self.config.backlog))
        if self.started:
            self.on_listening([s.getsockname() for server in self.servers for s in server.sockets or ()])


def raise_open_files_limit() -> int:
    """Raise the soft limit on open files to the hard limit (each connection holds one); the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft == resource.RLIM_INFINITY or (want != resource.RLIM_INFINITY and want <= soft):
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):  # e.g. macOS refuses above OPEN_MAX
        return soft
    return want


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def _address(addr: Sequence[Any]) -> str:
    host, port = addr[0], addr[1]
    return f"http://[{host}]:{port}" if ":" in str(host) else f"http://{host}:{port}"


def startup_line(config: IngestConfig, addresses: Sequence[Sequence[Any]], open_files: int) -> str:
    """The one line ``ldp serve`` prints once it listens: where, the data, the apps and the limits that matter."""
    lim = config.limits
    fold = f"fold every {config.fold_every_seconds:g} s" if config.fold_every_seconds > 0 else "fold off"
    return (f"ldp serve: listening on {', '.join(_address(a) for a in addresses)} — data {config.data_dir} — "
            f"apps: {', '.join(sorted(config.apps))} — {fold} — limits: headers {lim.header_timeout_seconds:g} s, "
            f"idle {lim.idle_timeout_seconds:g} s, body {lim.body_timeout_seconds:g} s and "
            f"{_mib(lim.max_body_bytes)}, {_mib(lim.max_buffered_bytes)} of bodies held, "
            f"{open_files} open files")


def print_startup_line(config: IngestConfig, open_files: int, stream: TextIO | None = None
                       ) -> Callable[[list[tuple[Any, ...]]], None]:
    """An ``on_listening`` callback printing :func:`startup_line` to ``stream`` (stderr)."""
    def on_listening(addresses: list[tuple[Any, ...]]) -> None:
        out = stream or sys.stderr
        out.write(startup_line(config, addresses, open_files) + "\n")
        out.flush()
    return on_listening


class RateLimitFilter(logging.Filter):
    """Let at most ``burst`` records of one message (its template) through per ``period`` seconds; the first
    record after a quiet spell says how many were dropped. uvicorn logs one warning per malformed connection
    ("Invalid HTTP request received."): without this, anyone could fill the log with junk requests."""

    def __init__(self, burst: int = 10, period: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst, self.period, self.clock = burst, period, clock
        self._seen: dict[str, tuple[float, int, int]] = {}  # template -> (window start, passed, dropped)

    def filter(self, record: logging.LogRecord) -> bool:
        key, now = str(record.msg), self.clock()
        start, passed, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self.period:
            if dropped:
                record.msg = f"{record.msg} ({dropped} more like it in the last {self.period:g} s were not logged)"
            start, passed, dropped = now, 0, 0
        if passed >= self.burst:
            self._seen[key] = (start, passed, dropped + 1)
            return False
        if len(self._seen) > 1000:  # templates are few; bound the table anyway
            self._seen.clear()
        self._seen[key] = (start, passed + 1, dropped)
        return True


def limit_server_log(stream: TextIO | None = None) -> None:
    """Send uvicorn's own messages (``uvicorn.error``) to stderr through a :class:`RateLimitFilter`."""
    log = logging.getLogger("uvicorn.error")
    if any(isinstance(f, RateLimitFilter) for h in log.handlers for f in h.filters):
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("ldp serve: %(levelname)s: %(message)s"))
    handler.addFilter(RateLimitFilter())
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
