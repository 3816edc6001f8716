"""The collector's side (``ldp collect``; issue 71, items 3–5): open the two aggregate shares of a released
window, add them, and estimate.

The leader answers a collection with both aggregators' noised aggregate shares, each sealed to the collector's HPKE
key with the batch (task, window, report count, checksum) as associated data, so that neither the leader nor anyone
between reads the helper's share, and a share opens only for the batch it was made for. The collector adds the
shares in the field and reads each entry as a signed integer (``x`` or ``x − p``: the noise may take a count below
zero; :func:`ldp.privacy.share_noise.from_field`):

    sums = signed(leader + helper mod p) = Σ measurements + Z_leader + Z_helper.

**Estimates.** Without local noise (``two-aggregator``) the sums *are* the counts (a histogram's buckets, a count of
ones), each with the standard error of the two noises, ``√(2·Var Z)``. With local noise (``two-aggregator+local``)
they are the protocol's sufficient statistics and the protocol's own estimator debiases them
(:meth:`~ldp.decoders.base.Aggregate.from_sums`); its estimator is linear, with slope ``a_v`` on entry ``v`` (1/(p−q)
for randomized response), so the variance of an estimate is the local one plus ``a_v²·2·Var Z``.

**Guarantees reported.** ``central``: this release's (ε, δ) against the collector when one aggregator is honest, and
over every release of the task (the leader's ledger, :func:`ldp.aggregators.release.over_releases`), per report and
per device (a device sending up to the task's ``reports_per_window`` reports a window:
:func:`ldp.aggregators.release.device_figures`; the leader's figures, else computed here from the release's noise and
the number of releases, every release of a task having the task's noise). ``local``: one report's ε against
everyone, both aggregators colluding included (``None`` without local noise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp.aggregators.codec import Interval
from ldp.aggregators.collection_messages import aggregate_share_aad
from ldp.aggregators.prepare import aggregate_share_info
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError, PrioError
from ldp.privacy.share_noise import from_field

__all__ = ["Collection", "open_collection", "collection_document", "shares_document", "estimates"]


@dataclass(frozen=True)
class Collection:
    """A collected window: the signed ``sums`` (one per aggregate entry), the report count, the release's
    guarantees as the leader stated them, and the estimates."""

    task: Task
    window: int
    report_count: int
    sums: tuple[int, ...]
    noise_variance: float
    release_epsilon: dict[str, float] | None
    cumulative_epsilon: dict[str, float] | None
    releases: int
    refused: dict[str, int]
    device_epsilon: dict[str, float] | None = None
    """This release's central (ε, δ) per device (k reports a window; k = 1: the release's)."""
    cumulative_device_epsilon: dict[str, float] | None = None
    """Per device over every release of the task."""

    def estimates(self, confidence: float = 0.95) -> Any:
        """The window's :class:`~ldp.decoders.results.Estimates` (module docstring)."""
        return estimates(self.task, self.sums, self.report_count, self.noise_variance, confidence)

    def to_dict(self) -> dict[str, Any]:
        est = self.estimates()
        local = self.task.local_cost()
        return {"task_id": self.task.id_text, "app": self.task.app, "metric": self.task.metric,
                "trust": self.task.trust, "window": self.window, "n": self.report_count, "sums": list(self.sums),
                "items": list(est.items), "count": [float(c) for c in est.count],
                "std_error": [float(s) for s in est.std_error], "ci_low": [float(c) for c in est.ci_low],
                "ci_high": [float(c) for c in est.ci_high], "confidence": est.confidence,
                "central": {"release": self.release_epsilon, "over_releases": self.cumulative_epsilon,
                            "releases": self.releases, "noise": self.task.noise.to_dict(),
                            "reports_per_window": self.task.reports_per_window,
                            "device": {"release": self.device_epsilon,
                                       "over_releases": self.cumulative_device_epsilon}},
                "local": None if local is None else local.to_dict(), "refused": self.refused}


def _share(task: Task, keypair: Any, role: str, sealed_hex: str, aad: bytes, vdaf: Any) -> list[int]:
    from ldp import prio

    try:
        payload = prio.hpke_open(keypair, aggregate_share_info(role), aad, bytes.fromhex(sealed_hex))
        return [int(x) for x in vdaf.aggregate_share_from_bytes(payload).field_elements()]
    except (PrioError, ValueError) as exc:
        raise AggregatorError(f"the {role}'s aggregate share does not open with this collector key for this "
                              f"batch: {exc}", "hpke_decrypt_error", 502) from None


