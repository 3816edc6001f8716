"""What one aggregator keeps of one task, in its own store (issue 71, items 3 and 4).

Under ``aggregators/<role>/<task ID in hex>/`` (the role's prefix: :func:`ldp.storage.roles.aggregator_role`):

=====================================  =========================================================================
``reports/chunk-<t>-<random>.reports``  the leader only: uploaded DAP reports, stored together (group commit),
                                       each prefixed by its length (:func:`join_chunk`); deleted once all are
                                       in finished jobs
``jobs/job-<job ID>.plan.json``        the leader only: an aggregation job's reports, before the helper is asked
``jobs/job-<job ID>.attempt-<n>.json``  the leader only: the job's n-th attempt, before it is sent
``jobs/job-<job ID>.aside.json``       the leader only: the job set aside, with its reason (its attempts spent)
``jobs/job-<job ID>.abandon.json``     the job abandoned: at the helper, its share no longer counts and its reports
                                       may be prepared again; at the leader, the intent, before the helper is told
``jobs/job-<job ID>.json``             a finished job: its window, the report IDs aggregated, those refused with
                                       their codes, the job's aggregate share sealed to the aggregator's records
                                       key (:mod:`~ldp.aggregators.sealing`) and, at the helper, the answer it
                                       gave (a repeated request gets it again)
``collections/<window>.json``          a collected window: the report count, the checksum, the noised aggregate
                                       share sealed to the collector, the noise and its central (ε, δ), the
                                       refusals by code
=====================================  =========================================================================

**Retention.** Once a window is released, its job records (and the leader's plans) serve nothing: a report of a
collected window is refused ``batch_collected`` on both sides before its ID is looked up, and the window's counts
are in its collection record. :meth:`TaskRecords.prune` deletes them ``retention`` seconds after the release (the
aggregator's ``job_retention``, default 0: at once), so that even both stores and both records keys give nothing
of a released window but its noised release.

Every record is written with the store's create-if-absent (:meth:`~ldp.storage.base.Store.create`), once, and
never changed: a job's share enters a window's aggregate exactly when its record exists, so a process killed
anywhere counts each report once (before the record: the job is redone, with the same result; after it: the job is
known and answered from the record). The state in memory (:class:`TaskRecords`) is rebuilt from the records when
an aggregator starts.
"""

from __future__ import annotations

import functools
import json
import struct
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

from ldp.aggregators.messages import REPORT_ID_SIZE, xor_checksum
from ldp.aggregators.sealing import ShareSealer
from ldp.aggregators.task import Task
from ldp.storage.base import Store
from ldp.storage.roles import aggregator_prefix

__all__ = ["TaskRecords", "WindowAggregate", "RECORD_FORMAT", "join_chunk", "split_chunk", "job_key_parts"]

RECORD_FORMAT = "ldp-aggregator-record/1"


def join_chunk(bodies: Iterable[bytes]) -> bytes:
    """A chunk of stored reports: each DAP report prefixed by its length (4 bytes, big-endian)."""
    return b"".join(struct.pack(">I", len(b)) + b for b in bodies)


def split_chunk(data: bytes) -> list[bytes]:
    """The reports of a chunk (:func:`join_chunk`); ``ValueError`` for a damaged one."""
    out, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError("a damaged chunk of reports: a truncated length")
        n = int.from_bytes(data[pos:pos + 4], "big")
        if n < REPORT_ID_SIZE or pos + 4 + n > len(data):
            raise ValueError("a damaged chunk of reports: a length past its end")
        out.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return out


def job_key_parts(key: str) -> tuple[str, str]:
    """(job ID, kind) of a key under ``jobs/``: kind ``""`` for a finished job's record, else ``plan``,
    ``attempt``, ``aside`` or ``abandon`` (module docstring; a job ID is base64url: it holds no dot)."""
    name = key.rsplit("/", 1)[1].removeprefix("job-").removesuffix(".json")
    job_id, _, kind = name.partition(".")
    return job_id, kind.split("-", 1)[0]


@dataclass
class WindowAggregate:
    """One window's aggregate so far at one aggregator: its valid reports' count, checksum and aggregate share."""

    count: int = 0
    checksum: bytes = bytes(32)
    share: list[int] | None = None
    rejected: Counter[str] = field(default_factory=Counter)

    def add(self, report_ids: list[bytes], share: list[int], modulus: int) -> None:
        self.count += len(report_ids)
        self.checksum = xor_checksum(report_ids, self.checksum)
        self.share = share if self.share is None else [(a + b) % modulus for a, b in zip(self.share, share,
                                                                                          strict=True)]

    def remove(self, report_ids: list[bytes], share: list[int], refused: list[str], modulus: int) -> None:
        """Undo :meth:`add` (a job abandoned): the XOR checksum is its own inverse, the share is subtracted."""
        self.count -= len(report_ids)
        self.checksum = xor_checksum(report_ids, self.checksum)
        if report_ids and self.share is not None:
            self.share = [(a - b) % modulus for a, b in zip(self.share, share, strict=True)]
        self.rejected.subtract(refused)
        self.rejected += Counter()  # drop the codes at zero


