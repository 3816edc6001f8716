"""What one aggregator keeps of a Poplar1 task's collections, level by level (issue 89, item 2;
``docs/two-aggregators.md`` §17).

A window (the batch) of a Poplar1 task is collected once per **level**, each time with an aggregation parameter
(the level and its candidate prefixes, :func:`ldp.prio.poplar1.agg_param`). Under the task's records' prefix, in
``poplar1/``, each created once (the store's create-if-absent) and never changed:

=========================================  ==================================================================
``levels/w<window>-l<level>.json``         the parameter of that level of the window: the first recorded
                                           stands, another one at the same level is refused
``jobs/job-<ID>.plan.json``                the leader: a job's reports, before the helper is asked
``jobs/job-<ID>.init.json``                the helper: a job's first round, its answer and its verification
                                           states (sealed to the records key), before the answer leaves
``jobs/job-<ID>.json``                     a finished job: window, level, reports aggregated and refused,
                                           its aggregate share sealed to the records key
``releases/w<window>-l<level>.json``       a released level: count, checksum, the noised share sealed to the
                                           collector, the level's noise and its (ε, δ)
=========================================  ==================================================================

**The parameter rules** (:func:`admit_param`, both aggregators): a parameter decodes, has at most the task's
``max_candidates`` prefixes and a level below ``bits``; a level already recorded with this parameter is the same
collection (asked again: answered from its records); with another one it is refused
(``batch_queried_too_many_times``: a level is collected once); a new level beyond the task's ``levels`` is refused
likewise (the noise is calibrated for that many), and one that the crate's ``is_agg_param_valid`` refuses after the
window's recorded parameters (a level lower than one collected, a prefix extending none of the last level's) is
``invalid_message``. **Replay rule:** a report is in at most one job per (window, level) on each side
(``report_replayed`` otherwise): it is prepared at most once per parameter.

**Retention.** Once a window's last level is released (no level can be added), the leader's stored reports of the
window, its finished jobs' plans and the helper's finished jobs' first rounds are deleted
(:mod:`ldp.aggregators.poplar1_prune`); the parameters, the finished jobs and the releases, from which a repeated
request is answered, stay.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ldp.aggregators.messages import xor_checksum
from ldp.aggregators.records import RECORD_FORMAT, TaskRecords
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError, PrioError

__all__ = ["admit_param", "LevelRecords", "decode_param"]

Level = tuple[int, int]
"""(window, level)."""


def decode_param(data: bytes) -> Any:
    """The aggregation parameter encoded in ``data`` (``invalid_message`` when it does not decode)."""
    from ldp.prio.poplar1 import Poplar1AggregationParam

    try:
        return Poplar1AggregationParam.from_bytes(bytes(data))
    except (PrioError, ValueError, TypeError) as exc:
        raise AggregatorError(f"the aggregation parameter is no Poplar1 parameter: {exc}", "invalid_message") from None


def admit_param(task: Task, recorded: dict[int, bytes], data: bytes) -> tuple[Any, bool]:
    """``(parameter, new)`` for ``data`` given a window's ``recorded`` parameters by level (module docstring's
    rules); ``new`` false when the level is recorded with this very parameter."""
    from ldp.prio.poplar1 import Poplar1

    if not data:
        raise AggregatorError("a Poplar1 collection names its aggregation parameter (level and prefixes)",
                              "invalid_message")
    param = decode_param(data)
    bits, most = task.vdaf_params["bits"], task.vdaf_params["max_candidates"]
    if param.level >= bits or len(param) > most:
        raise AggregatorError(f"level {param.level} with {len(param)} prefixes: the task has {bits} levels and at "
                              f"most {most} candidates a level", "invalid_message")
    if (known := recorded.get(param.level)) is not None:
        if known == bytes(data):
            return param, False
        raise AggregatorError(f"level {param.level} of this window was collected with another parameter: each "
                              "level once", "batch_queried_too_many_times")
    if len(recorded) >= task.levels:
        raise AggregatorError(f"this window was collected at {len(recorded)} levels, the task's most (its noise is "
                              "split over that many)", "batch_queried_too_many_times")
    previous = [decode_param(recorded[lv]) for lv in sorted(recorded)]
    if not Poplar1.is_agg_param_valid(param, previous):
        raise AggregatorError(f"level {param.level} after levels {sorted(recorded)}: levels grow, and each prefix "
                              "extends one of the last level's", "invalid_message")
    return param, True


class LevelRecords:
    """One Poplar1 task's level records at one aggregator (module docstring), over its
    :class:`~ldp.aggregators.records.TaskRecords` (store, prefix, records key, lock)."""

    def __init__(self, records: TaskRecords) -> None:
        self.records = records
        self.prefix = f"{records.prefix}poplar1/"
        self.params: dict[int, dict[int, bytes]] = {}
        self.taken: dict[Level, set[bytes]] = {}
        """The reports in a recorded job (finished at the leader; first round recorded at the helper)."""
        self.finished: dict[Level, dict[str, dict[str, Any]]] = {}
        self.releases: dict[Level, dict[str, Any]] = {}
        self.rejected: dict[Level, Counter[str]] = {}
        self.pruned: set[int] = set()
        """The windows pruned since this process started (:mod:`ldp.aggregators.poplar1_prune`)."""
        self.load()

    # -- keys and reading -------------------------------------------------------------------------------------
    def job_key(self, job_id: str, kind: str = "") -> str:
        return f"{self.prefix}jobs/job-{job_id}{'.' + kind if kind else ''}.json"

    def level_key(self, window: int, level: int, folder: str = "levels") -> str:
        return f"{self.prefix}{folder}/w{window}-l{level}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return self.records.read(key)
        except FileNotFoundError:
            return None

    def load(self) -> None:
        """Rebuild the state from the store (records are never changed: each is applied once)."""
        for key in self.records.store.list(f"{self.prefix}levels/"):
            rec = self.records.read(key)
            self.params.setdefault(int(rec["window"]), {})[int(rec["level"])] = bytes.fromhex(rec["param"])
        for key in self.records.store.list(f"{self.prefix}jobs/"):
            name = key.rsplit("/", 1)[1]
            if name.endswith(".init.json"):
                rec = self.records.read(key)
                self.taken.setdefault((int(rec["window"]), int(rec["level"])), set()).update(
                    bytes.fromhex(r) for r in rec["reports"])
            elif name.count(".") == 1:
                self._apply(self.records.read(key))
        for key in self.records.store.list(f"{self.prefix}releases/"):
            rec = self.records.read(key)
            self.releases[(int(rec["window"]), int(rec["level"]))] = rec

    def _apply(self, rec: dict[str, Any]) -> None:
        at = (int(rec["window"]), int(rec["level"]))
        self.finished.setdefault(at, {})[str(rec["job"])] = rec
        taken = self.taken.setdefault(at, set())
        taken.update(bytes.fromhex(r) for r in rec["accepted"])
        taken.update(bytes.fromhex(r) for r in rec["rejected"])
        self.rejected.setdefault(at, Counter()).update(rec["rejected"].values())

    # -- writing ----------------------------------------------------------------------------------------------
    def admit(self, task: Task, window: int, data: bytes) -> Any:
        """:func:`admit_param` for ``window``, a new level's parameter recorded (the first writer's stands)."""
        with self.records.lock:
            param, new = admit_param(task, self.params.get(window, {}), data)
            if new:
                key = self.level_key(window, param.level)
                if not self.records.write(key, {"window": window, "level": param.level, "param": bytes(data).hex()}):
                    param, _ = admit_param(task, {param.level: bytes.fromhex(self.records.read(key)["param"])}, data)
                self.params.setdefault(window, {})[param.level] = bytes(data)
            return param

    def finish_job(self, job_id: str, window: int, level: int, accepted: list[bytes], rejected: dict[bytes, str],
                   share: bytes, **extra: Any) -> dict[str, Any]:
        """Record a finished job (exactly once: the record in the store is the one applied); the record."""
        with self.records.lock:
            rec = {"job": job_id, "window": window, "level": level, "accepted": [r.hex() for r in accepted],
                   "rejected": {r.hex(): c for r, c in rejected.items()},
                   "sealed_share": self.records.sealer.seal_bytes(job_id, window, share), **extra}
            if not self.records.write(self.job_key(job_id), rec):
                rec = self.records.read(self.job_key(job_id))  # another process's, written first: it stands
            if job_id not in self.finished.get((int(rec["window"]), int(rec["level"])), {}):
                self._apply({"format": RECORD_FORMAT, **rec})
            return rec

    def job_share(self, rec: dict[str, Any]) -> bytes:
        """A finished job's aggregate share's bytes (``ValueError`` when it does not open with the records key)."""
        try:
            return self.records.sealer.open_bytes(str(rec["job"]), int(rec["window"]), str(rec["sealed_share"]))
        except (PrioError, ValueError) as exc:
            raise ValueError(f"Poplar1 job {rec['job']}: its share does not open with the records key ({exc})"
                             ) from None

    def batch(self, window: int, level: int) -> tuple[list[bytes], bytes]:
        """The reports aggregated at ``(window, level)`` and their checksum (DAP's XOR of SHA-256 of the IDs)."""
        accepted = [bytes.fromhex(r) for rec in self.finished.get((window, level), {}).values()
                    for r in rec["accepted"]]
        return accepted, xor_checksum(accepted)

    def aggregate_share(self, vdaf: Any, param: Any, window: int) -> Any:
        """The level's aggregate share: every finished job's merged (zero without any)."""
        share = vdaf.aggregate_init(param)
        for rec in self.finished.get((window, param.level), {}).values():
            if rec["accepted"]:
                share.merge(vdaf.aggregate_share_from_bytes(param, self.job_share(rec)))
        return share

    def summary(self) -> list[dict[str, Any]]:
        """Each collected level's counts, for ``/status``."""
        return [{"window": w, "level": lv, "valid": len(self.batch(w, lv)[0]),
                 "refused": dict(self.rejected.get((w, lv), {})), "released": (w, lv) in self.releases}
                for w, levels in sorted(self.params.items()) for lv in sorted(levels)]


def write_json(value: Any) -> str:
    """Compact JSON (the helper's sealed states)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def release_level(levels: LevelRecords, vdaf: Any, param: Any, window: int, count: int, checksum: bytes, *,
                  source: Any = None, clock: Any = None) -> dict[str, Any]:
    """This aggregator's release of one level of ``window`` (as :func:`ldp.aggregators.release.release` releases a
    Prio3 window): the record already there (for the same count and checksum), or a new one: the batch checked
    against the leader's ``count`` and ``checksum`` and the task's minimum batch size and central target, the
    level's noise (:meth:`~ldp.aggregators.task.Task.share_noise`: the walk's noise split over the task's levels)
    added to each prefix's share, the share sealed to the collector (DAP-09 associated data with the parameter)."""
    from ldp import prio
    from ldp.aggregators.codec import Interval
    from ldp.aggregators.collection_messages import aggregate_share_aad
    from ldp.aggregators.prepare import aggregate_share_info
    from ldp.aggregators.release import over_releases, target_delta
    from ldp.privacy.share_noise import from_field

    records, task, at = levels.records, levels.records.task, (window, param.level)
    if (done := levels.releases.get(at)) is not None:
        if done["count"] != count or done["checksum"] != checksum.hex() or done["param"] != param.to_bytes().hex():
            raise AggregatorError(f"level {param.level} of window {window} was released for another batch",
                                  "batch_mismatch", 409)
        return done
    mine, mine_sum = levels.batch(window, param.level)
    if len(mine) != count or mine_sum != checksum:
        raise AggregatorError(f"window {window} level {param.level}: the leader aggregated {count} reports, this "
                              f"{records.role} {len(mine)}, or other ones: nothing is released", "batch_mismatch", 409)
    if count < task.min_batch_size:
        raise AggregatorError(f"window {window} holds {count} valid reports at level {param.level}, fewer than the "
                              f"task's minimum batch size {task.min_batch_size}", "batch_too_small", 400)
    noise, walk = task.share_noise(), task.walk_calibration()
    entry: dict[str, Any] = {"mechanism": "none"} if walk is None else walk.level_record()
    if task.central is not None:
        every = [*records.collections.values(), *levels.releases.values(), {"noise": entry}]
        total = over_releases(every, target_delta(task), task.reports_per_window)
        if total is None or not total.fits_within(task.central):
            raise AggregatorError(f"releasing level {param.level} of window {window} would take the central "
                                  f"guarantee to {total}, beyond the task's target {task.central}", "budget_exhausted",
                                  403)
    share, label = levels.aggregate_share(vdaf, param, window), "none"
    if noise is not None:
        drawn, source_label = noise.add([0] * len(share), share.modulus, count, source)
        share.add_integers([from_field(z, share.modulus) for z in drawn])
        label = str(source_label)
    aad = aggregate_share_aad(task.task_id, Interval(window, task.window_seconds), param.to_bytes())
    sealed = prio.hpke_seal(prio.HpkeConfig.from_bytes(task.collector_hpke_config),
                            aggregate_share_info(records.role), aad, share.to_bytes())
    rec = {"window": window, "level": param.level, "param": param.to_bytes().hex(), "count": count,
           "checksum": checksum.hex(), "encrypted_share": bytes(sealed).hex(), "noise": entry, "noise_source": label,
           "released_at": int(clock()) if clock is not None else 0,
           "rejected": dict(levels.rejected.get(at, {}))}
    key = levels.level_key(window, param.level, "releases")
    if not records.write(key, rec):
        rec = records.read(key)
    levels.releases[at] = rec
    return rec