def open_collection(task: Task, keypair: Any, doc: dict[str, Any]) -> Collection:
    """Open the leader's answer ``doc`` (:meth:`ldp.aggregators.leader.Leader.collect`) with the collector's key
    pair."""
    try:
        window, count = int(doc["window"]), int(doc["report_count"])
        leader_hex, helper_hex = str(doc["leader_share"]), str(doc["helper_share"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AggregatorError(f"not a collection: {exc}", "invalid_message", 502) from None
    vdaf = task.prio3()
    aad = aggregate_share_aad(task.task_id, Interval(window, task.window_seconds))
    leader = _share(task, keypair, "leader", leader_hex, aad, vdaf)
    helper = _share(task, keypair, "helper", helper_hex, aad, vdaf)
    p = vdaf.modulus
    sums = tuple(from_field((a + b) % p, p) for a, b in zip(leader, helper, strict=True))
    noise = task.share_noise()
    releases = int(doc.get("releases", 1))
    device = _device_figures(task, doc, releases)
    return Collection(task, window, count, sums, 0.0 if noise is None else 2 * noise.count_variance,
                      doc.get("release_epsilon"), doc.get("cumulative_epsilon"), releases,
                      dict(doc.get("refused", {})), device["device_epsilon"], device["cumulative_device_epsilon"])


def shares_document(task: Task, collection: bytes) -> dict[str, Any]:
    """DAP-09's ``Collection`` of one window of ``task`` as :func:`open_collection` and
    :func:`ldp.aggregators.heavy_hitters.open_level` read it: the window, the report count and both sealed shares;
    a Collection that does not decode, or is of another interval than one window of the task, is refused."""
    from ldp.aggregators.collection_messages import Collection as DapCollection, MessageError

    try:
        dap = DapCollection.from_bytes(collection)
    except MessageError as exc:
        raise AggregatorError(f"the leader's Collection does not decode: {exc}", "invalid_message", 502) from None
    window = dap.interval.start
    if dap.interval != Interval(window, task.window_seconds) or window % task.window_seconds:
        raise AggregatorError(f"the leader's Collection is of {dap.interval}, not one window of the task",
                              "invalid_message", 502)
    return {"window": window, "report_count": dap.report_count, "leader_share": dap.leader_share.to_bytes().hex(),
            "helper_share": dap.helper_share.to_bytes().hex()}


def collection_document(task: Task, collection: bytes, status: dict[str, Any] | None) -> dict[str, Any]:
    """What :func:`open_collection` reads, from DAP-09's ``Collection`` (the shares and the count) and the figures
    the leader's ``/status`` states for the release (this project's; ``None`` for a leader that has no status, as
    another DAP implementation's: then this release's figures are computed from the task's noise, and those over
    the releases are not stated, since the number of releases is the leader's to know)."""
    from ldp.aggregators.release import task_terms

    doc = shares_document(task, collection)
    window = doc["window"]
    entry = next((t for t in (status or {}).get("tasks", []) if t.get("task_id") == task.id_text), None)
    release = next((r for r in (entry or {}).get("releases", []) if r.get("window") == window), None)
    if entry is None or release is None:
        terms = task_terms(task, ())
        return {**doc, "noise": terms["noise"], "release_epsilon": terms["release_epsilon"],
                "cumulative_epsilon": None, "releases": 1, "device_epsilon": terms["device_epsilon"],
                "cumulative_device_epsilon": None}
    refused = entry.get("windows", {}).get(str(window), {}).get("refused", {})
    return {**doc, "noise": release.get("noise"), "release_epsilon": release.get("epsilon"),
            "cumulative_epsilon": entry.get("cumulative_epsilon"), "releases": len(entry["releases"]),
            "device_epsilon": release.get("device_epsilon"), "refused": refused}


def _device_figures(task: Task, doc: dict[str, Any], releases: int) -> dict[str, Any]:
    """The per-device figures of a collection: the leader's when it states them, else
    :func:`~ldp.aggregators.release.device_figures` of ``releases`` releases of the release's noise (the task's)."""
    from ldp.aggregators.release import device_figures, task_terms

    noise = doc.get("noise") if isinstance(doc.get("noise"), dict) else task_terms(task, ())["noise"]
    mine = device_figures(task, [{"noise": noise}] * max(1, releases), {"noise": noise})
    return {key: doc[key] if key in doc else mine[key] for key in ("device_epsilon", "cumulative_device_epsilon")}


def estimates(task: Task, sums: tuple[int, ...] | list[int], n: int, noise_variance: float,
              confidence: float = 0.95) -> Any:
    """Estimates from a window's signed sums (module docstring)."""
    from ldp.decoders.results import Estimates

    params = task.local_params()
    if params is None:
        count = np.asarray(sums, dtype=np.float64)
        se = np.full(count.shape, float(np.sqrt(noise_variance)))
        items = (["count"] if task.vdaf in ("Prio3Count", "Prio3Sum") else list(task.labels) if task.labels
                 else [str(i) for i in range(len(sums))])
        return Estimates(task.vdaf, items, n, count, se, confidence, None,
                         notes=(f"two aggregators, exact sums plus central noise {task.noise}",))
    from ldp.protocols.registry import get_protocol

    agg_type = get_protocol(params.protocol).aggregate_type
    noisy = noise_variance > 0
    base = agg_type.from_sums(params, list(sums), n, noisy=noisy).estimate(confidence=confidence)
    if not noisy:
        return base
    bumped = agg_type.from_sums(params, [int(s) + 1 for s in sums], n, noisy=True).estimate(confidence=confidence)
    slope = np.asarray(bumped.count, dtype=np.float64) - np.asarray(base.count, dtype=np.float64)
    se = np.sqrt(np.asarray(base.std_error, dtype=np.float64) ** 2 + slope ** 2 * noise_variance)
    return Estimates(base.protocol, list(base.items), base.n, base.count, se, confidence, base.privacy,
                     dict(base.extra), (*base.notes, f"standard errors include the central noise {task.noise}"))
