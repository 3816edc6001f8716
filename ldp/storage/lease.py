"""A lease in the store itself: one holder at a time of a role (the shuffler of an app, an ingest service replica's
name), agreed through the store's conditional create alone — no lock server, no clock agreement beyond a margin.

**The objects.** A lease is the objects under one prefix (``apps/<app>/shuffler/lease/``,
``replicas/<name>/lease/``), named ``g<generation>-r<renewal>.json`` (zero-padded: they sort by generation, then
renewal). The greatest one is the lease's state::

    {"format": "ldp-lease/1", "role": ..., "holder": "<host>:<pid>:<nonce>", "host": ..., "pid": ...,
     "token": <generation>, "renewal": <n>, "acquired": <Unix s>, "expires": <Unix s>, "released": false}

* **Acquire.** List; if the greatest object is live (not released, ``expires`` later than now) another process holds
  the lease: :class:`~ldp.errors.LeaseHeldError` naming it, its host and pid, and when it expires. Else create
  ``g<g+1>-r0`` with :meth:`~ldp.storage.Store.create` (S3 ``If-None-Match: *``; a folder's ``link(2)``): of several
  processes trying at once exactly one succeeds, the others see its lease. The generation is the holder's
  **fencing token**, written into every object it produces.
* **Renew**, every ``ttl/4`` from a thread of its own: create ``g<g>-r<n+1>`` with a later expiry — only while the
  greatest object is still its own and its lease has not run out on its own clock. A lease taken over is never
  renewed: the taker's ``g<g+1>-r0`` sorts after every renewal of ``g``.
* **Hold.** Before every write, :meth:`Lease.ensure` checks — on the monotonic (boot-time) clock, which goes on while
  the process is paused, stopped or suspended — that the last successful renewal (or the acquisition) started less
  than ``ttl·(1 − 1/3)`` ago: the last third of the ttl is the margin for clocks that disagree. Past it, or once a
  renewal saw a newer generation, :class:`~ldp.errors.LeaseLostError` and nothing more is written. A holder paused
  past its expiry therefore stops before its next write, whoever took over meanwhile.
* **Release** at the end: ``g<g>-r<n+1>`` marked released, so the next acquirer need not wait for the expiry. A
  holder that died is taken over once its lease expires (``ttl`` after its last renewal).

**Assumption**, stated once: the clocks of the processes sharing a lease differ by less than ``ttl/3`` (NTP keeps
them within milliseconds; the default ttl is a minute). The store must refuse a second create of a key: checked
when a lease is first acquired (:meth:`Lease.check_exclusive`), :class:`~ldp.errors.ConditionalWriteError` if not.

:class:`FencedStore` wraps a store so that every write goes through :meth:`Lease.ensure` first: the shuffler and a
replica write only through it (one writer by construction, not by a line in the docs).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldp.errors import ConditionalWriteError, LeaseHeldError, LeaseLostError, StorageError
from ldp.storage.absent import missing_root
from ldp.storage.base import Store, StoreWrapper

__all__ = ["Lease", "LeaseInfo", "FencedStore", "LEASE_FORMAT", "DEFAULT_TTL_SECONDS", "holder_identity", "pid_gone",
           "dead_holder_here"]

logger = logging.getLogger(__name__)
LEASE_FORMAT = "ldp-lease/1"
DEFAULT_TTL_SECONDS = 60.0
"""How long a lease lasts past its last renewal: a dead holder is taken over this long after it stopped."""
MARGIN = 1 / 3
"""The share of the ttl a holder gives up at its end: clocks of the sharing processes may differ by this much."""
_NAME = re.compile(r"g(\d{12})-r(\d{10})\.json\Z")
_CLOCK = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)  # Linux: counts a suspended machine's time too


def _boot_clock() -> float:
    return time.clock_gettime(_CLOCK)


def holder_identity() -> tuple[str, str, int]:
    """``(holder, host, pid)`` of a new lease holder in this process: ``<host>:<pid>:<8 random hex>`` (the nonce
    tells two holders of one process apart, and a pid reused after a restart)."""
    host, pid = socket.gethostname(), os.getpid()
    return f"{host}:{pid}:{secrets.token_hex(4)}", host, pid


@dataclass(frozen=True)
class LeaseInfo:
    """One lease object: its generation (the fencing token), renewal, holder and expiry."""

    key: str
    token: int
    renewal: int
    holder: str
    host: str
    pid: int
    acquired: float
    expires: float
    released: bool

    def live(self, now: float) -> bool:
        return not self.released and self.expires > now

    def describe(self, now: float) -> str:
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.expires))
        return (f"{self.holder} (host {self.host}, pid {self.pid}, token {self.token}), which expires at {at} "
                f"(in {max(0.0, self.expires - now):.0f} s) unless it renews it")


def _root_exists(store: Store) -> bool:
    """Whether the store's folder or bucket is there (``True`` when even that cannot be asked)."""
    try:
        return store.root_exists()
    except (StorageError, OSError):
        return True


