"""One aggregator's release of a window's aggregate share, and the central ε over releases (issue 71, item 4).

Each aggregator, asked for a window's aggregate share, on its own:

1. checks the window holds at least the task's ``min_batch_size`` valid reports (``batch_too_small``) and, at the
   helper, that the leader's report count and checksum are its own (``batch_mismatch``: the two aggregated the
   same reports, or nothing is released);
2. checks the release keeps the task's central target over every window it released (``budget_exhausted``);
3. adds its noise to its share in the field (:class:`~ldp.privacy.share_noise.ShareNoise`, exact discrete Laplace
   or Gaussian from the OS generator), seals the noised share to the collector (HPKE, DAP-09's ``info``), and
   records it before it answers. A window is released **once**: a repeated request gets the recorded share again,
   never a fresh noise draw that an analyst could average away.

**The central guarantee.** With one honest aggregator, its noise alone is in the result: each release is the noise's
(ε, δ)-DP against the collector (and the other aggregator). A device sends one report per window, so over releases a
device's loss is the composition of the releases of the windows it took part in, at most all of them:
:func:`over_releases` composes them by zero-concentrated DP (a pure ε-DP release is ε²/2-zCDP, Bun & Steinke 2016,
Prop. 1.4; a discrete Gaussian of parameter σ with L2 sensitivity Δ is Δ²/(2σ²)-zCDP, Canonne, Kamath & Steinke 2020,
Thm. 14; zCDP adds up) converted at δ by CKS Corollary 13, and by basic composition (ε and δ add up), and takes the
smaller ε.

**Per device** (issue 84, item 5). The figures above are per *report*. A task whose spec caps a device at k reports
of the metric per window (``Task.reports_per_window``) also states each release per *device*, one device's k
reports all replaced by others' (:func:`device_cost`):

* Laplace (pure ε): ``k·ε``, group privacy (Dwork & Roth 2014, Thm. 2.2; the L1 change is at most k·Δ₁ against a
  scale Δ₁/ε); as zCDP ``(k·ε)²/2``.
* Gaussian: the L2 change is at most k·Δ₂, so ρ = (kΔ₂)²/(2σ²) = k²·ρ₁ (CKS Thm. 14), converted at the release's
  δ by CKS Corollary 13 (:func:`~ldp.privacy.central_noise.zcdp_epsilon`): the conversion σ was calibrated with
  (:func:`~ldp.privacy.central_noise.gaussian_sigma_zcdp`), so k = 1 gives the release's ε back. It is **not**
  k·ε: ε = 1, δ = 10⁻⁹, k = 10 is 11.97; ε = 4, k = 2 is 8.55. (The exact privacy profile of the same discrete
  Gaussian is a little lower, 11.45 and 8.18 for a histogram; the zCDP figure bounds it from above and composes.)

Over releases, :func:`over_releases` with ``reports_per_window=k`` composes the per-device costs as it composes the
per-report ones (zCDP: ``k²·Σρ``; basic: the per-device (ε, δ) summed; the smaller ε), and the budget check of
:func:`release` uses it: a central target is about a device.
"""

from __future__ import annotations

import random
import time as _time
from collections.abc import Iterable
from typing import Any

from ldp.aggregators.codec import Interval
from ldp.aggregators.collection_messages import aggregate_share_aad
from ldp.aggregators.prepare import aggregate_share_info
from ldp.aggregators.records import TaskRecords
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.release_composition import DEFAULT_DELTA, device_cost, over_releases, release_cost

__all__ = ["release", "over_releases", "release_cost", "device_cost", "device_figures", "task_terms", "target_delta",
           "DEFAULT_DELTA"]

def target_delta(task: Task) -> float:
    """The δ a task's releases are composed at: its central target's, else :data:`DEFAULT_DELTA`."""
    return task.central.delta if task.central is not None and task.central.delta else DEFAULT_DELTA


def _as_dict(cost: PrivacyCost | None) -> dict[str, float] | None:
    return None if cost is None else cost.to_dict()


