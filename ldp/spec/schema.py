"""The spec document's parts and their validation: every error names its JSON path.

:func:`parse_document` checks a decoded JSON document against the format of ``docs/client.md``
(unknown keys refused, names, numbers, budgets consistent with each other and with each
protocol's cost) and returns the normalized parts, or raises :class:`SpecError` listing *every*
problem as ``"json.path: message"``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ldp.errors import SpecError
from ldp.privacy.accountant import PrivacyCost
from ldp.privacy.ledger import MAX_CLOCK
from ldp.reports import canonical_json
from ldp.spec.envelope import METRIC_RE
from ldp.spec.jsonpath import finite, join, kind
from ldp.spec.kinds import metric_kinds
from ldp.spec.otel import OtelSource, parse_otel

if TYPE_CHECKING:
    from ldp.encoders.base import ProtocolParams

__all__ = ["SPEC_VERSION", "NAME_RE", "SpecError", "Budget", "UploadPolicy", "CentralTarget", "Release", "MetricSpec",
           "parse_document", "digest", "MAX_TARGET_WINDOWS", "TRUST_MODELS"]

SPEC_VERSION = 1
MAX_SECONDS = int(MAX_CLOCK)
"""Longest window or upload interval: the clock's whole range (a ledger's clock stops at year 9999)."""
_SECONDS_WHY = "the clock's range ends in year 9999"
MAX_MIN_REPORTS = 1 << 62
"""Largest ``release.min_reports`` (far beyond any collection; keeps the number an ordinary integer)."""
MAX_TARGET_WINDOWS = 1_000_000
"""Longest planned horizon of ``release.central.windows`` (2,740 years of daily windows)."""
MAX_BATCH = 1 << 20
"""Most envelopes in one upload batch."""
NAME_RE = re.compile(r"[a-z][a-z0-9_.-]{0,63}\Z")
"""Collection names: a lowercase letter, then up to 63 lowercase letters, digits, ``_``, ``.`` or ``-``."""


def digest(obj: Any) -> str:
    """First 16 hex digits of SHA-256 over ``canonical_json(obj)``."""
    return hashlib.sha256(canonical_json(obj).encode("ascii")).hexdigest()[:16]


@dataclass(frozen=True)
class Budget:
    """Caps in (ε, δ); ``None`` = no cap at this level (``per_report`` is for metrics only)."""

    per_window: PrivacyCost | None = None
    lifetime: PrivacyCost | None = None
    per_report: PrivacyCost | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: _cost_json(v) for k in ("per_report", "per_window", "lifetime") if (v := getattr(self, k))}


@dataclass(frozen=True)
class UploadPolicy:
    """At most one upload batch every ``min_interval_seconds``, of at most ``max_batch`` envelopes."""

    min_interval_seconds: int = 86400
    max_batch: int = 1000

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CentralTarget:
    """The central (ε, δ) a device's reports of a metric may cost against the analyst, composed over every window
    the ingest service releases (:mod:`ldp.ingest.central`); ``windows``: the planned horizon in windows (``None``:
    not stated), for which ``ldp spec validate --shuffled N`` says whether the target is met."""

    epsilon: float
    delta: float
    windows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"epsilon": self.epsilon, "delta": self.delta}
        return out if self.windows is None else {**out, "windows": self.windows}

    def __str__(self) -> str:
        return f"ε={self.epsilon:g}, δ={self.delta:g}" + ("" if self.windows is None else
                                                          f" over {self.windows:,} windows")


@dataclass(frozen=True)
class Release:
    """The server's release thresholds: estimates of fewer than ``min_reports`` reports are withheld, and so is
    each item whose estimate is below ``min_z`` standard errors (``None``: no such threshold), and every window
    whose release would take the cumulative central guarantee beyond ``central``. A server-side policy: not part
    of any fingerprint, so changing it orphans no report."""

    min_reports: int | None = None
    min_z: float | None = None
    central: CentralTarget | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in (("min_reports", self.min_reports), ("min_z", self.min_z))
                               if v is not None}
        return out if self.central is None else {**out, "central": self.central.to_dict()}


TRUST_MODELS = ("local", "shuffle", "two-aggregator", "two-aggregator+local")
"""Whom a metric's guarantee trusts (docs/trust-models.md): ``local`` (no one: each report is randomized on the
device), ``shuffle`` (the shuffler, for a central ε by amplification), ``two-aggregator`` (two non-colluding
aggregators: the exact value secret-shared with Prio3, noised centrally), ``two-aggregator+local`` (the same, with
the protocol's randomization on the device first: a local ε even if both aggregators collude)."""


@dataclass(frozen=True)
class MetricSpec:
    """One metric: its protocol parameters, budget, candidate dictionary location, description and (when it
    overrides the collection's) release thresholds."""

    name: str
    params: ProtocolParams
    budget: Budget
    candidates: str | None = None
    description: str = ""
    release: Release | None = None
    trust: str = "local"
    otel: OtelSource | None = None
    """The OpenTelemetry instrument that feeds the metric (:mod:`ldp.spec.otel`), if any."""

    @property
    def protocol(self) -> str:
        return self.params.protocol

    @property
    def params_fingerprint(self) -> str:
        """The fingerprint every report of this metric carries (``report.params``)."""
        return self.params.fingerprint

    @cached_property
    def fingerprint(self) -> str:
        """16 hex digits of SHA-256 over this metric's canonical JSON (its name included, ``release`` not)."""
        return digest({"metric": self.name, **self.to_dict(release=False)})

    def to_dict(self, *, release: bool = True) -> dict[str, Any]:
        """The metric's document (``release=False``: without its release thresholds, as fingerprinted)."""
        out: dict[str, Any] = {"protocol": self.protocol, "params": self.params.to_dict(),
                               "budget": self.budget.to_dict()}
        if self.candidates is not None:
            out["candidates"] = self.candidates
        if self.description:
            out["description"] = self.description
        if self.trust != "local":  # the default is left out: specs written before the field keep their fingerprints
            out["trust"] = self.trust
        if self.otel is not None:
            out["otel"] = self.otel.to_dict()
        if release and self.release is not None:
            out["release"] = self.release.to_dict()
        return out


def _cost_json(c: PrivacyCost) -> Any:
    return c.epsilon if c.delta == 0 else {"epsilon": c.epsilon, "delta": c.delta}


class _Checker:
    """Collects ``path: message`` errors while normalizing a spec document."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, path: str, msg: str) -> None:
        self.errors.append(f"{path}: {msg}")

    def obj(self, value: Any, path: str, required: set[str], optional: set[str]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(path, f"must be an object, got {_kind(value)}")
            return None
        for key in sorted(set(value) - required - optional):
            self.fail(_join(path, key), f"unknown key (expected one of {', '.join(sorted(required | optional))})")
        for key in sorted(required - set(value)):
            self.fail(_join(path, key), "required")
        return value

    def int_(self, value: Any, path: str, low: int, high: int, why: str) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, got {_kind(value)}")
        elif value < low:
            self.fail(path, f"must be >= {low}, got {value}")
        elif value > high:
            self.fail(path, f"must be <= {high:,} ({why}), got {value:,}" if value < 10**30 else
                      f"must be <= {high:,} ({why}), got a {len(str(value))}-digit number")
        else:
            return value
        return None

    def cost(self, value: Any, path: str) -> PrivacyCost | None:
        """A budget: ε as a number, or ``{"epsilon": ε, "delta": δ}``; ε > 0 and 0 <= δ < 1."""
        if isinstance(value, dict):
            if self.obj(value, path, {"epsilon"}, {"delta"}) is None or "epsilon" not in value:
                return None
            parts = [(value["epsilon"], _join(path, "epsilon")), (value.get("delta", 0.0), _join(path, "delta"))]
            wanted = "a finite number"
        else:
            parts = [(value, path), (0.0, path)]
            wanted = 'a finite number (ε) or {"epsilon": ε, "delta": δ}'
        for v, p in parts:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
                self.fail(p, f"must be {wanted}, got {_kind(v)}")
                return None
        (eps, eps_path), (delta, delta_path) = parts
        if not eps > 0:
            self.fail(eps_path, f"must be > 0, got {eps}")
        elif not 0 <= delta < 1:
            self.fail(delta_path, f"must be in [0, 1), got {delta}")
        else:
            return PrivacyCost(float(eps), float(delta))
        return None

    def release(self, value: Any, path: str) -> Release | None:
        """Release thresholds: ``min_reports`` an integer >= 0, ``min_z`` a finite number >= 0, ``central`` a
        target (all optional)."""
        if self.obj(value, path, set(), {"min_reports", "min_z", "central"}) is None:
            return None
        before = len(self.errors)
        n = z = None
        if "min_reports" in value:
            n = self.int_(value["min_reports"], _join(path, "min_reports"), 0, MAX_MIN_REPORTS, "a count of reports")
        if "min_z" in value:
            z, zpath = value["min_z"], _join(path, "min_z")
            if isinstance(z, bool) or not isinstance(z, (int, float)) or not _finite(z):
                self.fail(zpath, f"must be a finite number >= 0, got {_kind(z)}")
            elif z < 0:
                self.fail(zpath, f"must be >= 0, got {z}")
            z = float(z) if len(self.errors) == before else None
        central = self.central(value["central"], _join(path, "central")) if "central" in value else None
        return Release(n, z, central) if len(self.errors) == before else None

    def central(self, value: Any, path: str) -> CentralTarget | None:
        """A central target: ``epsilon`` a finite number > 0, ``delta`` in (0, 1), ``windows`` an integer in
        [1, MAX_TARGET_WINDOWS] (optional)."""
        if self.obj(value, path, {"epsilon", "delta"}, {"windows"}) is None:
            return None
        before = len(self.errors)
        got = {}
        for key, low in (("epsilon", "> 0"), ("delta", "in (0, 1)")):
            if key not in value:
                continue
            v, vpath = value[key], _join(path, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
                self.fail(vpath, f"must be a finite number {low}, got {_kind(v)}")
            elif not (v > 0 if key == "epsilon" else 0 < v < 1):
                self.fail(vpath, f"must be {low}, got {v}")
            else:
                got[key] = float(v)
        windows = None
        if "windows" in value:
            windows = self.int_(value["windows"], _join(path, "windows"), 1, MAX_TARGET_WINDOWS,
                                "a horizon the accountant composes")
        if len(self.errors) > before or len(got) < 2:
            return None
        return CentralTarget(got["epsilon"], got["delta"], windows)

    def le(self, small: PrivacyCost | None, big: PrivacyCost | None, path: str, what: str) -> None:
        if small is not None and big is not None and not small.fits_within(big):
            self.fail(path, f"{small} exceeds {what} ({big})")


_kind = kind
_finite = finite
_join = join


def _params(ck: _Checker, protocol: Any, raw: Any, path: str) -> ProtocolParams | None:
    """Validated protocol parameters (errors naming ``...params.<field>`` where the rule names one)."""
    known = metric_kinds()
    if not isinstance(protocol, str) or protocol not in known:
        ck.fail(_join(path, "protocol"), f"unknown protocol {protocol!r} (known: {', '.join(sorted(known))})")
        return None
    params_type = known[protocol]
    fields = {f.name: f for f in dataclasses.fields(params_type)}
    required = {n for n, f in fields.items() if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    ppath = _join(path, "params")
    if ck.obj(raw, ppath, required, set(fields) - required) is None or not required <= set(raw) <= set(fields):
        return None
    try:
        params = params_type.from_dict(raw)
        if params.local_randomizer:
            _ = params.privacy_cost  # RAPPOR without a finite ε₁ fails here
        return params
    except (TypeError, ValueError) as exc:
        msg = str(exc)  # "epsilon must be > 0" -> "params.epsilon: must be > 0"
        name = next((n for n in fields if msg.startswith(n + " ")), None)
        if name is None:
            ck.fail(ppath, msg)
        else:
            ck.fail(_join(ppath, name), msg if msg[len(name) + 1] == "(" else msg[len(name) + 1:])
        return None


def _metric(ck: _Checker, name: str, raw: Any, total: Budget) -> MetricSpec | None:
    path = _join("metrics", name)
    if not METRIC_RE.match(name):
        ck.fail(path, "metric names match [a-z][a-z0-9_]{0,31}")
    optional = {"candidates", "description", "release", "trust", "otel"}
    if ck.obj(raw, path, {"protocol", "params", "budget"}, optional) is None:
        return None
    params = _params(ck, raw["protocol"], raw["params"], path) if {"protocol", "params"} <= raw.keys() else None
    bpath = _join(path, "budget")
    budget = None
    if "budget" in raw and ck.obj(raw["budget"], bpath, {"per_report"}, {"per_window", "lifetime"}) is not None:
        costs = {k: ck.cost(v, _join(bpath, k)) for k, v in raw["budget"].items()
                 if k in ("per_report", "per_window", "lifetime")}
        budget = Budget(costs.get("per_window"), costs.get("lifetime"), costs.get("per_report"))
        ck.le(budget.per_report, budget.per_window, _join(bpath, "per_report"), "the metric's per_window")
        ck.le(budget.per_window, budget.lifetime, _join(bpath, "per_window"), "the metric's lifetime")
        ck.le(budget.per_report, budget.lifetime, _join(bpath, "per_report"), "the metric's lifetime")
        ck.le(budget.per_report, total.per_window, _join(bpath, "per_report"), "budget.per_window of the collection")
        ck.le(budget.per_report, total.lifetime, _join(bpath, "per_report"), "budget.lifetime of the collection")
        if params is not None and params.local_randomizer and budget.per_report is not None and \
                not params.privacy_cost.fits_within(
                budget.per_report):
            ck.fail(_join(bpath, "per_report"), f"{budget.per_report} is less than what one {params.protocol} report "
                                                f"costs with these params ({params.privacy_cost})")
    candidates = raw.get("candidates")
    cpath = _join(path, "candidates")
    if candidates is not None:
        if not isinstance(candidates, str) or not candidates.strip():
            ck.fail(cpath, f"must be a path relative to the spec file, or a URL; got {_kind(candidates)}")
        elif "://" not in candidates and (os.path.isabs(candidates) or candidates.startswith("~")):
            ck.fail(cpath, f"must be relative to the spec file (or a URL), got {candidates!r}")
        elif params is not None and params.domain_size is not None:
            ck.fail(cpath, f"{params.protocol} has a fixed domain (domain_size={params.domain_size}); "
                           "candidates are for open-domain protocols")
    description = raw.get("description", "")
    if not isinstance(description, str):
        ck.fail(_join(path, "description"), f"must be a string, got {_kind(description)}")
    release = ck.release(raw["release"], _join(path, "release")) if "release" in raw else None
    trust = raw.get("trust", "local")
    if trust not in TRUST_MODELS:
        ck.fail(_join(path, "trust"), f"must be one of {', '.join(TRUST_MODELS)}, got {trust!r}")
    elif params is not None and params.trust_models is not None and trust not in params.trust_models:
        ck.fail(_join(path, "trust"), f"must be {' or '.join(params.trust_models)} for {params.protocol} (its devices "
                                      f"share the exact value: no local randomizer), got {trust!r}")
    elif trust.startswith("two-aggregator") and params is not None and params.trust_models is None and \
            params.prio3_fit() is None:
        ck.fail(_join(path, "trust"), f"{params.protocol} does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): "
                                      "no two-aggregator mode for it")
    otel = parse_otel(ck, raw["otel"], _join(path, "otel"), params) if "otel" in raw else None
    if params is None or budget is None or budget.per_report is None:
        return None
    return MetricSpec(name, params, budget, candidates, description if isinstance(description, str) else "", release,
                      trust if trust in TRUST_MODELS else "local", otel)


def parse_document(data: Any, source: str = "spec") -> dict[str, Any]:
    """The normalized parts of a spec document (the fields of :class:`~ldp.spec.CollectionSpec`),
    or :class:`SpecError` listing every problem."""
    ck = _Checker()
    required = {"spec_version", "name", "budget", "metrics"}
    optional = {"window_seconds", "upload", "description", "release"}
    if ck.obj(data, "$", required, optional) is None:
        raise SpecError(ck.errors, source)
    if "spec_version" in data and (type(data["spec_version"]) is not int or data["spec_version"] != SPEC_VERSION):
        ck.fail("spec_version", f"must be {SPEC_VERSION}, got {data['spec_version']!r}")
    name = data.get("name")
    if "name" in data and not (isinstance(name, str) and NAME_RE.match(name)):
        ck.fail("name", f"collection names match [a-z][a-z0-9_.-]{{0,63}}, got {name!r}")
    window = ck.int_(data.get("window_seconds", 86400), "window_seconds", 1, MAX_SECONDS, _SECONDS_WHY)
    total = Budget()
    if "budget" in data and ck.obj(data["budget"], "budget", {"per_window", "lifetime"}, set()) is not None:
        total = Budget(*(ck.cost(data["budget"][k], f"budget.{k}") if k in data["budget"] else None
                         for k in ("per_window", "lifetime")))
        ck.le(total.per_window, total.lifetime, "budget.per_window", "budget.lifetime")
    upload = UploadPolicy()
    raw_up = data.get("upload", {})
    if ck.obj(raw_up, "upload", set(), {"min_interval_seconds", "max_batch"}) is not None:
        interval = ck.int_(raw_up.get("min_interval_seconds", 86400), "upload.min_interval_seconds", 0, MAX_SECONDS,
                           _SECONDS_WHY)
        batch = ck.int_(raw_up.get("max_batch", 1000), "upload.max_batch", 1, MAX_BATCH,
                        "a client holds one batch in memory")
        upload = UploadPolicy(86400 if interval is None else interval, batch or 1000)
    description = data.get("description", "")
    if not isinstance(description, str):
        ck.fail("description", f"must be a string, got {_kind(description)}")
    release = ck.release(data["release"], "release") if "release" in data else None
    metrics: dict[str, MetricSpec] = {}
    raw_metrics = data.get("metrics")
    names = set(raw_metrics) if isinstance(raw_metrics, dict) else set()
    if "metrics" in data and ck.obj(raw_metrics, "metrics", set(), names) is not None:
        if not raw_metrics:
            ck.fail("metrics", "a collection needs at least one metric")
        for mname in sorted(raw_metrics):
            if (m := _metric(ck, mname, raw_metrics[mname], total)) is not None:
                metrics[mname] = m
    if ck.errors:
        raise SpecError(ck.errors, source)
    return {"name": name, "budget": total, "metrics": MappingProxyType(metrics), "window_seconds": window,
            "upload": upload, "description": description, "release": release}
