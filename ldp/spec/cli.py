"""``ldp spec validate FILE``: check a spec, print its summary or every error (exit status 2)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ldp.spec.collection import CollectionSpec
from ldp.spec.schema import SPEC_VERSION

__all__ = ["summary", "add_spec_arguments", "spec_command"]


def summary(spec: CollectionSpec) -> str:
    """A human-readable summary: budgets, upload policy, one row per metric, candidate locations."""
    b, up = spec.budget, spec.upload
    lines = [f"collection {spec.name!r} (spec_version {SPEC_VERSION}), fingerprint {spec.fingerprint}",
             f"window: {spec.window_seconds} s; all metrics: per window {b.per_window}, lifetime {b.lifetime}",
             f"upload: at most one batch of <= {up.max_batch} reports every {up.min_interval_seconds} s"]
    rows = [("metric", "protocol", "ε/report", "per_report", "per_window", "lifetime", "params fp", "metric fp")]
    for m in spec.metrics.values():
        rows.append((m.name, m.protocol, str(m.params.privacy_cost), str(m.budget.per_report),
                     str(m.budget.per_window or "-"), str(m.budget.lifetime or "-"), m.params_fingerprint,
                     m.fingerprint))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for m in spec.metrics.values():
        if (loc := spec.candidates(m.name)) is not None:
            missing = isinstance(loc, Path) and not loc.exists()
            lines.append(f"candidates of {m.name}: {loc}" + (" (file not found)" if missing else ""))
    return "\n".join(lines)


def add_spec_arguments(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``spec validate FILE [--json]`` to an argparse subparsers object; return the ``spec`` parser."""
    spec = subparsers.add_parser("spec", help="check a collection spec",
                                 description="Validate a collection spec; print its metrics, costs and fingerprints.")
    sub = spec.add_subparsers(dest="spec_command", required=True)
    val = sub.add_parser("validate", help="validate a spec file (exit status 2 on errors)")
    val.add_argument("file", help="the spec file (JSON)")
    val.add_argument("--json", action="store_true", help="print the normalized spec and its fingerprints as JSON")
    return spec


def spec_command(args: argparse.Namespace) -> int:
    """Run ``ldp spec validate``: print the summary and return 0, or print every error to stderr (the last
    line ``ldp spec validate: error: ...``) and return 2."""
    from ldp.cli.support import BAD_INPUT, report_error

    try:
        spec = CollectionSpec.load(args.file)
    except BAD_INPUT as exc:  # a SpecError lists every error; deeper code may raise others on odd values
        return report_error("ldp spec validate", exc)
    if getattr(args, "json", False):
        fps = {n: {"metric": m.fingerprint, "params": m.params_fingerprint} for n, m in spec.metrics.items()}
        print(json.dumps({"fingerprint": spec.fingerprint, "metrics": fps, "spec": spec.to_dict()}, indent=2,
                         ensure_ascii=False))
    else:
        print(summary(spec))
    return 0
