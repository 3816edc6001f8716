"""A two-aggregator task: what the leader, the helper and the collector agree on for one metric (issue 71, item 3).

A **task** is DAP's unit: one metric of one collection, measured by one Prio3 type, with one window length, one
minimum batch size and one noise policy. Its description is public (devices, both aggregators and the collector
hold the same file, ``ldp-task/1`` JSON, written by ``ldp collect task``); the aggregators' secrets (the verify key
they share, each one's HPKE private key, their tokens) live in each aggregator's own config, never in the task.

* ``task_id``: 32 random bytes (base64url in the file), DAP's task ID. Under VDAF draft 18 it is also the VDAF's
  context string ``ctx`` (§4.2: an application binds its messages to its context), so that a report made for one
  task never verifies in another; VDAF-08 has no context string (the report's HPKE associated data names the task).
* ``vdaf_draft`` (the ``vdaf`` object's ``draft``: 18, the default, or 8; :data:`VDAF_DRAFTS`): the VDAF draft
  devices shard with and both aggregators prepare with. VDAF-08 is what DAP-09 names and the deployed DAP stack
  speaks (a Janus aggregator, divviup-ts devices); its Sum and SumVec bound a measurement by a bit length, so their
  ``max_measurement`` must be ``2^bits − 1``.
* ``vdaf`` and ``vdaf_params``: the Prio3 type and its parameters (the metric's :class:`~ldp.encoders.base_vdaf.
  Prio3Fit`), Prio3SumVec's and Prio3Histogram's ``chunk_length`` included (the FLP's parallel-sum chunk: a client
  built with another one makes shares of another length, refused at the door; :meth:`Task.for_metric` writes the crate's
  ``optimal_chunk_length``, which a task file without one also means). ``local``: the metric's protocol parameters
  when each device randomizes its value before sharing it (the trust model ``two-aggregator+local``: the collector
  debiases the sums with the protocol's estimator), or ``None`` (the exact value is shared: ``two-aggregator``).
* ``window_seconds``: reports are batched by the window their time falls in (``time // window_seconds``); each
  window is collected at most once (:mod:`ldp.aggregators.leader`), so no two queries overlap and no report can be
  differenced out. ``time_precision``: devices round their report's time down to it (DAP's rounding).
* ``min_batch_size``: a window is released only when at least that many valid reports are in it (both aggregators
  check it).
* ``noise``: what each aggregator adds to its aggregate share (:class:`Noise`), each share's noise alone enough for
  the stated central guarantee against the collector; ``central``: the optional central target over releases
  (both aggregators refuse a release beyond it).
* ``hpke_configs``: the leader's and the helper's public HPKE configs (DAP's ``HpkeConfig`` encoding), which a
  device seals each input share to (:mod:`ldp.client.dap`); optional (a device given none cannot record the
  metric), and when present each aggregator checks at start that its own key's config is the task's, so that a
  device never seals to a stale key.
* ``reports_per_window``: the most reports of the metric one device sends in a window, k (the spec's
  ``budget.per_window`` over the per-report cost: :meth:`~ldp.spec.CollectionSpec.reports_per_window`; ``None``:
  the spec caps none, and the guarantee assumes one). Each release is then also stated for a device's k reports
  (:func:`ldp.aggregators.release.device_cost`: k·ε for Laplace, k²·ρ zCDP for the Gaussian), and the budget check
  uses it.
"""

from __future__ import annotations

import base64
import json
import math
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldp.encoders.base_vdaf import PRIO3_TYPES
from ldp.errors import AggregatorError, PrioError
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.noise_spec import NOISE_MECHANISMS, Noise
from ldp.privacy.share_noise import ShareNoise

__all__ = ["TASK_FORMAT", "TASK_ID_SIZE", "VDAF_DRAFTS", "POPLAR1", "NOISE_MECHANISMS", "Noise", "Task", "b64",
           "task_window", "unb64", "window_of", "chunk_length"]

TASK_FORMAT = "ldp-task/1"
TASK_ID_SIZE = 32
VDAF_DRAFTS = (8, 18)
"""The VDAF drafts a task may name: draft 18 (``prio`` 0.18.1, the default; its context string binds a report to
its task) and VDAF-08 (``prio`` 0.16.8, what DAP-09 names and the deployed DAP clients speak: Janus 0.7, divviup-ts;
no context string: a report is bound to its task by the HPKE associated data alone, and a Sum's bound is a bit
length)."""
MAX_WINDOW_SECONDS = 366 * 86400
MAX_BATCH_SIZE = 10 ** 9
MAX_HPKE_CONFIG = 1 + 6 + 2 + 133
"""Bytes of an encoded ``HpkeConfig`` at most: its id, its suite's three ids, and its public key with the key's
length prefix (133 bytes for P-521's, the longest)."""
POPLAR1 = "Poplar1"  # strings (issue 89): {"type": "Poplar1", "bits": L, "max_candidates": C[, "levels", "threshold"]}
CHUNKED = ("Prio3SumVec", "Prio3Histogram")
"""The Prio3 types whose proof takes a ``chunk_length``."""


