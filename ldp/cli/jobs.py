"""The offline jobs ``ldp fold``, ``ldp merge`` and ``ldp decode``: :func:`register` (:func:`add_job_arguments`) adds
them to an argparse subparsers object and :func:`job_command` runs them (exit status 0, or 2 with the
error on stderr for bad input: a spec, a changed input, an unreadable file, a missing extra).

``ldp fold`` was ``ldp aggregate`` (issue 83: "aggregate" names the fold's result, never the job that makes it);
the old name still runs it, with a deprecation note on stderr, for one more release (:data:`DEPRECATED_COMMANDS`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ldp._moved import renamed_attributes
from ldp.extras import install_hint

__all__ = ["JOB_COMMANDS", "DEPRECATED_COMMANDS", "add_job_arguments", "quantile_list", "register", "job_command"]

JOB_COMMANDS = ("fold", "merge", "decode")
DEPRECATED_COMMANDS = {"aggregate": "fold"}
"""An old command name → the command it now runs (argparse's alias, hidden from ``ldp --help``)."""


def register(subparsers: Any) -> None:
    """Add ``fold``, ``merge`` and ``decode`` to the ``ldp`` subcommands, each run by :func:`job_command`."""
    for parser in add_job_arguments(subparsers).values():
        parser.set_defaults(handler=job_command)


def add_job_arguments(subparsers: Any) -> dict[str, argparse.ArgumentParser]:
    """Add the ``fold``, ``merge`` and ``decode`` commands (and the hidden old names of :data:`DEPRECATED_COMMANDS`);
    returns their parsers by name."""
    parsers = {"fold": _fold_parser(subparsers), "merge": _merge_parser(subparsers),
               "decode": _decode_parser(subparsers)}
    for old in DEPRECATED_COMMANDS:  # runs as before, listed nowhere in ``ldp --help`` (its help line taken out)
        parsers[old] = _fold_parser(subparsers, old, help=argparse.SUPPRESS)
        subparsers._choices_actions[:] = [a for a in subparsers._choices_actions if a.dest != old]
    return parsers


def _fold_parser(subparsers: Any, name: str = "fold",
                 help: str = "fold report files into one aggregate per metric (validated, resumable)"  # noqa: A002
                 ) -> argparse.ArgumentParser:
    """``ldp fold``: inputs, the spec and the output, how inputs are read, where the fold runs."""
    from ldp.cli.support import number, store_option

    agg = subparsers.add_parser(
        name, help=help,
        description="Validate upload envelopes (JSONL, CSV, Parquet, binary .ldpe) against the collection spec, fold "
                    "the valid ones into one aggregate per metric and write the rejected ones, with their reason, to "
                    "OUT/rejects.jsonl. Re-running skips inputs already folded; an interrupted run resumes.")
    agg.add_argument("inputs", nargs="+", metavar="INPUT",
                     help="report files, or folders of them, or object storage (s3://bucket/prefix, the s3 extra; "
                          "az://container/prefix, the azure extra: the objects under it)")
    agg.add_argument("--store-option", action="append", default=[], metavar="KEY=VALUE", type=store_option,
                     help="an option of the object store of s3:// or az:// inputs (repeatable), e.g. "
                          "endpoint_url=http://127.0.0.1:9000 (S3), account_name=NAME or account_url=URL (Azure); "
                          "credentials from the environment")
    agg.add_argument("--spec", action="append", required=True, metavar="FILE",
                     help="the collection spec; repeat for every version deployed")
    agg.add_argument("--out", "-o", required=True, metavar="DIR",
                     help="the output folder (manifest, aggregates, rejects)")
    agg.add_argument("--format", choices=("jsonl", "csv", "parquet", "binary"),
                     help="the inputs' format (default: from each file's extension)")
    agg.add_argument("--by-window", action="store_true", help="one aggregate per metric and window (e.g. per day)")
    agg.add_argument("--on-change", choices=("error", "reprocess"), default="error",
                     help="an input already folded whose content changed: stop (default) or fold it again in place")
    agg.add_argument("--chunk-mb", type=number(float, 0, 1024, low_open=True), default=8.0,
                     help="MiB read at a time (default 8, at most 1024)")
    agg.add_argument("--engine", choices=("local", "dask"), default="local", help="where to fold (default local)")
    agg.add_argument("--scheduler", metavar="ADDRESS",
                     help="Dask scheduler address (default with --engine dask: a local cluster of 2 workers)")
    agg.add_argument("--duplicates", choices=("once", "count"), default="once",
                     help="an input with the same content as another: count it once (default) or again")
    agg.add_argument("--parquet-unverified", action="store_true",
                     help="fold Parquet files without page checksums (refused by default: damage in them cannot be "
                          "detected)")
    agg.add_argument("--quiet", "-q", action="store_true",
                     help="no progress bar and no summary (notes and warnings still go to stderr, unless ldp -q)")
    agg.add_argument("--json", action="store_true", help="print the summary as JSON")
    return agg


def _merge_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``ldp merge``: aggregate files added up, or each metric's released windows pooled."""
    mrg = subparsers.add_parser(
        "merge", help="merge aggregate files from many jobs, processes or machines",
        description="Merge aggregate files (or output folders of ldp fold): files of the same name are added "
                    "up exactly. With --all-windows, each metric's windows of at least its min_reports reports "
                    "(the spec's release thresholds) are merged into one aggregate; the other windows are left out "
                    "and named, so that no withheld window is the difference of two released views.")
    mrg.add_argument("inputs", nargs="+", metavar="INPUT", help=".agg files, or folders of them")
    mrg.add_argument("--out", "-o", required=True, metavar="PATH",
                     help="a folder for the merged files, or one .agg file when all inputs merge into one")
    mrg.add_argument("--all-windows", action="store_true",
                     help="merge the released windows of each metric into one aggregate (needs --spec)")
    mrg.add_argument("--spec", action="append", metavar="FILE",
                     help="with --all-windows: the collection spec whose release thresholds decide the windows "
                          "merged (repeatable)")
    mrg.add_argument("--json", action="store_true", help="print the merged files as JSON")
    return mrg


def _decode_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``ldp decode``: which aggregate, how it is estimated, and how the estimates are shown."""
    from ldp.cli.support import input_file, open_unit, positive_int

    dec = subparsers.add_parser(
        "decode", help="estimates from an aggregate file: table, CSV, JSON, PNG plot",
        description="Turn an aggregate into estimates with standard errors and confidence intervals, using the "
                    "metric's candidate dictionary from the spec for RAPPOR, CMS and HCMS. Given a job folder "
                    "(ldp fold --by-window, or an ingest service's DATA/apps/APP/job) or several files, --window "
                    "and --metric choose the aggregate; files of the same name are merged.")
    dec.add_argument("aggregate", nargs="+", type=_agg_path, metavar="AGGREGATE",
                     help="an .agg file, or several, or a job folder")
    dec.add_argument("--window", type=_window, metavar="W",
                     help="the window to decode: its index (the spec's floor(unix time / window_seconds)), latest "
                          "(the latest window there is, withheld or not), or all (every window of at least the "
                          "metric's min_reports reports merged; the others are left out and named)")
    dec.add_argument("--spec", action="append", required=True, metavar="FILE", help="the collection spec (repeatable)")
    dec.add_argument("--metric", help="the metric (default: from the file name, or the only one with these parameters)")
    dec.add_argument("--candidates", metavar="FILE", type=input_file,
                     help="candidate dictionary, one per line (default: the spec's)")
    dec.add_argument("--confidence", type=open_unit, default=0.95,
                     help="confidence level of the intervals (default 0.95)")
    dec.add_argument("--alpha", type=open_unit, default=0.05, help="significance level of detection (default 0.05)")
    dec.add_argument("--selection", choices=("auto", "lasso", "none"), default="auto",
                     help="RAPPOR: fit every candidate (none), the lasso's selection (lasso) or choose by size (auto, "
                          "default; see ldp rappor-decode --help)")
    dec.add_argument("--top", type=positive_int, default=None,
                     help="SFP: cap on detected records per position (default: none)")
    dec.add_argument("--consistency", choices=("none", "clip", "project", "norm-sub", "base-cut", "ibu"),
                     default="none", help="post-process the counts (default none: the raw unbiased estimate; see "
                                          "docs/postprocessing.md)")
    out = dec.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output (every item)")
    out.add_argument("--csv", action="store_true", help="CSV output (every item)")
    dec.add_argument("--quantiles", type=quantile_list, metavar="Q,...",
                     help="histogram metrics: also the quantiles with CIs, e.g. 0.5,0.9,0.99 or p50,p95 (from every "
                          "bucket, when the metric is released; see docs/protocols/histograms.md)")
    dec.add_argument("--plot", metavar="FILE.png", help="also write a bar chart with the intervals (needs matplotlib)")
    dec.add_argument("--max-rows", type=positive_int, default=40, help="rows of the printed table (default 40)")
    dec.add_argument("--no-release", action="store_true",
                     help="show every estimate, ignoring the spec's release thresholds (min_reports, min_z): the "
                          "data owner's view, said so in the output")
    return dec


def quantile_list(text: str) -> tuple[float, ...]:
    """An argparse ``type=``: comma-separated quantiles, each a number in (0, 1) or ``pNN`` (``p99.9`` is 0.999)."""
    out = []
    for part in text.split(","):
        word = part.strip().lower()
        try:
            q = float(word[1:]) / 100.0 if word.startswith("p") else float(word)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a quantile: {part.strip()!r} (give 0.5 or p50)") from None
        if not 0.0 < q < 1.0:  # NaN fails too
            raise argparse.ArgumentTypeError(f"a quantile must be in (0, 1) (p50 is 0.5), got {part.strip()!r}")
        out.append(q)
    return tuple(out)


def _agg_path(text: str) -> str:
    """An argparse ``type=``: an existing file or folder."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such file or folder: {text!r}")
    return text