P = ParamSpec("P")
R = TypeVar("R")


def _locked(method: Callable[Concatenate[TaskRecords, P], R]) -> Callable[Concatenate[TaskRecords, P], R]:
    """``method`` run under the records' lock (:attr:`TaskRecords.lock`)."""
    @functools.wraps(method)
    def locked(self: TaskRecords, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            return method(self, *args, **kwargs)

    return locked


class TaskRecords:
    """One task's records at one aggregator (module docstring), and the state they give: each window's
    aggregate, the report IDs already prepared, the windows collected, the refusals by code. Every change of that
    state (a record written or read) is made under :attr:`lock`: the leader's jobs in flight record at once."""

    def __init__(self, store: Store, role: str, task: Task, modulus: int, length: int, sealer: ShareSealer) -> None:
        self.lock = threading.RLock()
        self.store, self.role, self.task, self.sealer = store, role, task, sealer
        self.modulus, self.length = modulus, length
        self.prefix = f"{aggregator_prefix(role)}{task.key}/"
        self.windows: dict[int, WindowAggregate] = {}
        self.prepared: set[bytes] = set()
        self.collections: dict[int, dict[str, Any]] = {}
        self.rejected: Counter[str] = Counter()
        self.jobs: dict[str, int] = {}
        """The finished jobs' windows, by job ID."""
        self.abandoned: set[str] = set()
        self.aside: dict[str, dict[str, Any]] = {}
        self.attempts: dict[str, tuple[int, float]] = {}
        """The leader's attempts of each job: how many, and when the last began."""
        self.conflicts: set[int] = set()
        """The windows in which a report is counted by two jobs' records (helper replicas racing on two jobs of one
        report: :mod:`ldp.aggregators.scale_out`): never released."""
        self.load()

    # -- keys -----------------------------------------------------------------------------------------------
    def extra_key(self, job_id: str, kind: str) -> str:
        """A job's ``attempt-<n>``, ``aside`` or ``abandon`` record (module docstring)."""
        return f"{self.prefix}jobs/job-{job_id}.{kind}.json"

    def plan_key(self, job_id: str) -> str:
        return f"{self.prefix}jobs/job-{job_id}.plan.json"  # "job-": a store key's part starts with a letter

    def job_key(self, job_id: str) -> str:
        return f"{self.prefix}jobs/job-{job_id}.json"

    def collection_key(self, window: int) -> str:
        return f"{self.prefix}collections/{window}.json"

    # -- reading ----------------------------------------------------------------------------------------------
    def load(self) -> None:
        """Rebuild the state from the store's records."""
        self._read_keys: set[str] = set()
        self.refresh()

    @_locked
    def refresh(self) -> int:
        """Apply the records written since the last :meth:`load` or refresh, by this process or another sharing the
        store (a scaled-out leader's drivers, a helper's replicas: docs/scale-out.md): finished jobs, attempts, jobs
        set aside or abandoned, releases. Records are never changed once written, so each key is read once; the
        number of new keys."""
        listed = self.store.list(f"{self.prefix}jobs/")
        self._forget_put_back(listed)
        fresh = [k for k in listed if k not in self._read_keys]
        abandoned = [job_id for job_id, kind in map(job_key_parts, fresh) if kind == "abandon"]
        gone = set(abandoned) if self.role == "helper" else set()  # a helper's abandoned job counts for nothing
        for key in fresh:
            job_id, kind = job_key_parts(key)
            if kind == "" and job_id not in self.jobs:
                if job_id in gone and job_id not in self.abandoned:
                    self.abandoned.add(job_id)  # never applied: nothing to take out
                else:
                    self._apply(self.read(key))
            elif kind == "aside":
                self.aside.setdefault(job_id, self.read(key))
            elif kind == "attempt":
                count, last = self.attempts.get(job_id, (0, 0.0))
                self.attempts[job_id] = (count + 1, max(last, float(self.read(key).get("at", 0))))
        self._read_keys.update(k for k in fresh if job_key_parts(k)[1] != "plan")
        for job_id in abandoned:
            if job_id not in self.abandoned:
                self._abandoned(job_id)
        collections = [k for k in self.store.list(f"{self.prefix}collections/") if k not in self._read_keys]
        for key in collections:
            self._released(self.read(key))
        self._read_keys.update(collections)
        if collections:
            self.rejected = sum((agg.rejected for agg in self.windows.values()), Counter())
        return len(fresh) + len(collections)

    def _forget_put_back(self, listed: list[str]) -> None:
        """Jobs another process put back (:meth:`put_back` deletes their ``aside`` and ``attempt`` records; ``listed``:
        the ``jobs/`` keys now): no longer set aside here, and their attempts read anew from the records left (an
        ``attempt-1`` written again after the put-back has the name of one read before it). Without this a replica
        kept answering ``jobs_set_aside`` until it restarted, and counted the old attempts against the job."""
        present = set(listed)
        gone = {job_id for key in self._read_keys if key not in present
                for job_id, kind in [job_key_parts(key)] if kind in ("aside", "attempt")
                and key.startswith(f"{self.prefix}jobs/")}
        if not gone:
            return
        self._read_keys = {key for key in self._read_keys if not key.startswith(f"{self.prefix}jobs/")
                           or job_key_parts(key)[0] not in gone or job_key_parts(key)[1] not in ("aside", "attempt")}
        for job_id in gone:
            self.aside.pop(job_id, None)
            self.attempts.pop(job_id, None)

    @_locked
    def released(self, rec: dict[str, Any]) -> None:
        """A release just recorded (or found recorded by another process): kept, and its key known as read."""
        self.collections[int(rec["window"])] = rec
        self._read_keys.add(self.collection_key(int(rec["window"])))

    def _released(self, rec: dict[str, Any]) -> None:
        """A release record: the window's counts are its release's (its job records may be pruned, or half pruned
        by a process stopped while pruning: module docstring)."""
        window = int(rec["window"])
        self.collections[window] = rec
        if "rejected" in rec or window not in self.windows:
            refused = Counter({str(k): int(v) for k, v in rec.get("rejected", {}).items()})
            self.windows[window] = WindowAggregate(int(rec["count"]), bytes.fromhex(rec["checksum"]), None, refused)

    def read(self, key: str) -> dict[str, Any]:
        rec = json.loads(self.store.get(key))
        if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT:
            raise ValueError(f"{key} is not an {RECORD_FORMAT} record")
        return rec

    def _apply(self, rec: dict[str, Any]) -> None:
        window = int(rec["window"])
        accepted = [bytes.fromhex(r) for r in rec["accepted"]]
        refused = {bytes.fromhex(r): code for r, code in rec["rejected"].items()}
        agg = self.windows.setdefault(window, WindowAggregate())
        if not self.prepared.isdisjoint(accepted):
            self.conflicts.add(window)
        if accepted:
            agg.add(accepted, self._share(rec), self.modulus)
        agg.rejected.update(refused.values())
        self.rejected.update(refused.values())
        self.prepared.update(accepted)
        self.prepared.update(refused)
        self.jobs[str(rec["job"])] = window

    def _share(self, rec: dict[str, Any]) -> list[int]:
        """A job record's share: opened with the records key (``ValueError`` naming the job when it does not open:
        another records key, or an altered record), or a record of before issue 84 in the clear."""
        from ldp.errors import PrioError

        if "share" in rec:
            return [int(x) for x in rec["share"]]
        try:
            return self.sealer.open(str(rec["job"]), int(rec["window"]), str(rec["sealed_share"]))
        except (PrioError, ValueError) as exc:
            raise ValueError(f"job {rec['job']} of task {self.task.id_text} at the {self.role}: its share does not "
                             f"open with this aggregator's records key ({exc})") from None

    def job(self, job_id: str) -> dict[str, Any] | None:
        """A finished job's record, or ``None``."""
        try:
            return self.read(self.job_key(job_id))
        except FileNotFoundError:
            return None

    def plans(self, *, aside: bool = False) -> list[tuple[str, dict[str, Any]]]:
        """The leader's planned jobs with no finished record, not set aside unless ``aside`` (interrupted: to be
        redone, in their order)."""
        out = []
        for key in self.store.list(f"{self.prefix}jobs/"):
            job_id, kind = job_key_parts(key)
            if kind == "plan" and job_id not in self.jobs and (aside or job_id not in self.aside):
                out.append((job_id, self.read(key)))
        return sorted(out, key=lambda item: (item[1].get("created", 0), item[0]))

    # -- writing -----------------------------------------------------------------------------------------------
    def write(self, key: str, rec: dict[str, Any]) -> bool:
        """Create ``key`` holding ``rec`` (with the record format); ``False`` if it exists."""
        return self.store.create(key, json.dumps({"format": RECORD_FORMAT, **rec}, sort_keys=True).encode())

    @_locked
    def finish_job(self, job_id: str, window: int, accepted: list[bytes], rejected: dict[bytes, str],
                   share: list[int], **extra: Any) -> dict[str, Any]:
        """Record a finished job and add it to its window (exactly once: the record is created only if absent,
        and the state follows the record). Returns the record that is in the store (another process's, if it
        finished the same job first)."""
        rec = {"job": job_id, "window": window, "accepted": [r.hex() for r in accepted],
               "rejected": {r.hex(): code for r, code in rejected.items()},
               "sealed_share": self.sealer.seal(job_id, window, share), **extra}
        if self.write(self.job_key(job_id), rec):
            self._read_keys.add(self.job_key(job_id))
            self._apply({"format": RECORD_FORMAT, **rec})
            return rec
        stored = self.read(self.job_key(job_id))
        if job_id not in self.jobs:
            self._apply(stored)
        return stored

    @_locked
    def prune(self, now: float, retention: float) -> int:
        """Delete the job records and plans of the windows released at least ``retention`` seconds before ``now``
        (module docstring); the number of objects deleted. A plan whose job never finished is kept."""
        due = {w for w, rec in self.collections.items() if float(rec.get("released_at", 0)) + retention <= now}
        done = {job for job, w in self.jobs.items() if w in due}
        # each job's plan, attempts and marks before its finished record: a process stopped in between leaves a
        # finished job (pruned at the next start), never a plan without its record (which would be run again)
        keys = [(kind == "", key) for key in self.store.list(f"{self.prefix}jobs/")
                for job_id, kind in [job_key_parts(key)] if job_id in done]
        for _, key in sorted(keys):
            self.store.delete(key)
        deleted = len(keys)
        for job in done:
            del self.jobs[job]
            self.attempts.pop(job, None)
        return deleted

    # -- attempts, set aside, abandoned (issue 84, item 2) --------------------------------------------------------
    @_locked
    def attempt(self, job_id: str, now: float) -> int | None:
        """Record the next attempt of a job (before it is sent); its number, or ``None`` when another process sharing
        the store recorded that attempt first (it holds the job: docs/scale-out.md; the attempts are read again)."""
        count = self.attempts.get(job_id, (0, 0.0))[0] + 1
        key = self.extra_key(job_id, f"attempt-{count}")
        if not self.write(key, {"job": job_id, "attempt": count, "at": now}):
            self.refresh()
            return None
        self._read_keys.add(key)
        self.attempts[job_id] = (count, now)
        return count

    @_locked
    def set_aside(self, job_id: str, window: int, reason: str, now: float) -> None:
        """Set a job aside with its reason: it is not tried again until put back (:meth:`put_back`)."""
        rec = {"job": job_id, "window": window, "reason": reason, "at": now,
               "attempts": self.attempts.get(job_id, (0, 0.0))[0]}
        if not self.write(self.extra_key(job_id, "aside"), rec):
            rec = self.read(self.extra_key(job_id, "aside"))
        self.aside[job_id] = rec

    @_locked
    def put_back(self, job_id: str) -> None:
        """A job set aside tried again, its attempts counted anew; ``KeyError`` for a job not set aside."""
        self.aside.pop(job_id)
        for key in self.store.list(f"{self.prefix}jobs/"):  # a listing's prefix ends at a "/" (Store.list)
            if job_key_parts(key)[0] == job_id and job_key_parts(key)[1] in ("attempt", "aside"):
                self._read_keys.discard(key)
                self.store.delete(key)
        self.attempts.pop(job_id, None)

    @_locked
    def abandon(self, job_id: str, reason: str) -> bool:
        """Record a job abandoned (module docstring) and, at the helper, take its share and its reports out;
        ``False`` if it already was."""
        if job_id in self.abandoned:
            return False
        self.write(self.extra_key(job_id, "abandon"), {"job": job_id, "reason": reason})
        self._abandoned(job_id)
        return True

    def _abandoned(self, job_id: str) -> None:
        self.abandoned.add(job_id)
        rec = self.job(job_id) if job_id in self.jobs and self.role == "helper" else None
        if rec is None:  # at the leader, the mark is an intent: its record after it (split, or refused) stands
            return
        accepted = [bytes.fromhex(r) for r in rec["accepted"]]
        refused = {bytes.fromhex(r): code for r, code in rec["rejected"].items()}
        share = self._share(rec) if accepted else []
        self.windows[int(rec["window"])].remove(accepted, share, list(refused.values()), self.modulus)
        self.rejected.subtract(refused.values())
        self.rejected += Counter()
        self.prepared.difference_update(accepted, refused)
        del self.jobs[job_id]

    def window(self, window: int) -> WindowAggregate:
        return self.windows.get(window, WindowAggregate())

    @_locked
    def summary(self) -> dict[str, Any]:
        """The task's counts for the status page: per window, valid reports and refusals; collected windows."""
        windows = {}
        for w in sorted(set(self.windows) | set(self.collections)):
            agg = self.window(w)
            windows[str(w)] = {"valid": agg.count, "refused": dict(agg.rejected),
                               "collected": w in self.collections}
        return {"task_id": self.task.id_text, "metric": self.task.metric, "app": self.task.app,
                "refused": dict(self.rejected), "windows": windows}
