"""``ldp serve``: :func:`add_serve_arguments` adds the command to an argparse subparsers object and
:func:`serve_command` runs it: the HTTP ingest service (uvicorn serving :func:`ldp.ingest.app.create_app`)
or, with ``ldp serve token``, a new bearer token and the config line holding its hash (``--analyst``: an analyst's,
who reads the dashboard and ``/v1/estimates``)."""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import logging
import sys
from typing import TYPE_CHECKING, Any

from ldp.extras import pip_install

if TYPE_CHECKING:
    from ldp.ingest.config import IngestConfig

__all__ = ["ROLES", "add_serve_arguments", "serve_command", "register"]

ROLES = ("ingest", "leader", "helper")
"""What ``ldp serve --role`` runs: the ingest service (docs/ingest.md) or one of the two aggregators."""
DEPRECATED_ROLES = {"collector": "ingest"}
"""``--role collector`` named the ingest service until issue 83 (DAP's collector is ``ldp collect``): still taken,
with a note, for one more release."""

logger = logging.getLogger("ldp.ingest")


def register(subparsers: Any) -> None:
    """Add ``serve`` to the ``ldp`` subcommands, run by :func:`serve_command`."""
    add_serve_arguments(subparsers).set_defaults(handler=serve_command)


def add_serve_arguments(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``serve`` command; returns its parser."""
    from ldp.cli.support import number

    srv = subparsers.add_parser(
        "serve", help="the HTTP ingest service: POST /v1/reports into durable segments (and `ldp serve token`)",
        description="Run the ingest service: clients POST batches of upload envelopes to /v1/reports; each line is "
                    "validated as `ldp fold` does and stored, exactly once, in segment files under the config's "
                    "data_dir (fsynced before the answer). `ldp serve token [--app NAME]` prints a new bearer token "
                    "and the token_sha256 line for the config; `ldp serve token --analyst` one for an analyst, who "
                    "reads the dashboard and /v1/estimates. TLS: run behind a reverse proxy (see "
                    "docs/ingest.md).")
    srv.add_argument("serve_action", nargs="?", choices=("token", "keygen"), metavar="token|keygen",
                     help="token: print a new bearer token and its token_sha256 config line, and exit; keygen "
                          "--out FILE: write an aggregator's new HPKE key pair (two-aggregator mode)")
    srv.add_argument("--role", choices=(*ROLES, *DEPRECATED_ROLES), default="ingest",
                     metavar="{" + ",".join(ROLES) + "}",
                     help="ingest (default): the ingest service of docs/ingest.md; leader or helper: one of the two "
                          "aggregators of the two-aggregator mode (Prio3), its config that role's "
                          "(docs/two-aggregators.md)")
    srv.add_argument("--out", metavar="FILE", help="with keygen: the key file to create (mode 0600)")
    srv.add_argument("--config-id", type=number(int, 0, 255), default=1,
                     help="with keygen: the HPKE config ID (0-255, default 1; a new key takes a new ID)")
    srv.add_argument("--config", "-c", metavar="FILE", help="the ingest service's TOML config (required to serve)")
    srv.add_argument("--host", default="127.0.0.1",
                     help="address to listen on (default 127.0.0.1; TLS terminates at a reverse proxy)")
    srv.add_argument("--port", type=number(int, 0, 65535), default=8000,
                     help="port (default 8000; 0: any free port, named in the start-up line)")
    srv.add_argument("--app", metavar="NAME", help="with token: the app the printed config lines are for")
    srv.add_argument("--analyst", action="store_true",
                     help="with token: a token for an analyst (reads the dashboard and /v1/estimates, uploads "
                          "nothing), and its line for the config's [analysts] table")
    srv.add_argument("--replica", metavar="NAME",
                     help="this process's name among several ingest services or aggregator processes over one store "
                          "(overrides the config's replica; docs/scale-out.md): an ingest service labels every "
                          "/metrics sample with it, an aggregator replica writes its own chunks and shares jobs")
    srv.add_argument("--http", choices=("native", "uvicorn"),
                     help="an aggregator's HTTP server: native (the default: the binding's HTTP front, the leader's "
                          "uploads taken in batches, docs/two-aggregators.md) or uvicorn; the ingest service takes "
                          "none (uvicorn)")
    srv.add_argument("--no-access-log", action="store_true",
                     help="log no line per request (its batch ids, sizes and times would let whoever reads the log "
                          "see batches arrive; see docs/ingest.md, shuffled storage)")
    return srv


def serve_command(args: argparse.Namespace) -> int:
    """Run ``ldp serve`` (or ``ldp serve token``); a bad config ends with ``ldp serve: error: ...``
    on stderr and status 2."""
    from ldp.cli.support import BAD_INPUT, report_error
    from ldp.errors import DataFolderBusyError, LeaseHeldError

    if args.role in DEPRECATED_ROLES:
        print(f"note: ldp serve --role {args.role} is now --role {DEPRECATED_ROLES[args.role]}; the old name goes in "
              "the release after next", file=sys.stderr)
        args.role = DEPRECATED_ROLES[args.role]
    try:
        if args.serve_action == "token":
            return _token(args.app, analyst=args.analyst, role=args.role)
        if args.serve_action == "keygen":
            return _keygen(args.out, args.config_id)
        if args.role != "ingest":
            for flag, given in (("--app", args.app), ("--no-access-log", args.no_access_log)):
                if given:
                    raise ValueError(f"{flag} is the ingest service's: an aggregator (--role {args.role}) takes none "
                                     "(it logs no request line)")
            return _serve_aggregator(args.config, args.role, args.host, args.port, args.http or "native",
                                     args.replica)
        if args.http:
            raise ValueError("--http is an aggregator's (--role leader|helper): the ingest service runs under uvicorn")
        if args.analyst:
            raise ValueError("--analyst goes with token: ldp serve token --analyst")
        if not args.config:
            raise ValueError("--config FILE is required (the ingest service's TOML config)")
        return _serve(args.config, args.host, args.port, access_log=not args.no_access_log, replica=args.replica)
    except (LeaseHeldError, DataFolderBusyError) as exc:  # another process serves under this replica name, or from
        report_error("ldp serve", exc)  # this data folder: not bad input, status 3
        return 3
    except BAD_INPUT as exc:
        return report_error("ldp serve", exc)


def _keygen(out: str | None, config_id: int) -> int:
    """Write a new HPKE key pair for an aggregator (or the ingest service) and print its public config."""
    from pathlib import Path

    from ldp import prio
    from ldp.aggregators.config import save_keypair
    from ldp.aggregators.task import b64

    if not out:
        raise ValueError("keygen needs --out FILE (the key file to create)")
    keypair = prio.HpkeKeypair.generate(config_id)
    try:
        save_keypair(Path(out), keypair)
    except FileExistsError:
        raise ValueError(f"{out} exists: a key file is never overwritten (remove it first, on purpose)") from None
    print(f"# wrote {out} (mode 0600); its public HPKE config, base64url:")
    print(b64(keypair.config.to_bytes()))
    return 0


def _serve_aggregator(config_path: str | None, role: str, host: str, port: int, http: str,
                      replica: str | None = None) -> int:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"ldp serve --role {role} needs starlette and uvicorn: {pip_install('serve')} ({exc})"
                          ) from None
    from ldp.aggregators.config import load_config
    from ldp.aggregators.service import serve

    if not config_path:
        raise ValueError(f"--config FILE is required (the {role}'s TOML config)")
    if not _is_loopback(host):
        print(f"ldp serve: warning: listening on {host}, not a loopback address: put a TLS-terminating reverse "
              "proxy in front (tokens travel in the Authorization header)", file=sys.stderr)
    config = load_config(config_path, role)
    if replica is not None:  # one of several processes over the aggregator's store (docs/scale-out.md)
        from ldp.aggregators.scale_out import check_replica_name

        config = dataclasses.replace(config, replica=check_replica_name(replica))
    return serve(config, host, port, announce=lambda line: print(line, file=sys.stderr, flush=True), http=http)


def _token(app: str | None, analyst: bool = False, role: str = "ingest") -> int:
    from ldp.ingest.config import APP_NAME_RE, new_token, token_sha256

    if analyst and app is not None:
        raise ValueError("--analyst and --app: an analyst's token reads every app's estimates and uploads to none; "
                         "give one of them")
    if app is not None and not APP_NAME_RE.match(app):
        raise ValueError(f"--app: an app name is 1 to 64 of a-z, 0-9, '_' and '-', got {app!r}")
    token = new_token()
    print(token)
    if role != "ingest":
        if app is not None or analyst:
            raise ValueError("--app and --analyst are the ingest service's tokens; with --role, a two-aggregator token")
        print("# two-aggregator mode: the party presenting this token keeps it in a file, mode 0600 (the leader: its "
              "[peer] token_file; the collector: ldp collect --token-file); the party checking it keeps only its "
              "hash (the helper: [peer]; the leader: [collector]; either: [operator] for its own status):")
        print(f'token_sha256 = "{token_sha256(token)}"')
        return 0
    if analyst:
        print("# give the token above to the analyst (it reads the dashboard and /v1/estimates, and uploads nothing); "
              "the config keeps only its hash, in [analysts] (one entry per analyst):")
        print(f'tokens_sha256 = ["{token_sha256(token)}"]')
        return 0
    print(f"# give the token above to the app's clients; the config keeps only its hash, under [apps.{app or 'NAME'}]:")
    print(f'token_sha256 = "{token_sha256(token)}"')
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _access_log_off() -> None:
    """No line per request anywhere (not even through the root logger)."""
    from ldp.ingest.app import ACCESS_LOGGER

    access = logging.getLogger(ACCESS_LOGGER)
    access.setLevel(logging.WARNING)
    access.propagate = False


def _access_log_to_stderr() -> None:
    """One JSON object per request on stderr (unless the access logger is already set up)."""
    from ldp.ingest.app import ACCESS_LOGGER

    access = logging.getLogger(ACCESS_LOGGER)
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False


def _serve(config_path: str, host: str, port: int, access_log: bool = True, replica: str | None = None) -> int:
    try:
        from ldp.ingest import http
        from ldp.ingest.service import create_service
    except ImportError as exc:
        raise ImportError(f"ldp serve needs starlette and uvicorn: {pip_install('serve')} ({exc})") from None
    from ldp.ingest.config import check_replica, load_config
    from ldp.ingest.datafolder import hold_data_folder

    config = load_config(config_path)
    if replica is not None:
        config = dataclasses.replace(config, replica=check_replica(replica, "--replica"))
    if not _is_loopback(host):
        print(f"ldp serve: warning: listening on {host}, not a loopback address: put a TLS-terminating reverse "
              "proxy in front (tokens travel in the Authorization header)", file=sys.stderr)
    if not access_log:
        _access_log_off()
    else:
        _access_log_to_stderr()
    http.limit_server_log()
    open_files = http.raise_open_files_limit()
    # one process per data folder: held before anything in it is written or recovered (the replica's claim file,
    # the journals), released by the OS however this process ends (ldp.ingest.datafolder)
    with hold_data_folder(config.data_dir):
        return _run(create_service(config), config, host, port, open_files)


def _run(app: Any, config: IngestConfig, host: str, port: int, open_files: int) -> int:
    """Run uvicorn serving ``app`` until it stops (the data folder held by the caller): the exit status."""
    from ldp.ingest import http

    writer = app.state.writer
    writer.take_claim()  # a replica: its name in the shared store is its own, or it does not start
    app.state.connection_stats = stats = http.ConnectionStats()  # open connections, deadline closes
    if app.state.metrics is not None:
        app.state.metrics.watch_connections(stats)
    server = http.ListeningServer(http.server_config(app, config.limits, host=host, port=port, stats=stats),
                                  http.print_startup_line(config, open_files))
    sys.setswitchinterval(http.SWITCH_INTERVAL)
    try:
        server.run()  # SIGTERM/SIGINT: stop accepting, finish the requests, then the lifespan closes the segments
    finally:
        if writer.claim is not None:
            writer.claim.stop()  # released (nothing if the lifespan's close did it already)
    if not server.started:
        print(f"ldp serve: error: could not start on {host}:{port} (see the messages above)", file=sys.stderr)
        return 2
    return 0