def _window(text: str) -> int | str:
    from ldp.jobs.decode import parse_window

    try:
        return parse_window(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def job_command(args: argparse.Namespace) -> int:
    """Run ``args.command`` (one of :data:`JOB_COMMANDS`); bad input (a spec, a changed input, an
    unreadable file, a missing extra) ends with ``ldp <command>: error: ...`` on stderr and status 2."""
    from ldp.cli.support import BAD_INPUT, report_error

    if args.command in DEPRECATED_COMMANDS:
        new = DEPRECATED_COMMANDS[args.command]
        print(f"note: ldp {args.command} is now ldp {new}; the old name goes in the release after next",
              file=sys.stderr)
        args.command = new
    try:
        return {"fold": _fold, "merge": _merge, "decode": _decode}[args.command](args)
    except BrokenPipeError:
        raise  # the caller decides (ldp.cli.command: the reader closed stdout)
    except BAD_INPUT as exc:
        return report_error(f"ldp {args.command}", exc)


def _fold(args: argparse.Namespace) -> int:
    from ldp.jobs.job import fold_files

    quiet = args.quiet or getattr(args, "log_quiet", False)  # ldp fold -q, or ldp -q fold
    summary = fold_files(args.inputs, args.spec, args.out, by_window=args.by_window, fmt=args.format,
                         on_change=args.on_change, chunk_bytes=int(args.chunk_mb * 2**20), engine=args.engine,
                         scheduler=args.scheduler, progress=False if quiet else None,
                         duplicates=args.duplicates, parquet_unverified=args.parquet_unverified,
                         storage_options=dict(args.store_option) or None)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=1))
    elif not args.quiet:
        print(summary.text())
    elif not getattr(args, "log_quiet", False):  # renames, duplicates, vanished inputs: silent only with ldp -q
        for line in summary.text().splitlines():
            if line.startswith(("note:", "warning:")):
                print(line, file=sys.stderr)
    return 0


