"""``ldp shuffle``: one run of the shuffler stage (:mod:`ldp.shuffler.stage`) over the store the ingest service replicas
write their chunks to — a folder, or S3-compatible object storage."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["register", "shuffle_command"]


def register(subparsers: Any) -> None:
    """Add ``shuffle`` to the ``ldp`` subcommands, run by :func:`shuffle_command`."""
    from ldp.cli.support import number, store_option

    s: argparse.ArgumentParser = subparsers.add_parser(
        "shuffle", help="mix the replicas' chunks into anonymized segments, one per arrival window",
        description="One run of the shuffler stage for an app: read the chunks every ingest replica wrote under "
                    "apps/<app>/incoming/ of the store, keep each batch id once (across replicas and earlier runs), "
                    "strip what links a report to its batch, permute each window's reports from the OS CSPRNG, "
                    "write them as apps/<app>/segments/closed/<window>-<random>.jsonl, record the anonymity set, then "
                    "delete (or, --keep-originals, move) the chunks. A run killed midway is finished by the next.")
    s.add_argument("--store", required=True, metavar="URL",
                   help="the store: a folder, s3://bucket/prefix or az://container/prefix (credentials from the "
                        "environment)")
    s.add_argument("--store-option", action="append", default=[], metavar="KEY=VALUE", type=store_option,
                   help="an option of an object store (repeatable), e.g. endpoint_url=http://127.0.0.1:9000 (S3), "
                        "account_name=NAME (Azure)")
    s.add_argument("--app", required=True, metavar="NAME", help="the app whose chunks to mix")
    s.add_argument("--grace", type=number(float, 0, 7 * 86400), default=300.0, metavar="SECONDS",
                   help="how long past a window's end its chunks may still arrive before it is mixed (default 300)")
    s.add_argument("--dedup-days", type=number(float, 0, 3650, low_open=True), default=7.0, metavar="DAYS",
                   help="how long a mixed batch id is remembered against retries (default 7)")
    s.add_argument("--spec", action="append", default=[], metavar="FILE",
                   help="the app's collection spec (repeatable): each metric's threshold (its release.min_reports, "
                        "counted in devices: reports over the most one device may send in a window), the exact check "
                        "of its lines' canonical bytes, and the central ε each metric gets from the anonymity set of "
                        "each window mixed")
    s.add_argument("--min-reports", type=number(int, 0, 1 << 62), default=None, metavar="N",
                   help="the least threshold of every metric, in devices (a spec's own min_reports is kept when "
                        "larger): a metric from fewer devices in a window is withheld there on its own, written to "
                        "no segment; a window in which every metric is below its threshold is held for late chunks, "
                        "then withheld whole. Required unless every metric's spec sets release.min_reports: no run "
                        "releases without a threshold (--min-reports 1 releases any count, and says so). A metric "
                        "whose spec is not given counts as one device at most")
    s.add_argument("--max-resumptions", type=number(int, 0, 1000), default=3, metavar="N",
                   help="how many times a run left unfinished is resumed before it is set aside, its chunks left "
                        "where they are and out of later runs, so the app's other windows go on (default 3)")
    s.add_argument("--retry", action="append", default=[], metavar="RUN",
                   help="put a set-aside run back (repeatable; 'all' for every one) before this run resumes it")
    s.add_argument("--hold-days", type=number(float, 0, 3650), default=7.0, metavar="DAYS",
                   help="how long a window whose every metric is below its threshold waits (default 7)")
    s.add_argument("--keep-originals", action="store_true",
                   help="move the consumed chunks under apps/<app>/shuffler/consumed/ instead of deleting them "
                        "(for --originals-days)")
    s.add_argument("--originals-days", type=number(float, 0, 3650, low_open=True), default=7.0, metavar="DAYS",
                   help="how long a chunk kept by --keep-originals stays, counted from when its replica wrote it "
                        "(default 7): every run deletes the older ones, with or without --keep-originals (they "
                        "hold batch ids and reports in arrival order)")
    s.add_argument("--lease-seconds", type=number(float, 1, 3600), default=60.0, metavar="SECONDS",
                   help="the shuffler lease's length past its last renewal (default 60): one run at a time per app; "
                        "a run whose process died is taken over this long after it stopped")
    s.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="where to mix: this process (default), or a Dask cluster (the 'dask' extra), so that a window "
                        "larger than one machine's memory is mixed across workers; its segments are written in parts "
                        "<window>-<random>-p<k>.jsonl that together are the window's one shuffled segment")
    s.add_argument("--scheduler", metavar="ADDRESS",
                   help="with --engine dask: the Dask scheduler's address (tcp://host:8786), whose workers must reach "
                        "the store (default: a cluster of local worker processes for the run)")
    s.add_argument("--json", action="store_true", help="print the run as JSON")
    s.set_defaults(handler=shuffle_command)


def shuffle_command(args: argparse.Namespace) -> int:
    """Run ``ldp shuffle``: 0 after a run (nothing to do included); another run holding the lease: ``ldp shuffle:
    error: ...`` naming it, 3; bad input, a store or app not found, the lease lost: ``ldp shuffle: error: ...``,
    2."""
    from ldp.cli.support import BAD_INPUT, report_error
    from ldp.errors import LeaseHeldError

    try:
        run, specs, central = _shuffle(args)
    except LeaseHeldError as exc:
        report_error("ldp shuffle", exc)
        return 3
    except BAD_INPUT as exc:
        return report_error("ldp shuffle", exc)
    if args.json:
        print(json.dumps({**run.to_dict(), **({"central": central} if central is not None else {})}, indent=1,
                         sort_keys=True))
        return 0
    _print_run(run, specs, central)
    return 0


def _shuffle(args: argparse.Namespace) -> tuple[Any, dict[str, Any], Any]:
    """One run of the shuffler as ``args`` say: the run, the specs by fingerprint, each window's central figures
    (``None`` without ``--spec``)."""
    from ldp.ingest.config import APP_NAME_RE

    if not APP_NAME_RE.match(args.app):
        raise ValueError(f"--app: an app name is 1 to 64 of a-z, 0-9, '_' and '-', got {args.app!r}")
    if args.scheduler is not None and args.engine != "dask":
        raise ValueError("--scheduler is the Dask scheduler of --engine dask")
    if args.engine == "dask":
        from ldp.extras import require_extra

        require_extra("ldp shuffle --engine dask", "dask", ("dask", "distributed", "pandas", "pyarrow"))
    from ldp.pipeline.chunks import incoming_prefix
    from ldp.shuffler.central import window_guarantees
    from ldp.shuffler.stage import shuffle_app
    from ldp.spec import CollectionSpec
    from ldp.storage import open_store

    options = dict(args.store_option)
    specs = {s.fingerprint: s for s in map(CollectionSpec.load, args.spec)}
    store = open_store(args.store, options or None)
    if warning := store.retention_warning(incoming_prefix(args.app)):
        print(f"ldp shuffle: warning: {warning}", file=sys.stderr)
    run = shuffle_app(store, args.app, grace_seconds=args.grace, dedup_seconds=args.dedup_days * 86400,
                      keep_originals=args.keep_originals, min_reports=args.min_reports,
                      hold_seconds=args.hold_days * 86400, lease_seconds=args.lease_seconds, engine=args.engine,
                      scheduler=args.scheduler, specs=specs, max_resumptions=args.max_resumptions, retry=args.retry,
                      originals_seconds=args.originals_days * 86400)
    for rid, reason in run.set_aside.items():
        print(f"ldp shuffle: warning: run {rid} is set aside ({reason}); its chunks wait in the store: fix the "
              f"cause, then ldp shuffle --retry {rid}", file=sys.stderr)
    return run, specs, window_guarantees(run.windows, specs) if specs else None


def _print_run(run: Any, specs: dict[str, Any], central: Any) -> None:
    """The run as ``ldp shuffle`` prints it: each window's reports and segment, withheld metrics, lines checked, and
    the central figures."""
    from ldp.shuffler.central import shortfall

    for rid in run.resumed:
        print(f"finished the interrupted run {rid}")
    for rid in run.voided:
        print(f"closed the superseded run {rid} as void (a stale write of a run that lost its lease)")
    if run.run_id is None:
        print("nothing to mix" + (f": {sum(run.held.values())} batches wait for their window to end"
                                  if run.held else ""))
        return
    print(f"run {run.run_id}: {len(run.chunks)} chunks, {run.duplicates} duplicate batches dropped")
    for window, w in run.windows.items():
        where = f"withheld ({w['withheld']})" if w.get("withheld") else w["segment"] or "(nothing new)"
        if w.get("parts") and not w.get("withheld"):
            where = f"{where.removesuffix('.jsonl')}-p*.jsonl ({w['parts']} part(s))"
        print(f"  window {window}: {w['reports']:,} reports from {w['batches']:,} batches of {w['replicas']} "
              f"replica(s) -> {where}")
        for key, (n, threshold) in (w.get("withheld_metrics") or {}).items():
            if not central:
                print(f"    {key}: withheld ({shortfall(n, threshold)}), written to no segment")
        if found := w.get("lines"):
            print("    lines: " + ", ".join(f"{n:,} {what}" for what, n in found.items())
                  + ("" if specs else " (pass --spec to check their payload order)"))
        for m in (central or {}).get(window, {}).values():
            c = m["central"]
            k = m.get("reports_per_window") or 1
            figure = (f"central ε={c['epsilon']:.4g}, δ={c['delta']:.0e} ("
                      + ("one report" if k == 1 else f"a device's {k} reports") + f" among {m['n']:,})"
                      if c else m.get("note", "no central guarantee"))
            print(f"    {m['metric']}: {figure}")
    if run.held:
        print(f"  held: {sum(run.held.values())} batches of windows not ended yet")
