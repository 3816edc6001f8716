"""Two-aggregator metrics on the device (issue 87): a report of a metric whose ``trust`` is ``two-aggregator`` or
``two-aggregator+local``, made as a DAP-09 report for its task's leader, charged to the device's ledger like any
other, and kept in the same outbox until the leader has stored it.

**The task.** The app gives :class:`~ldp.client.TelemetryClient` each such metric's task file (``ldp-task/1``,
written by ``ldp collect task`` with both aggregators' public HPKE configs: ``--leader-config`` and
``--helper-config``), as ``tasks={metric: path or document}``. :func:`device_task` checks that it is the metric's
task under this spec: the same name, window, trust model, local protocol parameters, VDAF type and parameters
(:meth:`~ldp.encoders.base.ProtocolParams.task_vdaf`; the task's own :data:`TASK_ONLY` aside) and per-device
report cap (``reports_per_window``), so that a device never sends what its aggregators would count under another
guarantee.

**A report.** The value is checked by the metric's protocol encoder (``prepare``). The *measurement* is then, with
local randomization inside (``two-aggregator+local``), the encoder's randomized report's field that the protocol's
:class:`~ldp.encoders.base_vdaf.Prio3Fit` names (the GRR index, the RR bit, the SUE/OUE bits, the PGR point);
without it (``two-aggregator``), the exact value: its index for Prio3Count and Prio3Histogram, its one-hot vector
for Prio3SumVec. A ``poplar1`` metric (:mod:`ldp.encoders.poplar1`, no local randomizer, no encoder) has a Poplar1
task of the spec's ``bits`` and ``max_candidates``: its value is checked by its params (text or bytes, at most
``bits/8`` bytes, not ending in 0x00) and its measurement is those bytes zero-padded, as bits, first bit first.
The measurement is split into Prio3 (or Poplar1) shares and each input share sealed to its aggregator by the
``prio`` crate and the native client's DAP code, through the binding (:func:`ldp.prio.seal_report`; ephemeral keys,
report ID and sharing randomness from the OS generator, also in a simulation), the report's time the recording
time clamped into the charge's window and rounded down to the task's ``time_precision``.

**The charge** (:meth:`~ldp.spec.CollectionSpec.report_charge`): the protocol's local ε with local randomization
inside, else the spec's ``budget.per_report``; the metric's per-window cap on the device is k such charges
(:meth:`~ldp.spec.CollectionSpec.device_window_cap`), k the task's ``reports_per_window`` (one when the spec caps
none), so the ledger refuses the report a window that the central guarantee does not count. Opting out deletes
pending DAP reports with the others.

**The outbox line**: ``{"task_id": "<base64url>", "report": "<base64url of the DAP-09 Report>"}``, in the state file
only: :mod:`ldp.client.dap_upload` sends it to the task's leader. Needs the binding (``ldp-telemetry-prio``); without
it, recording such a metric raises :class:`~ldp.errors.MissingExtraError` saying how to install it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ldp.encoders.base_vdaf import Prio3Fit
from ldp.errors import RefusalValueError

__all__ = ["DapEncoder", "device_task", "dap_line", "parse_dap_line", "TASK_ONLY"]

TASK_ONLY = frozenset({"chunk_length", "levels", "threshold"})
"""A task's VDAF parameters of its own, which no device's measurement depends on: Prio3's proof chunk length (the
crate's optimal one), and a Poplar1 task's bound on the levels collected and its collector's default threshold."""


def device_task(spec: Any, metric: str, source: Any) -> Any:
    """The :class:`~ldp.aggregators.task.Task` of two-aggregator ``metric`` of ``spec`` from ``source`` (a path, a
    parsed document or a ``Task``), checked against the spec (module docstring); ``ValueError`` naming the first
    difference."""
    from ldp.aggregators.task import Task

    task = source if isinstance(source, Task) else Task.from_dict(source) if isinstance(source, Mapping) \
        else Task.load(os.fspath(source))
    m = spec.metric(metric)
    vdaf, vdaf_params = m.params.task_vdaf()
    local = m.trust == "two-aggregator+local"
    want = {"metric": metric, "window_seconds": spec.window_seconds, "trust": m.trust, "vdaf": vdaf,
            "reports_per_window": spec.reports_per_window(metric),
            "local": {"protocol": m.params.protocol, "params": m.params.to_dict()} if local else None}
    have = {"metric": task.metric, "window_seconds": task.window_seconds, "trust": task.trust, "vdaf": task.vdaf,
            "reports_per_window": task.reports_per_window, "local": task.local}
    for key, value in want.items():
        if have[key] != value:
            raise ValueError(f"the task given for metric {metric!r} is not its task under spec {spec.name!r}: its "
                             f"{key} is {have[key]!r}, the spec's {value!r} (write it again: ldp collect task)")
    if {k: v for k, v in task.vdaf_params.items() if k not in TASK_ONLY} != vdaf_params:
        raise ValueError(f"the task given for metric {metric!r} has {vdaf} parameters {task.vdaf_params!r}, the "
                         f"spec's metric {vdaf_params!r}")
    if task.hpke_configs is None:
        raise ValueError(f"the task given for metric {metric!r} has no hpke_configs: a device seals to the "
                         "aggregators' public configs (ldp collect task --leader-config ... --helper-config ...)")
    return task