def _merge(args: argparse.Namespace) -> int:
    from ldp.jobs.store import merge_files

    given = getattr(args, "spec", None)
    if given and not args.all_windows:
        raise ValueError("--spec is for --all-windows (merging files of the same name applies no threshold)")
    paths = merge_files(args.inputs, args.out, all_windows=args.all_windows, specs=given or None)
    names = sorted(set(paths) | set(paths.left_out))
    if args.json:
        if args.all_windows:  # every metric: its file (null: every window left out), the windows in it, those left out
            print(json.dumps({name: {"path": str(paths[name]) if name in paths else None,
                                     "windows": paths.pooled.get(name, []), "left_out": paths.left_out.get(name, [])}
                              for name in names}, indent=1))
        else:
            print(json.dumps({name: str(path) for name, path in paths.items()}, indent=1))
        return 0
    for name in names:
        print(f"{name}: {paths[name] if name in paths else 'nothing written, every window left out'}")
        for e in paths.left_out.get(name, []):
            print(f"  left out: window {e['window']} ({e['reason']})")
    return 0


def _decode(args: argparse.Namespace) -> int:
    from ldp.jobs.decode import decode_job, estimates_csv, write_estimates
    from ldp.jobs.job import spec_index
    from ldp.jobs.poisoning import evidence_summary
    from ldp.jobs.release import release

    if args.plot is not None:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise ImportError(f"--plot needs matplotlib: {install_hint('matplotlib', 'plot')}")
    paths = args.aggregate if isinstance(args.aggregate, list) else [args.aggregate]
    window = getattr(args, "window", None)
    apply = not getattr(args, "no_release", False)
    spec, metric, n, raw, chosen, pooling, agg = decode_job(
        paths[0] if len(paths) == 1 else paths, spec_index(args.spec), metric=args.metric, candidates=args.candidates,
        window=window, apply_release=apply, confidence=args.confidence, alpha=args.alpha, top=args.top,
        selection=args.selection)
    if agg is not None and hasattr(agg, "pair_grid") and getattr(raw, "items", None):  # RAPPOR: candidates known
        from ldp.jobs.rappor_poisoning import candidate_evidence_summary

        evidence = candidate_evidence_summary(agg, raw.items)
    else:
        evidence = None if agg is None else evidence_summary(agg)
    est = raw
    if args.consistency != "none" and est is not None:
        if not hasattr(est, "consistent"):
            raise ValueError(f"--consistency applies to frequency estimates, not to {metric.protocol}'s")
        est = est.consistent(args.consistency, metric.params)
    out = release(est, spec.release_for(metric.name), n, basis=raw, apply=apply, pooling=pooling)
    shown, state = out.estimates, out.to_dict()
    quantiles = _quantiles(est, args, metric.protocol) if out.released else None
    if args.json:
        doc = json.loads(shown.to_json()) if shown is not None else {"protocol": metric.protocol, "n": n}
        extra = {} if quantiles is None else {"quantiles": quantiles.to_dict()}
        where = {} if chosen is None else {"window": chosen}
        print(json.dumps({"metric": metric.name, **where, **doc, **extra, "release": state, "poisoning": evidence}))
    elif args.csv:
        if shown is not None:
            print(estimates_csv(shown, evidence), end="")
    else:
        which = "" if window is None else f", window {window}" + (f" ({chosen})" if chosen != window else "")
        print(f"metric {metric.name} ({metric.protocol}, parameters {metric.params_fingerprint}){which}")
        if shown is not None:
            print(shown.table(max_rows=args.max_rows))
        if quantiles is not None:
            print(quantiles.table())
    stream = sys.stderr if args.csv else sys.stdout
    if state["text"] and not args.json:
        print(("not released: " if shown is None else "release: ") + state["text"], file=stream)
    if evidence is not None and not args.json:
        print(f"poisoning: {evidence['message']}", file=stream)
    if args.plot is not None and shown is not None:
        write_estimates(shown, plot=args.plot, title=f"{metric.name} ({metric.protocol}), n={n:,}", poisoning=evidence)
        print(f"wrote {args.plot}", file=sys.stderr if args.json or args.csv else sys.stdout)
    return 0


def _quantiles(est: Any, args: argparse.Namespace, protocol: str) -> Any:
    """``--quantiles`` of the estimate before items are withheld (a quantile is the whole metric's, as a mean),
    at ``--confidence``; ``None`` without the option."""
    qs = getattr(args, "quantiles", None)
    if qs is None:
        return None
    if args.csv:
        raise ValueError("--quantiles prints a second table: use it with the text or --json output, not --csv")
    ask = getattr(est, "quantiles", None)
    if ask is None:
        raise ValueError(f"--quantiles applies to histogram metrics (buckets of numbers), not to {protocol}'s")
    return ask(qs, args.confidence)


# issue 83's renames, the old names kept for one more release
__getattr__ = renamed_attributes(__name__, {
    "SERVER_COMMANDS": "JOB_COMMANDS", "add_server_arguments": "add_job_arguments", "server_command": "job_command"})
