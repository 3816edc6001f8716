"""``ldp watch``: :func:`add_watch_arguments` adds the command to an argparse subparsers object and
:func:`watch_command` runs it: continuous aggregation of the ingest service's closed segments
(:class:`ldp.ingest.watch.Watcher`), beside ``ldp serve`` or instead of its own folding."""

from __future__ import annotations

import argparse
import json
import signal
import threading
from typing import Any

__all__ = ["add_watch_arguments", "watch_command", "register"]


def register(subparsers: Any) -> None:
    """Add ``watch`` to the ``ldp`` subcommands, run by :func:`watch_command`."""
    add_watch_arguments(subparsers).set_defaults(handler=watch_command)


def add_watch_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``watch`` command; returns its parser."""
    from ldp.cli.support import number

    w: argparse.ArgumentParser = subparsers.add_parser(
        "watch", help="fold the ingest service's closed segments into aggregates and estimates, every N seconds",
        description="Continuous aggregation: for every app of the ingest service's config, fold the closed segments "
                    "not folded yet into DATA/apps/<app>/job (the ldp fold job: each segment counted "
                    "once), decode every metric and write DATA/apps/<app>/estimates.json, which the dashboard "
                    "shows. Runs until interrupted, or once with --once.")
    w.add_argument("--config", "-c", required=True, metavar="FILE", help="the ingest service's TOML config")
    w.add_argument("--every", type=number(float, 0, 86400, low_open=True), metavar="SECONDS",
                   help="seconds between folds (default: the config's [fold].every_seconds)")
    w.add_argument("--once", action="store_true", help="fold every app once, print what was done and exit")
    w.add_argument("--json", action="store_true", help="with --once: print every app's estimates.json as JSON")
    return w


def watch_command(args: argparse.Namespace) -> int:
    """Run ``ldp watch``: 0, or 1 when a fold failed with --once; a bad config ends with
    ``ldp watch: error: ...`` on stderr and status 2."""
    from ldp.cli.support import BAD_INPUT, report_error

    try:
        return _watch(args)
    except BAD_INPUT as exc:
        return report_error("ldp watch", exc)


def _withheld(doc: dict[str, Any]) -> str:
    """What the release thresholds withheld of the pooled estimates (``estimates.json`` keeps only the rest)."""
    states = [m.get("release") or {} for m in doc["metrics"]]
    held = sum(1 for r in states if r.get("released") is False)
    items = sum(r.get("withheld_items") or 0 for r in states)
    if not held and not items:
        return ""
    return f" ({held} not released: not enough reports yet; {items:,} item(s) withheld below min_z)"


def _watch(args: argparse.Namespace) -> int:
    from ldp.ingest.config import load_config
    from ldp.ingest.watch import Watcher, estimates_path

    config = load_config(args.config)
    every = args.every if args.every is not None else config.fold_every_seconds
    if args.once:
        docs = Watcher.from_config(config, every or 1.0).fold_all()
        if args.json:
            print(json.dumps(docs, indent=1))
        else:
            for app, doc in docs.items():
                if doc is None:
                    print(f"{app}: fold failed or busy (see the log)")
                    continue
                print(f"{app}: {doc['segments']} segment(s) ({doc['this_fold']['segments']} new), "
                      f"{doc['records']:,} report(s), {sum(doc['rejected'].values()):,} rejected, "
                      f"{len(doc['metrics'])} metric(s){_withheld(doc)}; {estimates_path(config.data_dir, app)}")
        return 0 if all(d is not None for d in docs.values()) else 1
    if not every:
        raise ValueError(f"{args.config}: [fold].every_seconds is 0 (folding off): pass --every SECONDS or --once")
    watcher = Watcher.from_config(config, every)
    done = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: done.set())
    watcher.start()
    try:
        while not done.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        watcher.stop()
    return 0