def b64(data: bytes) -> str:
    """Unpadded base64url (DAP's encoding of IDs in URLs and JSON)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64(text: str, size: int | None = None, what: str = "value") -> bytes:
    """The bytes of unpadded (or padded) base64url ``text``; ``ValueError`` naming ``what`` when it is not, or not
    ``size`` bytes."""
    if not isinstance(text, str) or not text or any(c not in _B64 for c in text.rstrip("=")):
        raise ValueError(f"{what} must be base64url text, got {text!r}")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError as exc:
        raise ValueError(f"{what} is not valid base64url: {exc}") from None
    if size is not None and len(data) != size:
        raise ValueError(f"{what} must be {size} bytes, got {len(data)}")
    return data


_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def window_of(time: int, window_seconds: int) -> int:
    """The start (seconds) of the window ``time`` falls in."""
    return time - time % window_seconds


def task_window(window_seconds: int, interval: Any) -> int:
    """The window a batch interval names: exactly one window of the task (its start a multiple of
    ``window_seconds``, its duration ``window_seconds``), each released once with its own noise;
    ``batch_invalid`` (400) for any other interval (DAP-09 §4.7.6: an interval the aggregator cannot collect)."""
    if interval.start % window_seconds or interval.duration != window_seconds:
        raise AggregatorError(f"a batch is one window of the task: an interval starting at a multiple of "
                              f"{window_seconds} s and lasting {window_seconds} s, got [{interval.start}, "
                              f"{interval.start + interval.duration})", "batch_invalid", 400)
    return interval.start


def _check_poplar1(task: Task) -> None:
    """A Poplar1 task's bounds: ``bits`` in [1, 256], ``max_candidates`` >= 2, ``levels`` in [1, bits], VDAF draft 18
    and no local randomizer (devices share the exact string)."""
    from ldp.prio.poplar1 import MAX_BITS

    p = task.vdaf_params
    if task.vdaf_draft != 18 or task.local is not None:
        raise ValueError("a Poplar1 task is of VDAF draft 18, devices sharing the exact string (no local protocol)")
    if not 1 <= p["bits"] <= MAX_BITS or p["max_candidates"] < 2:
        raise ValueError(f"Poplar1 takes bits in [1, {MAX_BITS}] and max_candidates >= 2, got {p!r}")
    if not 1 <= p.get("levels", 1) <= p["bits"]:
        raise ValueError(f"Poplar1's levels must be in [1, bits={p['bits']}], got {p['levels']}")


@dataclass(frozen=True)
class Task:
    """A two-aggregator task (module docstring). Build one with :meth:`from_dict` / :meth:`load`, or
    :meth:`for_metric` from a collection spec."""

    task_id: bytes
    app: str
    metric: str
    vdaf: str
    vdaf_params: dict[str, int]
    window_seconds: int
    min_batch_size: int
    noise: Noise
    leader_url: str
    helper_url: str
    collector_hpke_config: bytes
    time_precision: int = 1
    local: dict[str, Any] | None = None
    central: PrivacyCost | None = None
    spec_fingerprint: str = ""
    labels: tuple[str, ...] | None = None
    """The metric's value labels (a histogram's buckets), for the results."""
    reports_per_window: int | None = None
    """The most reports one device sends in a window (k; ``None``: uncapped by the spec, one assumed)."""
    vdaf_draft: int = 18
    """The VDAF draft the devices and both aggregators speak (:data:`VDAF_DRAFTS`)."""
    hpke_configs: tuple[bytes, bytes] | None = None
    """The leader's and the helper's ``HpkeConfig`` (encoded), which devices seal to; ``None``: not in the file."""

    def __post_init__(self) -> None:
        if self.vdaf_draft not in VDAF_DRAFTS or isinstance(self.vdaf_draft, bool):
            raise ValueError(f"vdaf_draft must be one of {', '.join(map(str, VDAF_DRAFTS))}, got {self.vdaf_draft!r}")
        if not isinstance(self.task_id, bytes) or len(self.task_id) != TASK_ID_SIZE:
            raise ValueError(f"task_id must be {TASK_ID_SIZE} bytes")
        if self.vdaf not in (*PRIO3_TYPES, POPLAR1):
            raise ValueError(f"vdaf must be one of {', '.join(PRIO3_TYPES)} or {POPLAR1}, got {self.vdaf!r}")
        need = {"Prio3Count": set(), "Prio3Sum": {"max_measurement"}, "Prio3SumVec": {"length", "max_measurement"},
                "Prio3Histogram": {"length"}, POPLAR1: {"bits", "max_candidates"}}[self.vdaf]
        may = need | ({"chunk_length"} if self.vdaf in CHUNKED else set()) | (
            {"levels", "threshold"} if self.vdaf == POPLAR1 else set())
        if not need <= set(self.vdaf_params) <= may or any(isinstance(v, bool) or not isinstance(v, int) or v < 1
                                                           for v in self.vdaf_params.values()):
            raise ValueError(f"{self.vdaf} takes the positive integer parameters {sorted(need) or 'none'}"
                             + (" and optionally chunk_length" if may != need else "") + f", got {self.vdaf_params!r}")
        if self.vdaf == POPLAR1:
            _check_poplar1(self)
        m = self.vdaf_params.get("max_measurement")
        if self.vdaf_draft == 8 and m is not None and m & (m + 1):
            raise ValueError(f"VDAF-08's {self.vdaf} bounds a measurement by a bit length: max_measurement must be "
                             f"2^bits - 1 (such as {(1 << m.bit_length() - 1) - 1} or {(1 << m.bit_length()) - 1}), "
                             f"got {m}; or use VDAF draft 18")
        k = self.reports_per_window
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_BATCH_SIZE):
            raise ValueError(f"reports_per_window must be an integer in [1, {MAX_BATCH_SIZE}] or absent, got {k!r}")
        for name, value, top in (("window_seconds", self.window_seconds, MAX_WINDOW_SECONDS),
                                 ("time_precision", self.time_precision, self.window_seconds),
                                 ("min_batch_size", self.min_batch_size, MAX_BATCH_SIZE)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise ValueError(f"{name} must be an integer in [1, {top}], got {value!r}")
        if self.labels is not None and (len(self.labels) != self.length or len(set(self.labels)) != self.length):
            raise ValueError(f"labels must be {self.length} distinct names, one per entry of the aggregate")
        if self.window_seconds % self.time_precision:
            raise ValueError(f"time_precision ({self.time_precision}) must divide window_seconds "
                             f"({self.window_seconds}): a rounded time stays in its window")
        configs = self.hpke_configs
        if configs is not None and not (isinstance(configs, tuple) and len(configs) == 2 and all(
                isinstance(c, bytes) and 0 < len(c) <= MAX_HPKE_CONFIG for c in configs)):
            raise ValueError(f"hpke_configs must be the leader's and the helper's encoded HpkeConfig (1 to "
                             f"{MAX_HPKE_CONFIG} bytes each)")
        for name, url in (("leader_url", self.leader_url), ("helper_url", self.helper_url)):
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"{name} must be an http(s) URL, got {url!r}")

    # -- the VDAF ---------------------------------------------------------------------------------------------
    def prio3(self) -> Any:
        """The task's :mod:`ldp.prio` object of its VDAF draft, its context string the task ID (draft 18; VDAF-08 has
        none), its ``chunk_length`` the task's (the crate's ``optimal_chunk_length`` when the task file has none)
        (``MissingExtraError`` without the binding)."""
        from ldp import prio

        if self.vdaf == POPLAR1:  # draft 18 only; the task's bounds are not the VDAF's parameters
            from ldp.prio.poplar1 import Poplar1
            return Poplar1(self.vdaf_params["bits"], ctx=self.task_id)
        ctx = self.task_id if self.vdaf_draft == 18 else b""
        return getattr(prio, self.vdaf)(ctx=ctx, draft=self.vdaf_draft, **self.vdaf_params)

    is_poplar1 = property(lambda self: self.vdaf == POPLAR1, doc="Whether the task collects strings (Poplar1).")

    @property
    def levels(self) -> int:
        """A Poplar1 task's bound on the levels a window is collected at (default ``bits``): the walk's m."""
        return int(self.vdaf_params.get("levels", self.vdaf_params.get("bits", 1)))

    def walk_calibration(self) -> Any:
        """A Poplar1 task's noise calibrated over its :attr:`levels` (``None``: none; heavy_hitters.calibrate)."""
        from ldp.prio.heavy_hitters import calibrate
        return None if self.noise.mechanism == "none" else calibrate(self.noise, self.levels)

    @property
    def length(self) -> int:
        """Entries of the aggregate."""
        return int(self.vdaf_params.get("length", 1))

    def sensitivity(self) -> tuple[float, float]:
        """(L1, L2) change of the aggregate when one device's measurement is replaced by another: Count 1;
        Sum m; Histogram 2 and √2 (one bucket down, one up); SumVec ``length·m`` and ``√length·m``."""
        m = self.vdaf_params.get("max_measurement", 1)
        if self.vdaf in ("Prio3Histogram", POPLAR1):  # Poplar1: one level's candidate counts
            return 2.0, math.sqrt(2.0)
        if self.vdaf == "Prio3SumVec":
            return float(self.length * m), math.sqrt(self.length) * m
        return float(m), float(m)

    def share_noise(self) -> ShareNoise | None:
        """Each aggregator's noise, calibrated (``None``: no noise); a Poplar1 task's is one level's (the walk's
        noise split over its :attr:`levels`: :meth:`walk_calibration`), never the whole ε per level."""
        if self.is_poplar1:
            return None if (walk := self.walk_calibration()) is None else walk.level_noise
        return self.noise.share_noise(*self.sensitivity())

    def window(self, time: int) -> int:
        """The start of the window a report's ``time`` falls in."""
        return window_of(time, self.window_seconds)

    @property
    def id_text(self) -> str:
        """The task ID, base64url (as in URLs)."""
        return b64(self.task_id)

    @property
    def key(self) -> str:
        """The task ID in hex: its folder name in an aggregator's store."""
        return self.task_id.hex()

    @property
    def trust(self) -> str:
        """``two-aggregator+local`` when devices randomize first, else ``two-aggregator``."""
        return "two-aggregator+local" if self.local is not None else "two-aggregator"

    def local_params(self) -> Any:
        """The local protocol's parameters (``None`` without local noise)."""
        if self.local is None:
            return None
        from ldp.protocols.registry import params_from_dict

        return params_from_dict(self.local)

    def local_cost(self) -> PrivacyCost | None:
        """What one report costs locally (against both aggregators together): ``None`` without local noise."""
        params = self.local_params()
        return None if params is None else params.privacy_cost

    # -- the file -----------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": TASK_FORMAT, "task_id": self.id_text, "app": self.app, "metric": self.metric,
            "vdaf": {"type": self.vdaf, "draft": self.vdaf_draft, **self.vdaf_params},
            "window_seconds": self.window_seconds,
            "time_precision": self.time_precision, "min_batch_size": self.min_batch_size,
            "noise": self.noise.to_dict(), "leader_url": self.leader_url, "helper_url": self.helper_url,
            "collector_hpke_config": b64(self.collector_hpke_config), "local": self.local,
        }
        if self.central is not None:
            out["central"] = self.central.to_dict()
        if self.spec_fingerprint:
            out["spec_fingerprint"] = self.spec_fingerprint
        if self.labels is not None:
            out["labels"] = list(self.labels)
        if self.reports_per_window is not None:
            out["reports_per_window"] = self.reports_per_window
        if self.hpke_configs is not None:
            out["hpke_configs"] = {"leader": b64(self.hpke_configs[0]), "helper": b64(self.hpke_configs[1])}
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Task:
        """A task from its document; ``ValueError`` naming the first problem."""
        if not isinstance(data, dict) or data.get("format") != TASK_FORMAT:
            raise ValueError(f"not an {TASK_FORMAT} task document")
        known = {"format", "task_id", "app", "metric", "vdaf", "window_seconds", "time_precision", "min_batch_size",
                 "noise", "leader_url", "helper_url", "collector_hpke_config", "local", "central",
                 "spec_fingerprint", "labels", "reports_per_window", "hpke_configs"}
        if unknown := sorted(set(data) - known):
            raise ValueError(f"unknown task fields: {', '.join(unknown)}")
        try:
            vdaf = dict(data["vdaf"])
            kind, draft = vdaf.pop("type"), vdaf.pop("draft", 18)  # a task file of before the drafts: 18
            noise = Noise(**data["noise"])
            central = data.get("central")
            return cls(task_id=unb64(data["task_id"], TASK_ID_SIZE, "task_id"), app=str(data["app"]),
                       metric=str(data["metric"]), vdaf=kind, vdaf_params=vdaf,
                       window_seconds=data["window_seconds"], time_precision=data.get("time_precision", 1),
                       min_batch_size=data["min_batch_size"], noise=noise, leader_url=data["leader_url"],
                       helper_url=data["helper_url"],
                       collector_hpke_config=unb64(data["collector_hpke_config"], None, "collector_hpke_config"),
                       local=data.get("local"), central=None if central is None else PrivacyCost.from_dict(central),
                       spec_fingerprint=str(data.get("spec_fingerprint", "")),
                       labels=None if data.get("labels") is None else tuple(str(x) for x in data["labels"]),
                       reports_per_window=data.get("reports_per_window"), vdaf_draft=draft,
                       hpke_configs=_hpke_configs(data.get("hpke_configs")))
        except KeyError as exc:
            raise ValueError(f"the task document lacks {exc}") from None
        except TypeError as exc:
            raise ValueError(f"a malformed task document: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Task:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def for_metric(cls, spec: Any, metric: str, *, leader_url: str, helper_url: str, collector_hpke_config: bytes,
                   min_batch_size: int, noise: Noise, local: bool | None = None, time_precision: int | None = None,
                   task_id: bytes | None = None, vdaf_draft: int = 18,
                   hpke_configs: tuple[bytes, bytes] | None = None) -> Task:
        """The task of ``metric`` in the collection ``spec``: its Prio3 type from the protocol's fit (with its chunk
        length, :func:`chunk_length`), or a ``poplar1`` metric's Poplar1 with its ``bits``, ``max_candidates`` and
        ``threshold`` (the walk's default T, :func:`ldp.aggregators.heavy_hitters.default_threshold`), its window,
        its central target, the reports a device sends per window
        (:meth:`~ldp.spec.CollectionSpec.reports_per_window`); ``local`` (default: the spec's trust model) whether
        devices randomize first; ``vdaf_draft`` the VDAF draft (:data:`VDAF_DRAFTS`); ``hpke_configs`` the leader's
        and the helper's public configs, for devices."""
        m = spec.metric(metric)
        fit = m.params.task_vdaf()
        if fit is None:
            raise PrioError(f"{m.protocol} does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): metric "
                            f"{metric!r} cannot use the two-aggregator mode", operation="task")
        vdaf, params = fit
        trust = getattr(m, "trust", "local")
        if local is None:
            local = trust == "two-aggregator+local"
        target = spec.release_for(metric).central
        if vdaf in CHUNKED:
            params["chunk_length"] = chunk_length(vdaf, params, vdaf_draft)
        if vdaf == POPLAR1:  # the spec's T: the collector's default (heavy_hitters.default_threshold)
            params["threshold"] = m.params.threshold
        return cls(task_id=task_id or secrets.token_bytes(TASK_ID_SIZE), app=spec.name, metric=metric,
                   vdaf=vdaf, vdaf_params=params, window_seconds=spec.window_seconds,
                   time_precision=time_precision or spec.window_seconds, min_batch_size=min_batch_size, noise=noise,
                   leader_url=leader_url, helper_url=helper_url, collector_hpke_config=collector_hpke_config,
                   local={"protocol": m.protocol, "params": m.params.to_dict()} if local else None,
                   central=None if target is None else PrivacyCost(target.epsilon, target.delta),
                   spec_fingerprint=spec.fingerprint,
                   labels=None if getattr(m.params, "labels", None) is None else tuple(m.params.labels),
                   reports_per_window=spec.reports_per_window(metric), vdaf_draft=vdaf_draft,
                   hpke_configs=hpke_configs)


def _hpke_configs(value: Any) -> tuple[bytes, bytes] | None:
    """The file's ``hpke_configs`` object (``{"leader": B64, "helper": B64}``) as bytes, ``None`` when absent."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"leader", "helper"}:
        raise ValueError(f"hpke_configs must be an object of the leader's and the helper's config, got {value!r}")
    return (unb64(value["leader"], None, "hpke_configs.leader"), unb64(value["helper"], None, "hpke_configs.helper"))


def chunk_length(vdaf: str, params: dict[str, int], draft: int = 18) -> int:
    """The chunk length :mod:`ldp.prio` takes for a Prio3SumVec or Prio3Histogram given none: the ``prio``
    crate's ``optimal_chunk_length`` of the encoded measurement's length (``length`` times the bits of
    ``max_measurement`` for a SumVec, ``length`` for a Histogram), read from the binding so that it is the crate's
    own (the native client's ``Prio3Type::sum_vec`` and ``::histogram`` take the same)."""
    from ldp import prio

    ctx = b"chunk length" if draft == 18 else b""
    return int(getattr(prio, vdaf)(ctx=ctx, draft=draft, **params).chunk_length)
