"""``ldp spec validate FILE``: check a spec, print its summary or every error (exit status 2)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ldp.privacy.cost import PrivacyCost
from ldp.spec.collection import CollectionSpec
from ldp.spec.otel import otel_lines
from ldp.spec.schema import MAX_TARGET_WINDOWS, SPEC_VERSION

__all__ = ["summary", "add_spec_arguments", "register", "spec_command", "central_lines",
           "central_json", "over_horizon"]


NOT_SHUFFLED = ("no local randomizer (the exact value is shared between two aggregators): no shuffled figure; its "
                "central guarantee is its task's noise (docs/two-aggregators.md)")
"""What ``--shuffled`` says of a metric kind without a local randomizer (``poplar1``)."""


def lifetime_cap(spec: CollectionSpec, name: str) -> PrivacyCost | None:
    """What a device's reports of metric ``name`` can ever cost it locally: the smaller (in ε) of the metric's and
    the collection's lifetime caps (``None``: neither is set)."""
    caps = [c for c in (spec.metric(name).budget.lifetime, spec.budget.lifetime) if c is not None]
    return min(caps, key=lambda c: (c.epsilon, c.delta), default=None)


def central_lines(spec: CollectionSpec, n: int, delta: float, windows: int | None = None) -> list[str]:
    """Per metric, the central guarantee against the analyst when a trusted shuffler mixes the reports of ``n``
    devices in a window (:mod:`ldp.privacy.shuffle`). A device's k reports of a metric in a window count as one
    report of k·ε₀ (the analyst's multiset of reports is a function of the multiset of devices' tuples). Over the
    horizon (``windows``, else the metric's central target's): the cumulative guarantee (:func:`over_horizon`) and
    whether it meets the target. Each figure is :func:`ldp.pipeline.guarantee.window_guarantee`'s, the one the
    ingest service's dashboard and ``ldp shuffle`` state (imported when called: the spec is client code)."""
    from ldp.pipeline.guarantee import window_guarantee

    lines = [f"shuffled: central guarantee per window against the analyst, {n:,} devices shuffled, δ = {delta:g}"]
    for m in spec.metrics.values():
        if not m.params.local_randomizer:
            lines.append(f"  {m.name}: {NOT_SHUFFLED}")
            continue
        eps0, k = m.params.privacy_cost.epsilon, spec.reports_per_window(m.name)
        g = window_guarantee(m.params, n * k, delta, k) if k is not None else None
        if g is None:
            lines.append(f"  {m.name}: no central bound (" + ("no per-window cap" if k is None else "δ > 0 per report")
                         + "); the local guarantee stands")
        else:
            how = f"ε={g.epsilon:.4g}" if g.amplified else "no amplification proven"
            lines.append(f"  {m.name}: local ε₀={eps0:g} per report, ≤ {k} a window; central {how}")
        h = over_horizon(spec, m.name, n, delta, windows)
        target = h["target"]
        aim = "" if target is None else f"; target {_target_text(target)}: " + (
            "met" if h["meets_target"] else "NOT met" if h["meets_target"] is False else "cannot be checked")
        if h["windows"] is None:
            if target is not None:
                lines.append(f"    target {_target_text(target)}: no horizon (give --windows W or the target's "
                             "windows)")
        elif h["over_windows"] is None:
            cap = h.get("lifetime_cap")
            bound = "no per-window bound" if cap is None else \
                f"bounded by the spec's lifetime cap ε={cap['epsilon']:g} only"
            lines.append(f"    over {h['windows']:,} windows: {bound} ({h['reason']}){aim}")
        else:
            o = h["over_windows"]
            how = "; the spec's lifetime cap" if o.get("bound") else ""
            lines.append(f"    over {h['windows']:,} windows: central ε={o['epsilon']:.4g}, δ={o['delta']:g} "
                         f"(naive W·ε {o['naive']['epsilon']:.4g}; local {o['local']['epsilon']:.4g}{how}){aim}")
    lines.append("  trust: the shuffler (the ingest service) is trusted and is not the analyst; see docs/shuffling.md")
    return lines