def dap_line(task_id: bytes, report: bytes) -> str:
    """The outbox line of a DAP report (module docstring)."""
    from ldp.aggregators.task import b64

    return json.dumps({"task_id": b64(task_id), "report": b64(report)}, separators=(",", ":"))


def parse_dap_line(line: str) -> tuple[str, bytes]:
    """The task ID (base64url, as in the leader's URL) and the report's bytes of an outbox line; ``ValueError``
    when the line is not one."""
    from ldp.aggregators.task import TASK_ID_SIZE, unb64

    try:
        data = json.loads(line)
    except ValueError:
        data = None
    if not isinstance(data, dict) or set(data) != {"task_id", "report"}:
        raise ValueError("not a DAP report line of this client's outbox")
    unb64(data["task_id"], TASK_ID_SIZE, "task_id")
    return data["task_id"], unb64(data["report"], None, "report")


class DapEncoder:
    """What :class:`~ldp.client.TelemetryClient` records a two-aggregator metric with: the metric's protocol encoder
    ``encoder`` (its values, and its randomization with local noise inside), its task, and its charge."""

    def __init__(self, spec: Any, metric: str, task: Any, encoder: Any) -> None:
        from ldp import prio

        prio.require()  # MissingExtraError saying how to install the binding
        self.metric, self.task, self.encoder = metric, task, encoder
        self.params = spec.params(metric)
        self.fit: Prio3Fit | None = self.params.prio3_fit()
        self.charge = spec.report_charge(metric)
        self._vdaf = task.prio3()
        leader, helper = task.hpke_configs
        self._configs = prio.HpkeConfig.from_bytes(leader), prio.HpkeConfig.from_bytes(helper)

    def prepare(self, value: Any) -> Any:
        """The value checked and prepared by the protocol's encoder, or, for a kind without a local randomizer
        (``encoder`` ``None``: ``poplar1``), by its params (the string's padded bytes); raises on a bad one, before
        any charge."""
        return self.params.measurement_bytes(value) if self.encoder is None else self.encoder.prepare(value)

    def charge_for(self, prepared: Any) -> Any:
        """What one report costs the ledger (:meth:`~ldp.spec.CollectionSpec.report_charge`)."""
        return self.charge

    def measurement(self, prepared: Any) -> int | list[int] | tuple[bool, ...]:
        """The VDAF measurement of a prepared value (module docstring): randomized first with local noise inside;
        a Poplar1 task's, the string's bits, first bit first (:func:`ldp.prio.poplar1.bits_of`)."""
        if self.fit is None:  # Poplar1 (device_task checked the task against the metric)
            from ldp.prio.poplar1 import bits_of

            return bits_of(prepared, self.task.vdaf_params["bits"])
        if self.task.local is not None:
            return self.fit.measurement(self.encoder.randomize_payload(prepared))
        if self.fit.vdaf == "Prio3SumVec":
            return [int(i == prepared) for i in range(self.fit.length)]
        return int(prepared)

    def report_time(self, now: float, window: int) -> int:
        """The report's time: ``now`` clamped into the charge's ``window`` (its index), rounded down to the task's
        time precision (which divides the window, so the report stays in the window it was charged to)."""
        size, precision = int(self.task.window_seconds), int(self.task.time_precision)
        t = min(max(int(now), window * size), window * size + size - 1)
        return t - t % precision

    def line(self, prepared: Any, now: float, window: int) -> str:
        """The outbox line of one report of ``prepared`` charged to ``window`` at time ``now``."""
        from ldp import prio

        try:
            report = prio.seal_report(self._vdaf, self.measurement(prepared), task_id=self.task.task_id,
                                      time=self.report_time(now, window), leader=self._configs[0],
                                      helper=self._configs[1], time_precision=self.task.time_precision)
        except ValueError as exc:  # PrioError: a measurement the VDAF refuses (never for a prepared value)
            raise RefusalValueError(f"metric {self.metric!r}: the report could not be made: {exc}", "not_encodable",
                                    metric=self.metric) from None
        return dap_line(self.task.task_id, report)
