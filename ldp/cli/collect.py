"""``ldp collect``: the collector of the two-aggregator mode (issue 71).

* ``ldp collect task --spec SPEC --metric M --leader URL --helper URL --collector-key KEY --min-batch-size N
  --noise laplace:1 --out TASK [--verify-key FILE]``: write a metric's public task file (and a new verify key for the
  two aggregators);
* ``ldp collect keygen --out KEY``: the collector's HPKE key pair (its public config goes into the task);
* ``ldp collect --task TASK --key KEY --token-file F --window START [--out FILE]``: ask the leader for a window,
  open the two aggregate shares, add them, debias, print the estimates with both guarantees.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from ldp.cli.support import output

__all__ = ["register", "collect_command", "parse_window"]


def register(subparsers: Any) -> None:
    """Add ``collect`` to the ``ldp`` subcommands."""
    from ldp.cli.support import number

    p = subparsers.add_parser(
        "collect", help="the two-aggregator mode's collector: a window's result from the leader (and `task`, `keygen`)",
        description="Collect a window of a two-aggregator task from its leader: both aggregators' noised aggregate "
                    "shares, sealed to this collector's key, are opened and added, and the estimates printed with "
                    "their central guarantee (and the local one, when devices randomize first). `ldp collect task` "
                    "writes a metric's task file; `ldp collect keygen` the collector's key pair. See "
                    "docs/two-aggregators.md.")
    p.add_argument("collect_action", nargs="?", choices=("task", "keygen"), metavar="task|keygen",
                   help="task: write a task file; keygen: write the collector's HPKE key pair")
    p.add_argument("--task", metavar="FILE", help="the task file (collecting)")
    p.add_argument("--key", metavar="FILE", help="the collector's HPKE key file (collecting)")
    p.add_argument("--token-file", metavar="FILE", help="the collector's bearer token for the leader (collecting)")
    p.add_argument("--token-header", choices=("authorization", "dap-auth-token"), default="authorization",
                   help="collecting: how the token is sent: `Authorization: Bearer` (default) or DAP-09's "
                        "`DAP-Auth-Token` (what a Janus leader given a DAP-Auth token expects)")
    p.add_argument("--wait", type=number(float, 0, 86400), default=60.0, metavar="SECONDS",
                   help="collecting: how long to poll a collection job the leader has not finished (default 60)")
    p.add_argument("--leader", metavar="URL", help="the leader's URL (task: required; collecting: the task's)")
    p.add_argument("--window", action="append", metavar="START",
                   help="a window to collect: its start, in seconds since the epoch or ISO 8601 UTC (repeatable)")
    p.add_argument("--out", metavar="FILE", help="task/keygen: the file to write; collecting: the JSON result file")
    p.add_argument("--heavy-hitters", action="store_true", help="collecting a Poplar1 task: walk the window's "
                   "prefix tree a level at a time and print the strings whose noised count passes --threshold "
                   "(docs/string-discovery.md)")
    p.add_argument("--threshold", type=number(float, 0, 1e12), metavar="T", help="--heavy-hitters: the noised "
                   "count a prefix must reach (default: the task's, else the recommended one for its noise)")
    p.add_argument("--max-candidates", type=number(int, 2, 10 ** 6), metavar="C", help="--heavy-hitters: "
                   "candidates per level (default and most: the task's)")
    p.add_argument("--spec", metavar="FILE", help="task: the collection spec")
    p.add_argument("--metric", metavar="NAME", help="task: the metric")
    p.add_argument("--helper", metavar="URL", help="task: the helper's URL")
    key = p.add_mutually_exclusive_group()
    key.add_argument("--collector-key", metavar="FILE", help="task: the collector's key file (its public config is "
                                                             "taken)")
    key.add_argument("--collector-config", metavar="BASE64URL", help="task: the collector's public HPKE config, "
                                                                     "as `ldp collect keygen` printed it")
    for role in ("leader", "helper"):
        p.add_argument(f"--{role}-config", metavar="BASE64URL", help=f"task: the {role}'s public HPKE config, as "
                       "`ldp serve keygen` printed it, which devices seal to (both or neither; a device's client needs "
                       "them: docs/two-aggregators.md)")
    p.add_argument("--min-batch-size", type=number(int, 1, 10 ** 9), help="task: the fewest valid reports a "
                   "window is released with")
    p.add_argument("--noise", default="laplace:1", help="task: each aggregator's noise: none, laplace:EPS or "
                   "gaussian:EPS:DELTA (default laplace:1)")
    local = p.add_mutually_exclusive_group()
    local.add_argument("--local", dest="local", action="store_true", default=None,
                       help="task: devices randomize with the metric's protocol first (default: the spec's trust)")
    local.add_argument("--no-local", dest="local", action="store_false", help="task: devices share the exact value")
    p.add_argument("--time-precision", type=number(int, 1, 366 * 86400), help="task: seconds report times are "
                   "rounded down to (default the window)")
    p.add_argument("--verify-key", metavar="FILE", help="task: also create FILE (mode 0600) with a new verify key "
                   "for the two aggregators")
    p.add_argument("--vdaf", choices=("08", "18"), default="18", help="task: the VDAF draft devices and both "
                   "aggregators speak: 18 (default) or 08, DAP-09's own, which the deployed DAP stack speaks (Janus "
                   "0.7, divviup-ts); a Sum's bound must then be 2^bits - 1")
    p.set_defaults(handler=collect_command)


def parse_window(text: str) -> int:
    """A window start: seconds since the epoch, or an ISO 8601 date/time (UTC unless it says otherwise)."""
    if text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--window: seconds since the epoch or ISO 8601, got {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp())


def collect_command(args: argparse.Namespace) -> int:
    from ldp.cli.support import BAD_INPUT, report_error
    from ldp.errors import AggregatorError

    try:
        if args.collect_action == "keygen":
            from ldp.cli.serve import _keygen

            return _keygen(args.out, 1)
        if args.collect_action == "task":
            return _task(args)
        return _collect(args)
    except AggregatorError as exc:
        output(f"ldp collect: error: {exc} [{exc.code}]", to_stderr=True)
        return 3 if exc.code in ("helper_unavailable",) else 2
    except BAD_INPUT as exc:
        return report_error("ldp collect", exc)


def _need(args: argparse.Namespace, *names: str) -> None:
    missing = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) in (None, "")]
    if missing:
        raise ValueError(f"{' '.join(missing)} required")


def _task(args: argparse.Namespace) -> int:
    import secrets

    from ldp.aggregators.config import load_keypair, write_secret
    from ldp.aggregators.task import Noise, Task, b64
    from ldp.spec import CollectionSpec

    _need(args, "spec", "metric", "leader", "helper", "min_batch_size", "out")
    if args.collector_config:
        from ldp import prio
        from ldp.aggregators.task import unb64

        config = prio.HpkeConfig.from_bytes(unb64(args.collector_config, None, "--collector-config")).to_bytes()
    elif args.collector_key:
        config = load_keypair(Path(args.collector_key)).config.to_bytes()
    else:
        raise ValueError("--collector-key FILE or --collector-config BASE64URL required")
    devices = _aggregator_configs(args)
    spec = CollectionSpec.load(args.spec)
    if args.metric not in spec.metrics:
        raise ValueError(f"--metric: spec {spec.name!r} has no metric {args.metric!r}; its metrics: "
                         f"{', '.join(spec.metrics) or 'none'}")
    task = Task.for_metric(spec, args.metric, leader_url=args.leader, helper_url=args.helper,
                           collector_hpke_config=config, min_batch_size=args.min_batch_size,
                           noise=Noise.parse(args.noise), local=args.local, time_precision=args.time_precision,
                           vdaf_draft=int(args.vdaf), hpke_configs=devices)
    out = Path(args.out)
    if out.exists():
        raise ValueError(f"{out} exists: a task is never overwritten (its ID is the devices' and the aggregators')")
    task.save(out)
    k = task.reports_per_window
    output(f"wrote {out}: task {task.id_text} for {task.app}/{task.metric}, {task.vdaf} {task.vdaf_params} "
           f"(VDAF draft {task.vdaf_draft:02d}), "
           f"{task.trust}, noise {task.noise}, minimum batch {task.min_batch_size}, "
           + (f"a device sends up to {k} report(s) a window" if k
              else "reports a device sends a window not capped by the spec (one assumed)"))
    if args.verify_key:
        write_secret(Path(args.verify_key), b64(secrets.token_bytes(task.prio3().verify_key_size)) + "\n")
        output(f"wrote {args.verify_key} (mode 0600): give it to both aggregators, and to no one else")
    return 0


def _aggregator_configs(args: argparse.Namespace) -> tuple[bytes, bytes] | None:
    """``--leader-config`` and ``--helper-config``, each decoded (and re-encoded) by the binding; ``None`` for
    neither."""
    given = [args.leader_config, args.helper_config]
    if given == [None, None]:
        return None
    if None in given:
        raise ValueError("--leader-config and --helper-config go together: a device seals to both")
    from ldp import prio
    from ldp.aggregators.task import unb64

    leader, helper = (prio.HpkeConfig.from_bytes(unb64(text, None, f"--{role}-config")).to_bytes()
                      for text, role in zip(given, ("leader", "helper"), strict=True))
    if leader == helper:
        raise ValueError("--leader-config and --helper-config are the same config: each aggregator has its own key")
    return leader, helper


def _collect(args: argparse.Namespace) -> int:
    from ldp.aggregators.collect import collection_document, open_collection
    from ldp.aggregators.config import load_keypair, read_secret
    from ldp.aggregators.http import LeaderClient
    from ldp.aggregators.task import Task
    from ldp.errors import AggregatorError

    _need(args, "task", "key", "token_file", "window")
    task = Task.load(args.task)
    keypair = load_keypair(Path(args.key))
    token = read_secret(Path(args.token_file), "--token-file")
    client = LeaderClient(args.leader or task.leader_url, token, token_header=args.token_header, wait=args.wait)
    if task.is_poplar1 and not args.heavy_hitters:
        raise ValueError(f"task {task.id_text} is a Poplar1 task: its strings are collected with --heavy-hitters")
    results = []
    if args.heavy_hitters:
        from ldp.aggregators.heavy_hitters import collect_heavy_hitters, dap_level

        def ask(window: int, param: bytes) -> dict[str, Any]:  # one level: a DAP-09 collection job with its param
            return dap_level(task, client.collect(task.task_id, window, task.window_seconds, param))

        for text in args.window:
            found = collect_heavy_hitters(task, keypair, ask, parse_window(text), threshold=args.threshold,
                                          max_candidates=args.max_candidates)
            results.append(found)
            _print_found(found)
    for text in [] if args.heavy_hitters else args.window:
        window = parse_window(text)
        dap = client.collect(task.task_id, window, task.window_seconds)  # DAP-09's collection flow
        try:
            status: dict[str, Any] | None = client.status()  # the release's figures, as the leader states them
        except (AggregatorError, ConnectionError, ValueError):
            status = None  # a leader without this project's status (another DAP implementation)
        collection = open_collection(task, keypair, collection_document(task, dap, status))
        doc = collection.to_dict()
        results.append(doc)
        _print(doc)
    if args.out:
        Path(args.out).write_text(json.dumps(results if len(results) > 1 else results[0], indent=2) + "\n",
                                  encoding="utf-8")
    return 0


def _print(doc: dict[str, Any]) -> None:
    central = doc["central"]
    when = dt.datetime.fromtimestamp(doc["window"], dt.UTC).isoformat().replace("+00:00", "Z")
    rel, over = central["release"], central["over_releases"]
    output(f"{doc['app']}/{doc['metric']} window {when}: n = {doc['n']:,} ({doc['trust']})")
    line = ("  central: no noise: the collector sees the exact sums (no central guarantee)" if not rel else
            f"  central: this release ε = {rel['epsilon']:g}" + (f", δ = {rel['delta']:g}" if rel["delta"] else ""))
    if over:
        line += f"; over {central['releases']} release(s) ε = {over['epsilon']:.4g}, δ = {over['delta']:g}"
    output(line)
    if rel:
        output(_device_line(central))
    local = doc["local"]
    output(f"  local: ε = {local['epsilon']:g} per report, even if both aggregators collude" if local
           else "  local: none (both aggregators together could see each measurement)")
    width = max(len(i) for i in doc["items"])
    for item, count, se in zip(doc["items"], doc["count"], doc["std_error"], strict=True):
        output(f"  {item:>{width}}  {count:14,.1f}  ± {se:,.1f}")


def _print_found(doc: dict[str, Any]) -> None:
    """A heavy-hitter walk's strings, largest noised count first, and its guarantee."""
    when = dt.datetime.fromtimestamp(doc["window"], dt.UTC).isoformat().replace("+00:00", "Z")
    eps = doc["walk_epsilon"]
    output(f"window {when}: {len(doc['strings'])} string(s) of {doc['bits']} bits with a noised count >= "
           f"{doc['threshold']:g} over {doc['levels_released']} level(s)"
           + (f"; walk ε = {eps['epsilon']:.4g}, δ = {eps['delta']:g}" if eps else "; no noise (no guarantee)"))
    for s in doc["strings"]:
        output(f"  {s['text'] if s['text'] is not None else s['bits']!s:>24}  {s['count']:10,.0f}")


def _device_line(central: dict[str, Any]) -> str:
    """The per-device guarantee (docs/trust-models.md): a device's k reports of a window are all in its release."""
    k, device = central.get("reports_per_window"), central.get("device") or {}
    if not k or k == 1:
        why = "one report a window" + (", the spec's cap" if k else " assumed: the spec caps none")
        return f"  per device: the same ({why})"
    rel, over = device.get("release"), device.get("over_releases")
    if not rel:
        return f"  per device (up to {k} reports a window): not stated by the leader"
    line = f"  per device (up to {k} reports a window): this release ε = {rel['epsilon']:.4g}" + (
        f", δ = {rel['delta']:g}" if rel["delta"] else "")
    if over:
        line += f"; over {central['releases']} release(s) ε = {over['epsilon']:.4g}, δ = {over['delta']:g}"
    return line