def _target_text(t: dict[str, Any]) -> str:
    return f"ε={t['epsilon']:g}, δ={t['delta']:g}" + (f" over {t['windows']:,} windows" if t.get("windows") else "")


def over_horizon(spec: CollectionSpec, name: str, n: int, delta: float, windows: int | None) -> dict[str, Any]:
    """Metric ``name``'s cumulative central guarantee over ``windows`` windows (else its central target's
    ``windows``) of ``n`` devices shuffled, one segment a window (:mod:`ldp.privacy.target`; one window at its own
    figure, :func:`ldp.pipeline.guarantee.over_windows`), at the target's δ
    when it has one (else ``delta``): ``windows``, ``target``, ``over_windows`` (or ``None`` and the ``reason``)
    and ``meets_target`` (``None`` without a target or a bound)."""
    from ldp.pipeline.guarantee import over_windows
    from ldp.privacy.target import meets, metric_loss, window_releases

    m = spec.metric(name)
    target = spec.release_for(name).central
    horizon = windows if windows is not None else target.windows if target is not None else None
    out: dict[str, Any] = {"windows": horizon, "target": None if target is None else target.to_dict(),
                              "over_windows": None, "reason": None, "meets_target": None}
    if horizon is None:
        return out
    loss = metric_loss(m.params, spec.reports_per_window(name), lifetime_cap(spec, name))
    at = target.delta if target is not None else delta
    if loss.per_report is None or loss.reports is None:  # a per-report figure implies a per-window cap
        out["reason"] = loss.reason
        if loss.lifetime is not None and loss.lifetime.delta <= at:  # the lifetime cap bounds it all the same
            out["lifetime_cap"] = loss.lifetime.to_dict()
            if target is not None:
                out["meets_target"] = meets(loss.lifetime.epsilon, loss.lifetime.delta, target)
        return out
    over = over_windows(window_releases(loss, n * loss.reports) * horizon, at)  # n devices: k·n reports at most
    out["over_windows"] = over.to_dict()
    eps, _ = loss.bound(over.epsilon, over.delta)
    if eps != over.epsilon:
        out["over_windows"]["epsilon"] = eps
        out["over_windows"]["bound"] = "the spec's lifetime cap"
    if target is not None:
        out["meets_target"] = meets(eps if eps is not None else over.epsilon, over.delta, target)
    return out


def summary(spec: CollectionSpec) -> str:
    """A human-readable summary: budgets, upload policy, one row per metric, candidate locations."""
    b, up = spec.budget, spec.upload
    lines = [f"collection {spec.name!r} (spec_version {SPEC_VERSION}), fingerprint {spec.fingerprint}",
             f"window: {spec.window_seconds} s; all metrics: per window {b.per_window}, lifetime {b.lifetime}",
             f"upload: at most one batch of <= {up.max_batch} reports every {up.min_interval_seconds} s"]
    rows = [("metric", "protocol", "ε/report", "per_report", "per_window", "lifetime", "params fp", "metric fp")]
    for m in spec.metrics.values():
        local = str(m.params.privacy_cost) if m.params.local_randomizer else "none (exact)"
        rows.append((m.name, m.protocol, local, str(m.budget.per_report),
                     str(m.budget.per_window or "-"), str(m.budget.lifetime or "-"), m.params_fingerprint,
                     m.fingerprint))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for m in spec.metrics.values():
        if not m.params.local_randomizer and (fit := m.params.task_vdaf()) is not None:
            lines.append(f"{m.name}: no local randomizer: each device shares its exact value between two aggregators "
                         f"({fit[0]}, {m.params.to_dict()}), charged per_report {m.budget.per_report} a report; its "
                         f"task: ldp collect task" + (" (strings: ldp collect --heavy-hitters)" if
                                                     fit[0] == "Poplar1" else ""))
        if (loc := spec.candidates(m.name)) is not None:
            missing = isinstance(loc, Path) and not loc.exists()
            lines.append(f"candidates of {m.name}: {loc}" + (" (file not found)" if missing else ""))
    return "\n".join(lines + otel_lines(list(spec.metrics.values()), spec.report_charge))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``spec`` (``spec validate``) to the ``ldp`` subcommands, run by :func:`spec_command`."""
    add_spec_arguments(subparsers).set_defaults(handler=spec_command)


def add_spec_arguments(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``spec validate FILE [--json]`` to an argparse subparsers object; return the ``spec`` parser."""
    spec = subparsers.add_parser("spec", help="check a collection spec",
                                 description="Validate a collection spec; print its metrics, costs and fingerprints.")
    sub = spec.add_subparsers(dest="spec_command", required=True)
    val = sub.add_parser("validate", help="validate a spec file (exit status 2 on errors)")
    val.set_defaults(command_prog="ldp spec validate")
    val.add_argument("file", help="the spec file (JSON)")
    val.add_argument("--json", action="store_true", help="print the normalized spec and its fingerprints as JSON")
    val.add_argument("--shuffled", type=int, metavar="N",
                     help="also give each metric's central guarantee per window when a trusted shuffler mixes the "
                          "reports of N devices (docs/shuffling.md)")
    val.add_argument("--delta", type=float, default=1e-8, help="δ of the central guarantee (default 1e-8)")
    val.add_argument("--windows", type=int, metavar="W",
                     help="with --shuffled: each metric's cumulative central guarantee over W windows (default: the "
                          "windows of its central target, release.central), and whether it meets the target")
    return spec


