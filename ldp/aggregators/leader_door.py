"""The leader's door (DAP-09's ``PUT /tasks/{task}/reports``; issue 71, item 3, and issue 84, item 1): the checks
of each upload, in the order a refusal is cheapest, and the reports taken stored before they are answered.

Each refusal has DAP's code: bytes that are no report (``invalid_message``, and a time not rounded down to the
task's precision), a time beyond the clock's tolerance (``report_too_early``, :data:`CLOCK_TOLERANCE`) or older than
the leader's ``report_expiry`` (``report_too_late``), a report of a window already collected (``batch_collected``),
VDAF bytes that are not the task's (``invalid_message``: :mod:`ldp.aggregators.door`), a leader share sealed to
another key (``hpke_unknown_config_id``) or that does not open (``hpke_decrypt_error``), and a report ID seen before
(``report_replayed``). Every stored and every prepared report's ID is kept, and an ID is taken under the leader's
``state_lock`` before its report is written, so two copies racing in are one stored and one refused.

The reports arriving together are written as one chunk object (one durable write for many:
:mod:`ldp.aggregators.commit` for single uploads, :meth:`LeaderDoor.upload_many` for the HTTP front's batches and
simulations) before any of them is answered. A replica (:mod:`ldp.aggregators.scale_out`) writes its chunks under
its own folder, ``reports/<replica>/``.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ldp.aggregators.door import check_input_share, check_report
from ldp.aggregators.messages import ReportError
from ldp.aggregators.records import join_chunk
from ldp.aggregators.state import LeaderTaskState, StoredReport
from ldp.errors import AggregatorError, PrioError

__all__ = ["LeaderDoor", "CLOCK_TOLERANCE", "DEFAULT_REPORT_EXPIRY"]

CLOCK_TOLERANCE = 300
"""Seconds a report's time may be ahead of the leader's clock (devices' clocks drift)."""
DEFAULT_REPORT_EXPIRY = 7 * 86400
"""Seconds after which a report is too old to take (``report_too_late``): its window's aggregators move on."""


class LeaderDoor:
    """The door of :class:`~ldp.aggregators.leader.Leader` (module docstring), which gives it these attributes."""

    store: Any
    keypair: Any
    clock: Callable[[], float]
    report_expiry: int
    replica: str | None
    state_lock: threading.Lock
    task_state: Callable[[bytes], LeaderTaskState]

    def upload(self, task_id: bytes, body: bytes) -> None:
        """Take one DAP report (module docstring); :class:`~ldp.errors.AggregatorError` with the refusal's code.
        It is stored, with the reports arriving meanwhile, in one chunk (:mod:`ldp.aggregators.commit`) before
        this returns."""
        state = self.task_state(task_id)
        try:
            state.commit.submit(self._check(state, body))
        except AggregatorError as exc:
            state.door[exc.code] += 1
            raise

    def upload_many(self, task_id: bytes, bodies: Iterable[bytes], opened: Sequence[bytes | None] | None = None
                    ) -> list[AggregatorError | None]:
        """Take many reports at once (a simulation's devices, the HTTP front's batch of uploads), stored as one chunk:
        the refusal of each, ``None`` for those taken. ``opened``: each body's leader share opened already (``None``
        for one that does not open: the HTTP front opens each upload as it arrives), else they are opened here."""
        from ldp import prio

        state = self.task_state(task_id)
        bodies = list(bodies)
        if opened is not None and len(opened) != len(bodies):
            raise ValueError(f"opened has {len(opened)} shares for {len(bodies)} bodies")
        out: list[AggregatorError | None] = []
        checked: list[tuple[int, bytes, Any]] = []  # (position, body, report) of the reports to open
        for body in bodies:
            try:
                checked.append((len(out), bytes(body), self._check_sealed(state, body)))
                out.append(None)
            except AggregatorError as exc:
                state.door[exc.code] += 1
                out.append(exc)
        if opened is not None:
            shares = [opened[i] for i, _, _ in checked]
        else:  # every leader share opened in one call, spread over the cores with the GIL released
            shares = prio.open_input_shares(self.keypair, role="leader", task_id=state.task.task_id, reports=[
                (r.report_id, r.time, r.public_share, r.leader_ciphertext) for _, _, r in checked])
        taken: list[StoredReport] = []
        for (i, body, report), share in zip(checked, shares, strict=True):
            try:
                taken.append(self._admit(state, body, report, share))
            except AggregatorError as exc:
                state.door[exc.code] += 1
                out[i] = exc
        if taken:  # each copy of a report uploaded twice at once, but the first, refused (by its own position)
            positions = [i for i, err in enumerate(out) if err is None]
            for i, outcome in zip(positions, self._store_reports(state, taken), strict=True):
                if outcome is not None:
                    out[i] = outcome
                    state.door[outcome.code] += 1
        return out

    def _check(self, state: LeaderTaskState, body: bytes) -> StoredReport:
        """A report's checks at the door (module docstring): the report with its opened share, or the refusal. Its
        VDAF bytes are checked by :mod:`ldp.aggregators.door` (the public share and the exact length of the helper's
        sealed share before anything is opened, the leader's share once opened): a report of another VDAF, or a
        padded one, is refused here, never after a 201."""
        from ldp import prio

        report = self._check_sealed(state, body)
        try:
            share = prio.open_input_share(self.keypair, role="leader", task_id=state.task.task_id,
                                          report_id=report.report_id, time=report.time,
                                          public_share=report.public_share, ciphertext=report.leader_ciphertext)
        except PrioError:
            share = None
        return self._admit(state, bytes(body), report, share)

    def _admit(self, state: LeaderTaskState, body: bytes, report: Any, share: bytes | None) -> StoredReport:
        """The checks after the leader's share is opened (``None``: it does not open): the report to store."""
        if share is None:
            raise AggregatorError("the leader's share does not open", ReportError.hpke_decrypt_error.code)
        check_input_share(state.vdaf, share)
        return StoredReport(bytes(report.report_id), body, report, share)

    def _check_sealed(self, state: LeaderTaskState, body: bytes) -> Any:
        """The checks before the leader's share is opened: the decoded report, or the refusal."""
        from ldp import prio

        task = state.task
        try:
            report = prio.DapReport.from_bytes(body)
        except PrioError as exc:
            raise AggregatorError(f"not a DAP-09 report: {exc}", ReportError.invalid_message.code) from None
        check_report(state.vdaf, report)
        now = self.clock()
        if report.time > now + CLOCK_TOLERANCE:
            raise AggregatorError("the report's time is in the future", ReportError.report_too_early.code)
        if report.time < now - self.report_expiry:
            raise AggregatorError(f"the report is older than {self.report_expiry} s", ReportError.report_too_late.code)
        if report.time % task.time_precision:
            raise AggregatorError(f"the report's time is not rounded down to the task's time precision "
                                  f"({task.time_precision} s): a device's exact time is not sent",
                                  ReportError.invalid_message.code)
        if task.window(report.time) in state.records.collections or (
                state.poplar1 is not None and task.window(report.time) in state.poplar1.params):
            raise AggregatorError("the report's window was already collected", ReportError.batch_collected.code)
        if report.report_id in state.seen:
            raise AggregatorError("this report ID was already uploaded", ReportError.report_replayed.code, 409)
        if not report.leader_ciphertext or report.leader_ciphertext[0] != self.keypair.config.id:
            raise AggregatorError("the leader's share is sealed to an unknown HPKE config: fetch /hpke_config again",
                                  ReportError.hpke_unknown_config_id.code)
        return report

    def _store_reports(self, state: LeaderTaskState, items: list[StoredReport]) -> list[AggregatorError | None]:
        """Write ``items`` as one chunk, each report ID at most once ever: a copy of an ID seen before (or earlier in
        ``items``) is left out. Each item's outcome: ``None`` (stored), or its ``report_replayed`` refusal."""
        fresh: list[StoredReport] = []
        outcomes: list[AggregatorError | None] = []
        seen = state.seen
        with self.state_lock:
            for item in items:
                if item.rid in seen:
                    outcomes.append(AggregatorError("this report ID was already uploaded",
                                                    ReportError.report_replayed.code, 409))
                else:
                    seen.add(item.rid)
                    fresh.append(item)
                    outcomes.append(None)
        if fresh:
            folder = "reports/" if self.replica is None else f"reports/{self.replica}/"
            key = f"{state.records.prefix}{folder}chunk-{int(self.clock())}-{secrets.token_hex(8)}.reports"
            try:
                if not self.store.create(key, join_chunk(item.body for item in fresh)):
                    raise AggregatorError(f"{key} exists", "internal", 500)
            except BaseException:
                with self.state_lock:
                    seen.difference_update(item.rid for item in fresh)
                raise
            if self.replica is None:  # a replica's drivers read every replica's chunks (ldp.aggregators.scale_out)
                with self.state_lock:
                    for item in fresh:
                        item.chunk = key
                        state.stored[item.rid] = item
                    state.chunks[key] = {item.rid for item in fresh}
                    state.chunks_read.add(key)
        return outcomes
