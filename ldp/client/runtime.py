"""The client runtime: :class:`TelemetryClient`, one SQLite state file per collection, ``record`` -> outbox -> upload.

:class:`TelemetryClient` keeps, in ONE file (:mod:`ldp.client.state`): the client's secret (OS CSPRNG; each
metric whose encoder memoizes, :attr:`~ldp.encoders.base.Encoder.needs_secret`, gets a secret derived from it),
the cohort of each metric whose encoder is assigned one (:meth:`~ldp.encoders.base.Encoder.assigned_cohorts`;
drawn once, uniformly), the budget ledger (:class:`ldp.privacy.ledger.BudgetLedger`'s own tables) and the outbox
of envelopes waiting for upload (:mod:`ldp.client.outbox`). This module holds the client itself: its encoders,
recording, and what it tells about its budget; the outbox and its upload batches are delegated.

``record(metric, value)`` validates the value, then in ONE ``BEGIN IMMEDIATE`` transaction checks
and charges every cap, randomizes, and stores the envelope in the outbox (``record_many`` does
the same for a batch of reports, all or nothing, in one transaction). If the process dies
before COMMIT, SQLite rolls back the charge together with the report that was never stored nor
returned: nothing left the device, so this is not a refund. After COMMIT, both exist. Several
processes may share the file (WAL; the write lock serializes check-and-charge). A file that is
not a state file of this collection, or is damaged, raises :class:`StateError`: the budget is
never silently reset. Standard library + mmh3 + bitarray only. See ``docs/client.md``.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from ldp.client import consent
from ldp.client.dap import DapEncoder, device_task
from ldp.client.outbox import ClientOutbox, PendingItem
from ldp.client.reserve import Reserve
from ldp.client.state import STATE_FORMAT, StateFile, at, refuse_orphan_traces
from ldp.client.upload_call import upload_call
from ldp.client.uploader import Opener, UploadError, UploadResult
from ldp.encoders.base import Encoder
from ldp.errors import (
    BudgetExceeded,
    LedgerError,
    OptedOutError,
    OutboxFull,
    Refusal,
    RefusalValueError,
    StateError,
    ThreadMisuseError,
    UploadProtocolError,
)
from ldp.privacy.accountant import PrivacyCost
from ldp.privacy.ledger import BudgetLedger, BudgetPolicy, Reservation
from ldp.protocols import client_protocols
from ldp.randomness import SeededRandomnessWarning, client_source, is_seeded
from ldp.spec import CollectionSpec, Envelope

__all__ = ["TelemetryClient", "StateError", "PendingItem", "STATE_FORMAT", "BudgetExceeded", "UploadError",
           "UploadResult", "ThreadMisuseError", "UploadProtocolError", "OutboxFull", "OptedOutError",
           "DEFAULT_MAX_OUTBOX_BYTES"]

DEFAULT_MAX_OUTBOX_BYTES = 1 << 20
"""The outbox's default cap: 1 MiB of envelope lines (each counted with its newline) waiting for upload."""

T = TypeVar("T")

logger = logging.getLogger(__name__)
"""Events and counts only (a state file opened, reports recorded or refused, uploads acknowledged):
never a value, a report, a secret or a cohort."""


@contextmanager
def _log_refusal(what: str, reports: int) -> Iterator[None]:
    """Log (at INFO) a budget refusal of ``reports`` report(s) of ``what`` (a metric, or a batch), then re-raise."""
    try:
        yield
    except BudgetExceeded:
        logger.info("the privacy budget refused %d report(s) of %s: nothing recorded", reports, what)
        raise