def device_figures(task: Task, releases: Iterable[dict[str, Any]], rec: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The per-device figures a result or a status states (JSON-ready): ``reports_per_window`` (the task's k,
    ``None``: uncapped, one assumed), ``cumulative_device_epsilon`` (:func:`over_releases` of ``releases`` with k,
    at :func:`target_delta`) and, given the release ``rec``, its ``device_epsilon`` (:func:`device_cost`)."""
    k = task.reports_per_window
    out: dict[str, Any] = {"reports_per_window": k,
                           "cumulative_device_epsilon": _as_dict(over_releases(list(releases), target_delta(task), k))}
    if rec is not None:
        out["device_epsilon"] = _as_dict(device_cost(rec, k))
    return out


def task_terms(task: Task, releases: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """What a task promises, for a status before and after its first release (JSON-ready): its ``noise`` (and the
    ``min_batch_size``), the central (ε, δ) of each release per report (``release_epsilon``) and per device
    (``device_epsilon``), and :func:`device_figures` over ``releases``."""
    noise = task.share_noise()
    entry: dict[str, Any] = task.noise.to_dict()
    if noise is not None:
        entry.update(sensitivity=noise.sensitivity, scale=str(noise.scale))
    one = {"noise": entry}
    return {"noise": entry, "min_batch_size": task.min_batch_size, "release_epsilon": _as_dict(release_cost(one)),
            **device_figures(task, releases, one)}


def release(records: TaskRecords, vdaf: Any, window: int, count: int, checksum: bytes, *,
            source: random.Random | None = None, clock: Any = _time.time) -> dict[str, Any]:
    """This aggregator's release of ``window`` (module docstring): its record (created now, or the one already
    there). ``count`` and ``checksum`` are what the leader aggregated (the leader passes its own)."""
    from ldp import prio

    task = records.task
    if clock() < window + task.window_seconds:
        raise AggregatorError(f"window {window} has not ended: it is released once, after its end", "window_open",
                              400)
    if (done := records.collections.get(window)) is not None:
        if done["count"] != count or done["checksum"] != checksum.hex():
            raise AggregatorError(f"window {window} was released with {done['count']} reports and another checksum",
                                  "batch_mismatch", 409)
        return done
    mine = records.window(window)
    if mine.count != count or mine.checksum != checksum:
        raise AggregatorError(f"window {window}: the leader aggregated {count} reports, this {records.role} "
                              f"{mine.count}, or other ones (checksums differ): nothing is released",
                              "batch_mismatch", 409)
    if count < task.min_batch_size:
        raise AggregatorError(f"window {window} holds {count} valid reports, fewer than the task's minimum batch "
                              f"size {task.min_batch_size}", "batch_too_small", 400)
    noise = task.share_noise()
    entry: dict[str, Any] = task.noise.to_dict()
    if noise is not None:
        entry.update(sensitivity=noise.sensitivity, scale=str(noise.scale))
    if task.central is not None:  # a target is about a device: its k reports a window counted (module docstring)
        k = task.reports_per_window
        total = over_releases([*records.collections.values(), {"noise": entry}], target_delta(task), k)
        if total is None or not total.fits_within(task.central):
            per = f" per device ({k} reports a window)" if k is not None and k > 1 else ""
            raise AggregatorError(f"releasing window {window} would take the central guarantee{per} to {total} "
                                  f"(without noise nothing is proven), beyond the task's target {task.central}",
                                  "budget_exhausted", 403)
    share = list(mine.share if mine.share is not None else [0] * records.length)
    label = "none"
    if noise is not None:
        share, source_label = noise.add(share, records.modulus, count, source)
        label = str(source_label)
    payload = vdaf.aggregate_share_from_field_elements(share).to_bytes()
    sealed = prio.hpke_seal(prio.HpkeConfig.from_bytes(task.collector_hpke_config), aggregate_share_info(records.role),
                            aggregate_share_aad(task.task_id, Interval(window, task.window_seconds)), payload)
    rec = {"window": window, "count": count, "checksum": checksum.hex(), "encrypted_share": sealed.hex(),
           "noise": entry, "noise_source": label, "released_at": int(clock()),
           "rejected": dict(mine.rejected)}  # the window's refusals, kept once its job records are pruned
    if not records.write(records.collection_key(window), rec):
        rec = records.read(records.collection_key(window))  # another process released it first: that one stands
    records.released(rec)
    return rec