def spec_command(args: argparse.Namespace) -> int:
    """Run ``ldp spec validate``: print the summary and return 0, or print every error to stderr (the last
    line ``ldp spec validate: error: ...``) and return 2."""
    from ldp.cli.support import BAD_INPUT, report_error

    try:
        spec = CollectionSpec.load(args.file)
    except BAD_INPUT as exc:  # a SpecError lists every error; deeper code may raise others on odd values
        return report_error("ldp spec validate", exc)
    shuffled = getattr(args, "shuffled", None)
    if shuffled is not None and (shuffled < 1 or not 0 < args.delta < 1):
        return report_error("ldp spec validate", ValueError(f"--shuffled must be >= 1 and --delta in (0, 1), got "
                                                            f"{shuffled} and {args.delta}"))
    windows = getattr(args, "windows", None)
    if windows is not None and (shuffled is None or not 1 <= windows <= MAX_TARGET_WINDOWS):
        return report_error("ldp spec validate", ValueError(f"--windows must be in [1, {MAX_TARGET_WINDOWS:,}] and "
                                                            f"comes with --shuffled, got {windows}"))
    if getattr(args, "json", False):
        fps = {n: {"metric": m.fingerprint, "params": m.params_fingerprint} for n, m in spec.metrics.items()}
        doc = {"fingerprint": spec.fingerprint, "metrics": fps, "spec": spec.to_dict()}
        if shuffled is not None:
            doc["central"] = central_json(spec, shuffled, args.delta, windows)
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        print(summary(spec) + ("" if shuffled is None else "\n" + "\n".join(central_lines(spec, shuffled,
                                                                                        args.delta, windows))))
    return 0


def central_json(spec: CollectionSpec, n: int, delta: float, windows: int | None = None) -> dict[str, object]:
    """:func:`central_lines` as JSON: per metric, ``reports_per_window``, the guarantee (or ``None``) and the
    fields of :func:`over_horizon`."""
    from ldp.pipeline.guarantee import window_guarantee

    out: dict[str, object] = {}
    for m in spec.metrics.values():
        k = spec.reports_per_window(m.name)
        if not m.params.local_randomizer:
            out[m.name] = {"reports_per_window": k, "guarantee": None, "reason": NOT_SHUFFLED}
            continue
        found = window_guarantee(m.params, n * k, delta, k) if k is not None else None
        g = None if found is None else found.to_dict()
        out[m.name] = {"reports_per_window": k, "guarantee": g, **over_horizon(spec, m.name, n, delta, windows)}
    return out