class TelemetryClient:
    """A collection's client on one device: ``record`` -> ``pending`` -> upload -> ``acknowledge``.

    ``spec`` is a :class:`~ldp.spec.CollectionSpec` or the path of one. ``clock`` gives Unix
    seconds (the ledger keeps it monotone; a reading outside ``[0, MAX_CLOCK]`` raises
    :class:`~ldp.privacy.ledger.ClockError` with nothing written). ``rng`` is the OS CSPRNG by default; a
    seed makes every device given it report the same noise, so it needs ``simulation=True`` (a
    ``ValueError`` otherwise), and the state file then records that it was used so (opening such a
    file later without ``simulation=True`` warns). One instance per thread (used from another thread, it
    raises :class:`~ldp.errors.ThreadMisuseError`, touching nothing); any number of instances, in threads or
    processes, may share ``state_path``.
    """

    def __init__(self, spec: CollectionSpec | str | os.PathLike[str], state_path: str | os.PathLike[str], *,
                 clock: Callable[[], float] = time.time, rng: Any = None, timeout: float = 30.0,
                 simulation: bool = False, max_outbox_bytes: int = DEFAULT_MAX_OUTBOX_BYTES,
                 tasks: Mapping[str, Any] | None = None) -> None:
        if not isinstance(simulation, bool):
            raise TypeError(f"simulation must be a bool, got {type(simulation).__name__}")
        if isinstance(max_outbox_bytes, bool) or not isinstance(max_outbox_bytes, int) or max_outbox_bytes < 1:
            raise ValueError(f"max_outbox_bytes must be a positive int, got {max_outbox_bytes!r}")
        self.max_outbox_bytes = max_outbox_bytes
        if is_seeded(rng) and not simulation:
            raise ValueError("TelemetryClient: a seeded rng makes every device given the seed report the same noise; "
                             "leave rng=None (the OS CSPRNG) in an app, or pass simulation=True for a simulation")
        self.spec = spec if isinstance(spec, CollectionSpec) else CollectionSpec.load(spec)
        self.path = os.fspath(state_path)
        refuse_orphan_traces(self.path)
        self._clock = clock
        self._rng = client_source(rng)
        self.simulation = simulation
        self._encoders: dict[str, Encoder | DapEncoder] = {}
        s = self.spec
        dap_metrics = frozenset(n for n, m in s.metrics.items() if m.trust.startswith("two-aggregator"))
        if unknown := sorted(set(tasks or ()) - dap_metrics):
            raise ValueError(f"tasks: {', '.join(map(repr, unknown))} is no two-aggregator metric of collection "
                             f"{s.name!r} (its two-aggregator metrics: {', '.join(sorted(dap_metrics)) or 'none'})")
        self._tasks = {n: device_task(s, n, source) for n, source in (tasks or {}).items()}
        self._state = StateFile(self.path, s.name)
        self._reserve = Reserve(self.path)  # room for a full disk (ldp.client.reserve)
        try:
            self._ledger = self._reserve.retrying(lambda: BudgetLedger(
                self.path, total=BudgetPolicy(s.budget.per_window, s.budget.lifetime),
                metrics={n: BudgetPolicy(s.device_window_cap(n), m.budget.lifetime) for n, m in s.metrics.items()},
                window_seconds=float(s.window_seconds), clock=clock, timeout=timeout, setup=self._state.setup))
        except StateError:
            raise
        except LedgerError as exc:
            raise StateError(f"{self.path!r} cannot be used as the state of collection {s.name!r}: {exc}") from None
        if simulation and is_seeded(rng):
            self._ledger.mark_simulation()
        elif self._ledger.simulation and not simulation:
            warnings.warn(f"{self.path!r} was used by a simulation with seeded randomness: reports recorded in it "
                          "are not private; use a new state file on a real device", SeededRandomnessWarning,
                          stacklevel=2)
        self._outbox = ClientOutbox(self._ledger, self._state, s.upload, clock, dap_metrics)
        logger.debug("opened the state of collection %r (%d metric(s))", s.name, len(s.metrics))

    # -- encoders --------------------------------------------------------------------------------
    def _encoder(self, metric: str) -> Encoder | DapEncoder:
        if (enc := self._encoders.get(metric)) is not None:
            return enc
        if metric not in self.spec.metrics:
            raise ValueError(f"no metric {metric!r} in collection {self.spec.name!r} "
                             f"(metrics: {', '.join(self.spec.metrics)})")
        trust = self.spec.metric(metric).trust
        if trust.startswith("two-aggregator") and metric not in self._tasks:
            raise RefusalValueError(
                f"metric {metric!r} is collected in the two-aggregator mode (trust {trust!r}): its reports are sealed "
                "to its task's aggregators, and no task was given for it: TelemetryClient(..., tasks={metric: "
                "'its.task.json'}), the file `ldp collect task --leader-config ... --helper-config ...` wrote",
                "trust_model", metric=metric, trust=trust)
        params = self.spec.params(metric)
        if not params.local_randomizer:  # poplar1: no encoder, the value is shared exactly (ldp.client.dap)
            self._encoders[metric] = DapEncoder(self.spec, metric, self._tasks[metric], None)
            return self._encoders[metric]
        encoder_type = client_protocols()[params.protocol][1]
        extra: dict[str, Any] = {}
        if cohorts := encoder_type.assigned_cohorts(params):
            extra["cohort"] = self._cohort(metric, params.fingerprint, cohorts)
        if encoder_type.needs_secret:  # memoized responses: the metric's secret
            extra["secret"] = self._state.metric_secret(metric)
        enc = encoder_type(params, rng=self._rng, simulation=self.simulation, **extra)
        out = DapEncoder(self.spec, metric, self._tasks[metric], enc) if metric in self._tasks else enc
        self._encoders[metric] = out
        return out

    def _cohort(self, metric: str, fingerprint: str, cohorts: int) -> int:
        """The metric's cohort under the parameters of ``fingerprint``: drawn once (CSPRNG, uniform in
        ``range(cohorts)``), then kept."""
        with self._state.guard(), self._ledger.transaction() as db:
            if self._state.load_secret(db) is None:  # opted out: no cohort is drawn (opting in draws it afresh)
                raise OptedOutError(f"{self.path!r}: this device opted out of collection (opt_out)")
            key = (metric, fingerprint)
            row = db.execute("SELECT cohort FROM ldp_client_cohorts WHERE metric=? AND params=?", key).fetchone()
            if row is None:
                row = (secrets.randbelow(cohorts),)
                db.execute("INSERT INTO ldp_client_cohorts VALUES (?, ?, ?)", (*key, row[0]))
        if type(row[0]) is not int or not 0 <= row[0] < cohorts:
            raise self._state.fail(f"is damaged: cohort {row[0]!r} of {metric!r} is not in [0, {cohorts})")
        return row[0]

    def cohort(self, metric: str) -> int | None:
        """The cohort a metric reports in, RAPPOR's say (``None`` for protocols without cohorts)."""
        return getattr(self._encoder(metric), "cohort", None)

    # -- recording -------------------------------------------------------------------------------
    def record(self, metric: str, value: Any) -> int:
        """Privatize ``value`` for ``metric`` and put the envelope in the outbox; return its outbox id.

        A bad value raises ``ValueError``/``TypeError`` and a spent budget :class:`BudgetExceeded`,
        both with nothing written. Charge and outbox row are committed together (see the module)."""
        self._state.check_thread()
        return self._retrying(lambda: self._record(metric, value))

    def _record(self, metric: str, value: Any) -> int:
        enc = self._encoder(metric)
        prepared = enc.prepare(value)  # invalid values fail here, before any charge
        spec_fp = self.spec.fingerprint

        def store(reservation: Reservation, db: sqlite3.Connection) -> int:
            room = self._room(db)
            return self._store(db, spec_fp, enc, prepared, reservation, room)

        at("before_charge")
        with self._state.guard(), _log_refusal(repr(metric), 1):
            outbox_id = self._ledger.charge_atomically(metric, enc.charge_for(prepared), store)
        at("committed")
        self._reserve.ensure()
        logger.debug("recorded 1 report of %r", metric)
        return outbox_id

    def record_many(self, items: Iterable[tuple[str, Any]]) -> list[int]:
        """Record several ``(metric, value)`` pairs in ONE transaction (one fsync); return their
        outbox ids, in order. All or nothing:

        * every value is checked first: a bad one raises ``ValueError``/``TypeError`` naming its
          item, with nothing written;
        * then all are charged in order, each seeing the ones before it (as the same ``record``
          calls in a row would); if any would exceed a cap, :class:`BudgetExceeded` is raised (its
          ``index`` is the refused item) and NONE is charged or stored — retry without that item,
          or with ``record`` one by one to keep the ones that fit;
        * a crash before COMMIT keeps nothing of the batch, after COMMIT everything."""
        self._state.check_thread()
        batch = list(items)
        return self._retrying(lambda: self._record_many(batch))

    def _record_many(self, batch: list[Any]) -> list[int]:
        work = []
        for i, item in enumerate(batch):
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(f"record_many takes (metric, value) pairs; item {i} is {item!r}")
            metric, value = item
            try:
                enc = self._encoder(metric)
                prepared = enc.prepare(value)  # invalid values fail here, before any charge
            except (ValueError, TypeError) as exc:
                if isinstance(exc, Refusal):  # a refused value: its code and fields kept, the item named
                    raise exc.restated(f"record_many item {i} ({metric!r}): {exc}") from None
                if type(exc) not in (ValueError, TypeError):
                    raise
                raise type(exc)(f"record_many item {i} ({metric!r}): {exc}") from None
            work.append((metric, enc, prepared))
        spec_fp = self.spec.fingerprint

        def store(reservations: list[Reservation], db: sqlite3.Connection) -> list[int]:
            room = self._room(db)
            return [self._store(db, spec_fp, enc, prepared, r, room, i)
                    for i, ((_, enc, prepared), r) in enumerate(zip(work, reservations, strict=True))]

        at("before_charge")
        with self._state.guard(), _log_refusal("a batch", len(work)):
            ids = self._ledger.charge_many([(m, enc.charge_for(p)) for m, enc, p in work], store)
        at("committed")
        self._reserve.ensure()
        logger.debug("recorded %d report(s) in one batch", len(ids))
        return ids

    def _store(self, db: sqlite3.Connection, spec_fp: str, enc: Encoder | DapEncoder, prepared: Any,
               reservation: Reservation, room: list[int], index: int | None = None) -> int:
        """Randomize a charged report and put its envelope (or sealed DAP report) in the outbox (inside the charge's
        transaction), or raise :class:`OutboxFull` when ``room`` (``[bytes pending]``, counted up) leaves none."""
        at("charged")
        if isinstance(enc, DapEncoder):
            line = enc.line(prepared, self._clock(), reservation.window)
        else:
            line = Envelope(spec_fp, reservation.metric, reservation.window,
                            enc.randomize_charged(prepared, reservation)).to_json()
        at("randomized")
        need = len(line.encode("utf-8")) + 1
        if room[0] + need > self.max_outbox_bytes:
            raise OutboxFull(room[0], need, self.max_outbox_bytes, index)
        room[0] += need
        return self._outbox.put(db, reservation, line)

    def _room(self, db: sqlite3.Connection) -> list[int]:
        """In a charge's transaction: refuse an opted-out device (:class:`OptedOutError`) or a secret changed by
        another client (retried); the outbox's pending bytes, in a list the batch's items count up."""
        if self._state.load_secret(db) != self._state.secret:
            raise consent.SecretChanged
        return [self._outbox.pending_bytes(db)]

    def _retrying(self, fn: Callable[[], T]) -> T:
        """``fn`` with this client's view of the device secret current (:func:`~ldp.client.consent.current`)."""
        return consent.current(self._state, self._ledger, self._encoders.clear, fn)

    # -- the outbox and its upload batches (:class:`~ldp.client.outbox.ClientOutbox`) -----------------------
    def next_upload_at(self) -> float:
        """Unix time from which :meth:`pending` returns a batch (``-inf``: at once; ``inf`` once opted out)."""
        return float("inf") if self.opted_out else self._outbox.next_upload_at()

    # -- consent (:mod:`ldp.client.consent`) -------------------------------------------------------------
    @property
    def opted_out(self) -> bool:
        """Whether this device opted out of collection (as the state file says now)."""
        with self._state.guard(), self._ledger.transaction() as db:
            return self._state.load_secret(db) is None

    def opt_out(self) -> int:
        """Stop collection on this device, in one transaction: delete every pending report and pinned batch, the
        device secret, the cohorts and the memoized records; keep the budget spent. Until :meth:`opt_in`,
        :meth:`record` raises :class:`OptedOutError`. Idempotent; returns the reports deleted."""
        with self._state.guard(), self._ledger.transaction() as db:
            n = consent.opt_out(db, self._state)
        self._encoders.clear()
        logger.info("opted out of collection: %d pending report(s) deleted", n)
        return n

    def opt_in(self) -> bool:
        """Resume collection with a fresh device secret (new cohorts, new memoized responses charged afresh).
        Idempotent; returns whether the device had opted out."""
        with self._state.guard(), self._ledger.transaction() as db:
            done = consent.opt_in(db, self._state)
        self._encoders.clear()
        if done:
            logger.info("opted in to collection with a fresh device secret")
        return done

    def pending(self, limit: int | None = None) -> list[PendingItem]:
        """The next batch to upload, oldest first: at most ``upload.max_batch`` (and ``limit``) items,
        and nothing until ``upload.min_interval_seconds`` have passed since the last acknowledged
        upload. Read only: the same batch comes back until it is acknowledged."""
        return self._outbox.pending(limit)

    def acknowledge(self, ids: Iterable[int]) -> int:
        """Delete uploaded items from the outbox; return how many were there (unknown or already
        acknowledged ids are ignored, so a repeated call is harmless). Starts the upload interval."""
        wanted = list(ids)
        done = self._reserve.retrying(lambda: self._outbox.acknowledge(wanted))
        logger.debug("acknowledged %d uploaded report(s)", done)
        return done

    def next_batch(self, limit: int | None = None) -> tuple[str, list[PendingItem]] | None:
        """The next batch part to upload and its id: the pinned batch's first part, else a new batch from
        :meth:`pending` (at most ``limit`` items), pinned in this same transaction. ``None``: nothing to send
        now. The same part and id come back until :meth:`acknowledge_batch` or :meth:`split_batch`."""
        return self._reserve.retrying(lambda: self._outbox.next_batch(limit))

    def split_batch(self, batch: str) -> int:
        """Split pinned part ``batch`` (refused as too large: nothing of it was stored) in two new parts;
        return the size of the first."""
        return self._outbox.split_batch(batch)

    def acknowledge_batch(self, batch: str, ids: Iterable[int]) -> int:
        """After the ingest service stored part ``batch``: acknowledge its items ``ids`` and unpin it, in one
        transaction; return how many were in the outbox."""
        wanted = list(ids)
        return self._reserve.retrying(lambda: self._outbox.acknowledge_batch(batch, wanted))

    def has_pending(self) -> bool:
        """Whether the outbox holds a report not yet acknowledged."""
        return self._outbox.has_pending()

    def upload(self, url: str | Sequence[str] | None = None, token: str | None = None, *, timeout: float = 30.0,
               call_timeout: float | None = None, max_attempts: int = 8, gzip: bool = True,
               max_delay: float = 300.0, opener: Opener | None = None, sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] | None = None) -> UploadResult:
        """Upload the outbox until it is empty, the upload interval stops it or ``call_timeout`` seconds have
        passed; return what was done: first each two-aggregator metric's reports, one by one, to its task's leader
        (:mod:`ldp.client.dap_upload`), then the other reports to an ``ldp serve`` ingest service (``POST url``,
        bearer ``token``; both may be left out while no such report waits).

        ``url`` may be a list of endpoints (the ingest service's replicas): a part that one cannot take now (no answer,
        a connection error, 408, 5xx) goes at once to the next; only when all have failed in a row does the
        call wait. Shuffle the list per device to spread load; the part's batch id is the same everywhere.

        Each batch is pinned in the state file (its outbox ids and its id) before it is first sent,
        and acknowledged only after a sane 2xx naming its id, so a retry, a crash or a lost answer resends
        the same lines under the same id, and the ingest service stores them once. Raises
        :class:`~ldp.client.uploader.UploadError` (the batch stays pinned and pending) when the ingest service
        refuses it or it is not delivered in ``max_attempts`` tries, and
        :class:`~ldp.errors.UploadProtocolError` when its 2xx answer is not sane. ``timeout``: seconds for one
        request, from connecting to the end of its answer; ``call_timeout``: seconds for the whole call (``None``:
        no limit), after which the rest stays in the outbox (``stopped="deadline"``). ``opener``, ``sleep`` and
        ``clock`` (default: the client's) are for tests. See :mod:`ldp.client.uploader`.

        One upload at a time per state file, enforced (:mod:`ldp.client.upload_call`): a client is used from one
        thread only (another thread gets :class:`~ldp.errors.ThreadMisuseError`), and the clients of one state file in
        this process take turns under a lock kept per file. Processes are not serialized: two processes uploading
        one file at once may send a pinned part twice (the ingest service stores it once, by its batch id) or a DAP
        report twice (the leader stores it once, by its report ID)."""
        self._state.check_thread()
        return upload_call(self, url, token, timeout=timeout, call_timeout=call_timeout, max_attempts=max_attempts,
                           gzip=gzip, max_delay=max_delay, opener=opener, sleep=sleep, clock=clock or self._clock)

    # -- transparency ----------------------------------------------------------------------------
    def spent(self, metric: str | None = None, period: str = "window") -> PrivacyCost:
        """ε (and δ) spent on ``metric`` (default: all metrics) in the current window or ``"lifetime"``."""
        with self._state.guard():
            return self._ledger.spent(metric or BudgetLedger.ALL, period)

    def remaining(self, metric: str | None = None) -> dict[str, PrivacyCost | None]:
        """What may still be spent on ``metric`` (or on all metrics) per window and lifetime."""
        with self._state.guard():
            return self._ledger.remaining(metric or BudgetLedger.ALL)

    def current_window(self) -> int:
        """The window index reports recorded now would carry."""
        with self._state.guard():
            return self._ledger.current_window()

    def counts(self) -> dict[str, dict[str, int]]:
        """Per metric: ``reports`` recorded (charges), ``pending`` in the outbox, ``uploaded``
        (acknowledged), ``discarded`` (deleted unsent by :meth:`opt_out`).
        Always ``reports == pending + uploaded + discarded``."""
        out: dict[str, dict[str, int]] = {}
        with self._state.guard(), self._ledger.transaction() as db:
            for key, sql in (("reports", "SELECT metric, count(*) FROM ldp_ledger_charges GROUP BY metric"),
                             ("pending", "SELECT metric, count(*) FROM ldp_client_outbox GROUP BY metric"),
                             ("uploaded", "SELECT metric, reports FROM ldp_client_uploads")):
                for metric, n in db.execute(sql):
                    out.setdefault(metric, {"reports": 0, "pending": 0, "uploaded": 0, "discarded": 0})[key] = n
            for metric, n in consent.discarded(db).items():
                out.setdefault(metric, {"reports": 0, "pending": 0, "uploaded": 0, "discarded": 0})["discarded"] = n
        return out

    def close(self) -> None:
        """Close the state file (from the thread that created the client)."""
        self._state.check_thread()
        self._ledger.close()

    def __enter__(self) -> TelemetryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
