"""Run a Janus deployment on this machine as a test oracle: the other aggregator of simulations/peer_aggregator.py.

Janus (github.com/divviup/janus, a 0.7 release: DAP-09, VDAF-08) is not part of ``ldp`` and none of its code is
here. Build it from its repository first (``cargo build --release -p janus_aggregator -p janus_interop_binaries``);
this script only starts what was built, as that repository's interop container does, with this machine's
PostgreSQL 15 instead of the container's:

* a database cluster of its own (``initdb`` as the ``postgres`` user, trust authentication on loopback) and Janus's
  schema (its ``db/*.up.sql`` migrations applied in order with ``psql``);
* the HPKE key rotator, run once (it makes the first global key pair, active at once);
* ``janus_aggregator aggregator`` (the DAP routes), ``aggregation_job_creator``, ``aggregation_job_driver`` and
  ``collection_job_driver``, tuned for short latency (jobs of 1–100 reports, discovery every second);
* ``janus_interop janus_interop_aggregator``: the interop test API (draft-dcook-ppm-dap-interop-test-design:
  ``/internal/test/ready``, ``endpoint_for_task``, ``add_task``) in front of the aggregator's DAP routes.

Usage::

    python simulations/janus_stack.py --janus ~/janus --dir /tmp/janus-run [--port 9080]
    LDP_PEER_AGGREGATOR=http://127.0.0.1:9080 python simulations/peer_aggregator.py --reports 10000

It prints the interop API's URL when every process is ready, and stops them all (and the database) on Ctrl-C or
SIGTERM. Nothing here runs in CI: nothing can be fetched there.
"""

from __future__ import annotations

import argparse
import base64
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DAEMONS = ("aggregator", "aggregation_job_creator", "aggregation_job_driver", "collection_job_driver")


def _configs(port: int, db_url: str) -> dict[str, str]:
    """Each process's YAML (Janus's configuration keys), the database named once and ports ``port``…``port + 15``."""
    common = f"database:\n  url: {db_url}\n  check_schema_version: false\nlogging_config:\n  force_json_output: true\n"
    jobs = ("job_discovery_interval_s: 1\nmax_concurrent_job_workers: 10\nworker_lease_clock_skew_allowance_s: 1\n"
            "worker_lease_duration_s: 10\nmaximum_attempts_before_failure: 3\nbatch_aggregation_shard_count: 32\n")
    names = (*DAEMONS, "interop", "key_rotator")
    health = {name: f"health_check_listen_address: 127.0.0.1:{port + 10 + i}\n" for i, name in enumerate(names)}
    own = {
        "aggregator": f"listen_address: 127.0.0.1:{port + 1}\nmax_upload_batch_size: 100\n"
                      "max_upload_batch_write_delay_ms: 20\nbatch_aggregation_shard_count: 32\n",
        "aggregation_job_creator": "batch_aggregation_shard_count: 32\ntasks_update_frequency_s: 1\n"
                                   "aggregation_job_creation_interval_s: 1\nmin_aggregation_job_size: 1\n"
                                   "max_aggregation_job_size: 100\n",
        "aggregation_job_driver": jobs + "task_counter_shard_count: 32\n",
        "collection_job_driver": jobs + "min_collection_job_retry_delay_s: 1\nmax_collection_job_retry_delay_s: 1\n"
                                        "collection_job_retry_delay_exponential_factor: 1.0\n",
        "interop": f"listen_address: 127.0.0.1:{port}\naggregator_address: 127.0.0.1:{port + 1}\n"
                   "health_check_peers:\n" + "".join(f"  - http://127.0.0.1:{port + 10 + i}/healthz\n"
                                                    for i, _ in enumerate(DAEMONS)),
        "key_rotator": "key_rotator:\n  hpke: {}\n",
    }
    return {name: common + health[name] + own[name] for name in names}


