"""The collection spec: :class:`CollectionSpec`, loaded from one versioned JSON document."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ldp.privacy.cost import PrivacyCost
from ldp.reports import ReportError
from ldp.spec.envelope import Envelope, EnvelopeError
from ldp.spec.schema import SPEC_VERSION, Budget, MetricSpec, Release, SpecError, UploadPolicy, digest, parse_document

__all__ = ["CollectionSpec"]


@dataclass(frozen=True)
class CollectionSpec:
    """A validated collection spec (build it with :meth:`load`, :meth:`loads` or :meth:`from_dict`).

    ``metrics`` maps each metric's name to its :class:`~ldp.spec.MetricSpec`; ``base_dir`` is the
    folder candidate paths are relative to (the spec file's), not part of the spec itself. ``release`` holds the
    collection's release thresholds (each metric's own replace them, :meth:`release_for`); they are the server's
    policy, so no fingerprint covers them."""

    name: str
    budget: Budget
    metrics: Mapping[str, MetricSpec]
    window_seconds: int = 86400
    upload: UploadPolicy = field(default_factory=UploadPolicy)
    description: str = ""
    release: Release | None = None
    base_dir: Path | None = field(default=None, compare=False)

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    @classmethod
    def from_dict(cls, data: Any, *, base_dir: str | os.PathLike[str] | None = None,
                  source: str = "spec") -> CollectionSpec:
        """Validate and normalize a decoded document; :class:`SpecError` lists every problem."""
        return cls(**parse_document(data, source), base_dir=Path(base_dir) if base_dir is not None else None)

    @classmethod
    def loads(cls, text: str | bytes, *, base_dir: str | os.PathLike[str] | None = None,
              source: str = "spec") -> CollectionSpec:
        """Parse JSON text (a key repeated in one object is an error) and validate it."""
        def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for k, v in pairs:
                if k in out:
                    raise SpecError([f"$: key {k!r} appears twice in one object"], source)
                out[k] = v
            return out

        try:
            data = json.loads(text, object_pairs_hook=no_duplicates)
        except SpecError:
            raise
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise SpecError([f"$: not valid JSON: {exc}"], source) from None
        return cls.from_dict(data, base_dir=base_dir, source=source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CollectionSpec:
        """Read and validate a spec file; candidate paths are relative to its folder."""
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise SpecError([f"$: cannot read the file: {exc.strerror}"], os.fspath(path)) from None
        return cls.loads(raw, base_dir=Path(path).resolve().parent, source=os.fspath(path))

    def to_dict(self, *, release: bool = True) -> dict[str, Any]:
        """The normalized document: defaults filled in, numbers as floats, budgets as ε or {epsilon, delta}.
        ``from_dict(to_dict())`` gives an equal spec with the same fingerprint. ``release=False``: without the
        release thresholds (the collection's and the metrics'), the document the fingerprint covers."""
        out: dict[str, Any] = {"spec_version": SPEC_VERSION, "name": self.name, "window_seconds": self.window_seconds,
                               "budget": self.budget.to_dict(), "upload": self.upload.to_dict(),
                               "metrics": {n: m.to_dict(release=release) for n, m in sorted(self.metrics.items())}}
        if self.description:
            out["description"] = self.description
        if release and self.release is not None:
            out["release"] = self.release.to_dict()
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON (a valid spec file)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @cached_property
    def fingerprint(self) -> str:
        """16 hex digits of SHA-256 over :meth:`to_dict` as canonical JSON, without the release thresholds:
        names this exact spec. Every envelope carries it; key order, spacing and ``1`` vs ``1.0`` do not change
        it, and neither does ``release`` (a server-side policy: raising a threshold orphans no report)."""
        return digest(self.to_dict(release=False))

    def release_for(self, name: str) -> Release:
        """The release thresholds of metric ``name``: its own when it has a ``release``, else the collection's
        (a metric's ``release`` replaces the collection's whole: keys it leaves out are not inherited, but for the
        central target: a metric's ``release`` without ``central`` keeps the collection's, so that no threshold
        set on one metric drops the privacy target by accident)."""
        own = self.metric(name).release
        top = self.release or Release()
        if own is None:
            return top
        return own if own.central is not None or top.central is None else replace(own, central=top.central)

    def metric(self, name: str) -> MetricSpec:
        """The metric called ``name`` (``KeyError`` naming the known ones otherwise)."""
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(f"no metric {name!r} in spec {self.name!r} (metrics: {', '.join(self.metrics)})") from None

    def envelope_metric(self, name: str) -> MetricSpec | None:
        """The metric called ``name`` when upload envelopes may carry its reports: ``None`` when the spec has no such
        metric, or when it is of a kind without a local randomizer (``poplar1``), whose reports are sealed DAP
        reports for its task's leader, never envelopes (the server's readers reject an envelope naming it)."""
        m = self.metrics.get(name)
        return m if m is not None and m.params.local_randomizer else None

    def params(self, name: str) -> Any:
        """The protocol parameters (a ``ProtocolParams``) of metric ``name``."""
        return self.metric(name).params

    def report_charge(self, name: str) -> PrivacyCost:
        """What the device's ledger is charged for one report of metric ``name`` of a one-report protocol: the
        protocol's local cost when the device randomizes (``local``, ``shuffle``, ``two-aggregator+local``); for a
        ``two-aggregator`` metric, whose exact value is secret-shared, the spec's ``budget.per_report``."""
        m = self.metric(name)
        return m.budget.per_report or m.params.privacy_cost if m.trust == "two-aggregator" else m.params.privacy_cost

    def reports_per_window(self, name: str) -> int | None:
        """The most reports of metric ``name`` one device can send in a window: its per-window cap (the metric's,
        else the collection's) over its per-report cost (``None``: no per-window cap)."""
        m = self.metric(name)
        cap = m.budget.per_window or self.budget.per_window
        per = m.budget.per_report or m.params.privacy_cost
        if cap is None or per.epsilon <= 0:
            return None
        return max(1, int(cap.epsilon / per.epsilon + 1e-9))

    def device_window_cap(self, name: str) -> PrivacyCost | None:
        """The per-window cap of metric ``name`` on the device's ledger: the spec's for a metric of the local or
        shuffle model; for a two-aggregator metric, k reports' :meth:`report_charge`, k the task's
        ``reports_per_window`` (:meth:`reports_per_window`, one when the spec caps none), so that a device sends at
        most the k reports a window the central guarantee counts (``two-aggregator+local`` charges its local ε,
        less than ``per_report``: the spec's cap alone would let more through)."""
        m = self.metric(name)
        if not m.trust.startswith("two-aggregator"):
            return m.budget.per_window
        charge = self.report_charge(name)
        k = self.reports_per_window(name) or 1
        return PrivacyCost(charge.epsilon * k, charge.delta * k)

    def candidates(self, name: str) -> Path | str | None:
        """Where metric ``name``'s candidate dictionary is: a path resolved against ``base_dir`` (or
        the working directory), a URL string as written, or ``None``."""
        loc = self.metric(name).candidates
        if loc is None or "://" in loc:
            return loc
        return (self.base_dir or Path.cwd()) / loc

    def route(self, envelope: Envelope) -> MetricSpec:
        """The metric an envelope belongs to, after checking that it was made under this spec, names
        one of its metrics, and carries a report of that metric's parameters, in range. Raises
        :class:`~ldp.spec.EnvelopeError` (``unknown_spec``, ``unknown_metric``, or the report's
        reason: ``wrong_protocol``, ``wrong_fingerprint``, ``payload_mismatch``, ``out_of_range``,
        ``bad_length``)."""
        if envelope.spec != self.fingerprint:
            raise EnvelopeError("unknown_spec", f"made under spec {envelope.spec}, not {self.name!r} "
                                                f"{self.fingerprint}")
        m = self.metrics.get(envelope.metric)
        if m is None:
            raise EnvelopeError("unknown_metric", f"no metric {envelope.metric!r} in spec {self.name!r}")
        try:
            m.params.validate(envelope.report)
        except ReportError as err:
            raise EnvelopeError(err.reason, f"report: {err.detail}") from None
        return m