def pid_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this host (a zombie counts as gone)."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # reaped between the two looks
        return True
    except OSError:  # no /proc (not Linux): alive, as far as we can tell
        return False
    return stat[stat.rindex(")") + 2:].startswith("Z")


def dead_holder_here(info: LeaseInfo) -> bool:
    """The takeover rule of a process restarted on the host its predecessor died on: the live lease is held on this
    host by a process that is gone (so it will never renew nor write again)."""
    return info.host == socket.gethostname() and pid_gone(info.pid)


class Lease:
    """The lease under ``prefix`` of ``store`` for ``role`` (module docstring). :meth:`acquire` or the context
    manager :meth:`hold` (acquire, renew from a thread, release); :meth:`ensure` before each write; :attr:`token`
    is the fencing token while held. ``takeover`` may say that a live lease is its own dead predecessor's (a
    replica restarted on the same host), to take it over before it expires."""

    def __init__(self, store: Store, prefix: str, role: str, *, ttl: float = DEFAULT_TTL_SECONDS,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = _boot_clock,
                 takeover: Callable[[LeaseInfo], bool] | None = None) -> None:
        if not ttl > 0:
            raise ValueError(f"a lease's ttl must be > 0 seconds, got {ttl!r}")
        self.store, self.prefix, self.role, self.ttl = store, prefix.rstrip("/") + "/", role, float(ttl)
        self.clock, self.monotonic, self.takeover = clock, monotonic, takeover
        self.holder, self.host, self.pid = holder_identity()
        self.token: int | None = None
        self.renewal = 0
        self.lost: str | None = None
        self._deadline = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the store's view ------------------------------------------------------------------------------------
    def _key(self, token: int, renewal: int) -> str:
        return f"{self.prefix}g{token:012d}-r{renewal:010d}.json"

    def state(self) -> LeaseInfo | None:
        """The lease's current object (the greatest), or ``None`` if it was never taken. The greatest listed may be
        gone when it is read (a renewal writes the next one, then removes it): then the prefix is listed again, never
        an older one taken for the state (a ``None`` there would let a new holder start at token 1)."""
        for _ in range(100):
            keys = [k for k in self.store.list(self.prefix) if _NAME.match(k[len(self.prefix):])]
            if not keys:
                return None
            try:
                doc = json.loads(self.store.get(keys[-1]))
            except FileNotFoundError:
                continue
            except ValueError as exc:
                raise StorageError(0, f"{self.store.url}/{keys[-1]}: not a lease object ({exc})") from None
            return self._info(keys[-1], doc)
        raise StorageError(0, f"{self.store.url}/{self.prefix}: the lease's objects keep vanishing as they are read")

    def _info(self, key: str, doc: Any) -> LeaseInfo:
        """The :class:`LeaseInfo` of the object ``key`` holding ``doc`` (:class:`~ldp.errors.StorageError` if it is no
        lease object: never guessed)."""
        m = _NAME.match(key[len(self.prefix):])
        try:
            if m is None or not isinstance(doc, dict) or doc.get("format") != LEASE_FORMAT:
                raise ValueError(f"not an {LEASE_FORMAT} object")
            return LeaseInfo(key, int(m.group(1)), int(m.group(2)), str(doc["holder"]), str(doc["host"]),
                             int(doc["pid"]), float(doc["acquired"]), float(doc["expires"]), bool(doc["released"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise StorageError(0, f"{self.store.url}/{key}: not a lease object ({exc})") from None

    def _doc(self, token: int, renewal: int, now: float, acquired: float, released: bool = False) -> bytes:
        return json.dumps({"format": LEASE_FORMAT, "role": self.role, "holder": self.holder, "host": self.host,
                           "pid": self.pid, "token": token, "renewal": renewal, "acquired": acquired,
                           "expires": now if released else now + self.ttl, "released": released},
                          sort_keys=True).encode()

    def check_exclusive(self) -> None:
        """Refuse a store whose create is not exclusive: a probe created twice must be refused the second time
        (:class:`~ldp.errors.ConditionalWriteError` otherwise, or when the store rejects conditional writes)."""
        probe = f"{self.prefix}probe-{secrets.token_hex(8)}"
        try:
            try:
                first, second = self.store.create(probe, b"1"), self.store.create(probe, b"2")
            except StorageError as exc:
                if not _root_exists(self.store):  # the first trial's first mistake: say what to do first
                    raise StorageError(exc.errno or 0, missing_root(self.store.url)) from exc
                raise ConditionalWriteError(exc.errno or 0, f"{self.store.url} refused a conditional write "
                                            f"(create if absent), which the {self.role} lease needs: {exc}") from exc
            if not first or second:
                raise ConditionalWriteError(0, f"{self.store.url} does not refuse a second create of one key (an "
                                            "S3-compatible server that ignores If-None-Match: *?): one "
                                            f"{self.role} at a time cannot be enforced on it")
        finally:
            with contextlib.suppress(StorageError):
                self.store.delete(probe)

    # -- holding -------------------------------------------------------------------------------------------
    def acquire(self) -> int:
        """Take the lease: its fencing token. :class:`~ldp.errors.LeaseHeldError` if another process holds it."""
        self.check_exclusive()
        for _ in range(3):
            top, now = self.state(), self.clock()
            ours = top is not None and top.holder == self.holder  # ours, lost: taken again under a new token
            gone = top is not None and self.takeover is not None and self.takeover(top)  # a dead holder's own
            if top is not None and top.live(now) and not ours and not gone:
                raise LeaseHeldError(f"the {self.role} lease at {self.store.url}/{self.prefix} is held by "
                                     f"{top.describe(now)}", holder=top.holder, host=top.host, pid=top.pid,
                                     expires=top.expires)
            token = 1 if top is None else top.token + 1
            started = self.monotonic()
            if self.store.create(self._key(token, 0), self._doc(token, 0, now, now)):
                with self._lock:
                    self.token, self.renewal, self.lost = token, 0, None
                    self._deadline = started + self.ttl * (1 - MARGIN)
                self._sweep(keep_from=self._key(token, 0))
                logger.info("took the %s lease (token %d, %s)", self.role, token, self.holder)
                return token
        top, now = self.state(), self.clock()
        raise LeaseHeldError(f"the {self.role} lease at {self.store.url}/{self.prefix} is contended"
                             + (f"; now held by {top.describe(now)}" if top is not None else ""))

    def ensure(self) -> None:
        """Return if the lease is surely still held; else :class:`~ldp.errors.LeaseLostError` (module docstring)."""
        with self._lock:
            if self.token is None:
                raise LeaseLostError(0, f"the {self.role} lease is not held")
            if self.lost is None and self.monotonic() >= self._deadline:
                self.lost = (f"the {self.role} lease (token {self.token}) was not renewed within "
                             f"{self.ttl * (1 - MARGIN):g} s (a pause, or the store unreachable): another process "
                             "may hold it now")
            if self.lost is not None:
                raise LeaseLostError(0, self.lost)

    def renew(self) -> None:
        """Extend the lease by a ttl from now; :class:`~ldp.errors.LeaseLostError` if it is no longer ours."""
        self.ensure()
        started = self.monotonic()
        top = self.state()
        if top is None or top.token != self.token or top.holder != self.holder:
            with self._lock:
                self.lost = (f"the {self.role} lease was taken over"
                             + (f" by {top.describe(self.clock())}" if top is not None else " (its objects are gone)"))
            raise LeaseLostError(0, self.lost)
        self.ensure()  # the listing may have taken long
        token, n = top.token, top.renewal + 1
        if not self.store.create(self._key(token, n), self._doc(token, n, self.clock(), top.acquired)):
            with self._lock:
                self.lost = f"the {self.role} lease's renewal {n} was written by another process"
            raise LeaseLostError(0, self.lost)
        with self._lock:
            self.renewal = n
            self._deadline = max(self._deadline, started + self.ttl * (1 - MARGIN))
        with contextlib.suppress(StorageError):
            self.store.delete(top.key)

    def release(self) -> None:
        """Give the lease up (marked released: the next process takes it at once). Nothing if it was lost."""
        try:
            self.ensure()
        except LeaseLostError:
            with self._lock:
                self.token = None
            return
        assert self.token is not None
        try:
            top = self.state()
            if top is not None and top.token == self.token and top.holder == self.holder:
                n = top.renewal + 1
                self.store.create(self._key(self.token, n), self._doc(self.token, n, self.clock(), top.acquired,
                                                                      released=True))
                with contextlib.suppress(StorageError):
                    self.store.delete(top.key)
        except StorageError as exc:  # it expires by itself
            logger.warning("could not release the %s lease (it expires in %g s): %s", self.role, self.ttl, exc)
        with self._lock:
            self.token, self.lost = None, None

    def _sweep(self, keep_from: str) -> None:
        """Remove the objects of earlier generations (best effort: they only slow the listing)."""
        with contextlib.suppress(StorageError):
            for key in self.store.list(self.prefix):
                if key < keep_from and _NAME.match(key[len(self.prefix):]):
                    self.store.delete(key)

    @contextlib.contextmanager
    def hold(self) -> Iterator[Lease]:
        """Acquire, renew every ``ttl/4`` from a daemon thread while the block runs, release at its end."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def start(self) -> int:
        """Acquire (if not held) and renew every ``ttl/4`` from a daemon thread until :meth:`stop`; the token. A
        lease lost and taken again (:meth:`acquire`) is renewed again by the same thread."""
        token = self.token if self.token is not None and self.lost is None else self.acquire()
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._renew_loop, name=f"ldp-lease-{self.role}", daemon=True)
            self._thread.start()
        return token

    def stop(self) -> None:
        """Stop renewing and release the lease."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.token is not None:
            self.release()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            if self.token is None or self.lost is not None:
                continue  # lost: renewed again once acquired again
            try:
                self.renew()
            except LeaseLostError as exc:
                logger.error("%s", exc)
            except StorageError as exc:  # tried again; past the deadline the lease is lost
                logger.warning("renewing the %s lease failed (tried again): %s", self.role, exc)

    def __repr__(self) -> str:
        return f"Lease({self.role!r} at {self.store.url}/{self.prefix}, token {self.token})"


class FencedStore(StoreWrapper):
    """``store`` whose writes (``put``, ``create``, ``delete``) each first :meth:`Lease.ensure` the lease; reads
    pass through. :attr:`fence` is the lease's fencing token, for the objects written to carry; :attr:`lease` the
    lease itself (a replica takes it again after a failure: :meth:`Lease.start`)."""

    def __init__(self, store: Store, lease: Lease) -> None:
        super().__init__(store)
        self._lease = lease

    @property
    def lease(self) -> Lease:
        return self._lease

    @property
    def fence(self) -> int | None:
        return self._lease.token

    def put(self, key: str, data: bytes) -> None:
        self._lease.ensure()
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        self._lease.ensure()
        return self.inner.create(key, data)

    def delete(self, key: str) -> None:
        self._lease.ensure()
        self.inner.delete(key)

    def __repr__(self) -> str:
        return f"FencedStore({self.inner!r}, token {self.fence})"