def _log(run: Path, name: str) -> Any:
    """``run/NAME.log``, appended to (Janus logs JSON lines on its standard output)."""
    return open(run / f"{name}.log", "ab")  # noqa: SIM115 (the child's, for its life)


def _as_postgres(*cmd: str, log: Path | None = None, check: bool = True) -> None:
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (closed by the child's exit)
    subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=check, stdout=out, stderr=subprocess.STDOUT)


def start_database(run: Path, janus: Path, pg_port: int) -> str:
    """A fresh cluster in ``run/pgdata`` on ``pg_port``, Janus's schema applied; its URL."""
    data = run / "pgdata"
    run.mkdir(parents=True, exist_ok=True)
    shutil.chown(run, "postgres")
    if data.exists():
        shutil.rmtree(data)
    _as_postgres(str(PG_BIN / "initdb"), "-U", "postgres", "--auth=trust", "-D", str(data), log=run / "initdb.log")
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(run / "postgres.log"), "-w", "start",
                 "-o", f"-p {pg_port} -k {run} -c listen_addresses=127.0.0.1 -c fsync=on")
    for migration in sorted((janus / "db").glob("*.up.sql")):
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(pg_port), "-U",
                        "postgres", "-f", str(migration)], check=True, stdout=subprocess.DEVNULL)
    return f"postgres://postgres@127.0.0.1:{pg_port}/postgres"


def start(janus: Path, run: Path, port: int) -> list[subprocess.Popen[bytes]]:
    """The database, the key rotator (once) and the five processes; waited for until the interop API is ready."""
    bin_dir = janus / "target" / "release"
    db_url = start_database(run, janus, port + 352)
    env = dict(os.environ, DATASTORE_KEYS=base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode(),
               RUST_LOG=os.environ.get("RUST_LOG", "info"))
    for name, text in _configs(port, db_url).items():
        (run / f"{name}.yaml").write_text(text)
    subprocess.run([str(bin_dir / "janus_aggregator"), "key_rotator", "--config-file", str(run / "key_rotator.yaml")],
                   check=True, env=env, stdout=_log(run, "key_rotator"), stderr=subprocess.STDOUT)
    procs = []
    for name in DAEMONS:
        procs.append(subprocess.Popen([str(bin_dir / "janus_aggregator"), name, "--config-file",
                                       str(run / f"{name}.yaml")], env=env, stdout=_log(run, name),
                                      stderr=subprocess.STDOUT))
    procs.append(subprocess.Popen([str(bin_dir / "janus_interop"), "janus_interop_aggregator", "--config-file",
                                   str(run / "interop.yaml")], env=env, stdout=_log(run, "interop"),
                                  stderr=subprocess.STDOUT))
    deadline = time.monotonic() + 120
    while True:
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/internal/test/ready", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=5) as resp:
                if resp.status == 200:
                    return procs
        except OSError:
            dead = [p.args[1] for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                stop(procs, run)
                raise SystemExit(f"Janus did not start (exited: {dead}); see the logs in {run}") from None
            time.sleep(0.5)


def stop(procs: list[subprocess.Popen[bytes]], run: Path) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(run / "pgdata"), "-m", "fast", "-w", "stop", check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--janus", type=Path, required=True, help="the Janus source tree, built (target/release)")
    parser.add_argument("--dir", type=Path, required=True, help="a folder for the database, configs and logs")
    parser.add_argument("--port", type=int, default=9080, help="the interop API's port (the aggregator's is +1)")
    args = parser.parse_args(argv)
    procs = start(args.janus.resolve(), args.dir.resolve(), args.port)
    print(f"http://127.0.0.1:{args.port}", flush=True)
    # Ctrl-C or SIGTERM stops everything; SIGINT is handled even where a shell started this in the background,
    # which ignores it there
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while all(p.poll() is None for p in procs):
            time.sleep(1)
        print("a Janus process exited; see the logs in", args.dir, file=sys.stderr)
    except KeyboardInterrupt:
        pass
    stop(procs, args.dir.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
