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
"""

from __future__ import annotations

import random
import time as _time
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from ldp.aggregators.prepare import aggregate_share_aad, aggregate_share_info
from ldp.aggregators.records import TaskRecords
from ldp.errors import AggregatorError
from ldp.privacy.central_noise import zcdp_epsilon
from ldp.privacy.cost import PrivacyCost

__all__ = ["release", "over_releases", "release_cost", "DEFAULT_DELTA"]

DEFAULT_DELTA = 1e-9
"""The δ at which pure-ε releases over time are stated when the task's target gives none."""


def release_cost(rec: dict[str, Any]) -> PrivacyCost | None:
    """One release's central (ε, δ), from its record (``None``: released without noise)."""
    noise = rec.get("noise", {})
    if noise.get("mechanism", "none") == "none":
        return None
    return PrivacyCost(float(noise["epsilon"]), float(noise.get("delta") or 0.0))


def _rho(noise: dict[str, Any]) -> float:
    if noise["mechanism"] == "laplace":
        return float(noise["epsilon"]) ** 2 / 2
    sigma2 = float(Fraction(noise["scale"]))
    return float(noise["sensitivity"]) ** 2 / (2 * sigma2)


def over_releases(records: Iterable[dict[str, Any]], delta: float = DEFAULT_DELTA) -> PrivacyCost | None:
    """A device's central (ε, δ) over the releases ``records`` (module docstring); ``None`` when one of them has
    no noise (nothing is proven against the collector) or there are none."""
    noises = [r.get("noise", {}) for r in records]
    if not noises or any(n.get("mechanism", "none") == "none" for n in noises):
        return None
    basic = PrivacyCost(sum(float(n["epsilon"]) for n in noises), min(1.0, sum(float(n.get("delta") or 0)
                                                                                 for n in noises)))
    if len(noises) == 1:
        return basic
    zcdp = PrivacyCost(zcdp_epsilon(sum(_rho(n) for n in noises), delta), delta)
    return basic if basic.delta <= delta and basic.epsilon <= zcdp.epsilon else zcdp


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
    if task.central is not None:
        total = over_releases([*records.collections.values(), {"noise": entry}],
                              task.central.delta or DEFAULT_DELTA)
        if total is None or not total.fits_within(task.central):
            raise AggregatorError(f"releasing window {window} would take the central guarantee to {total} (without "
                                  f"noise nothing is proven), beyond the task's target {task.central}",
                                  "budget_exhausted", 403)
    share = list(mine.share if mine.share is not None else [0] * records.length)
    label = "none"
    if noise is not None:
        share, source_label = noise.add(share, records.modulus, count, source)
        label = str(source_label)
    payload = vdaf.aggregate_share_from_field_elements(share).to_bytes()
    sealed = prio.hpke_seal(prio.HpkeConfig.from_bytes(task.collector_hpke_config), aggregate_share_info(records.role),
                            aggregate_share_aad(task.task_id, window, count, checksum), payload)
    rec = {"window": window, "count": count, "checksum": checksum.hex(), "encrypted_share": sealed.hex(),
           "noise": entry, "noise_source": label, "released_at": int(clock()),
           "rejected": dict(mine.rejected)}  # the window's refusals, kept once its job records are pruned
    if not records.write(records.collection_key(window), rec):
        rec = records.read(records.collection_key(window))  # another process released it first: that one stands
    records.collections[window] = rec
    return rec
