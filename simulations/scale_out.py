"""Collection past one machine, end to end (issue 50). Prints one JSON line.

Starts an S3-compatible server (moto in server mode, from the ``test`` extra), ``--replicas`` ``ldp serve``
processes over one bucket (each its own replica name, data folder and port), and ``--devices`` simulated devices,
each a real :class:`ldp.client.TelemetryClient` with its own state file, recording reports and uploading them in
``--rounds`` rounds through the real uploader, given the list of every replica's endpoint (rotated per device, so
the load spreads; a replica that does not answer makes the uploader fail over to the next). Once ``--kill-at`` of
the uploads are done, one replica is SIGKILLed under load and restarted a second later (from its own data folder:
it takes its dead claim on its name over at once). Once the devices are done, a second ``ldp serve`` under each
running replica's name is started, and must be refused (``same_name_replicas_refused``). When the last arrival
window has ended, ``--shuffles`` ``ldp shuffle`` processes are started at once over the same chunks: one holds
the store's shuffler lease and mixes every replica's chunks into anonymized segments, the others are refused while
it runs (``concurrent_shuffles_refused``; one that starts after it ended finds nothing to mix). ``ldp fold s3://…
--engine dask`` folds the segments on a local ``dask.distributed`` cluster.

The line says what the devices had acknowledged, what the shuffled segments hold (``lost``: acknowledged lines
missing from them; ``duplicated``: lines there more often than acknowledged — both must be 0), what the Dask
aggregation counted, the anonymity set the shuffler achieved (the fewest reports a released window holds), the
stale-write cases of ``simulations/stale_writes.py`` run on the same S3 server (``stale_writes_harmless``: the
kinds tried, both engines, and the failures by case: none when every stale write is harmless) and the wall time::

    python simulations/scale_out.py                       # 3 replicas, 200 devices
    python simulations/scale_out.py --devices 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests): its siblings, after the
    sys.path.append(str(Path(__file__).resolve().parent))  # repository (benchmark.py --source puts that first)
import stale_writes  # noqa: E402  (the stale-write cases)
from bench_serve import Server, free_port  # noqa: E402  (the ldp serve harness)

from ldp.client import TelemetryClient  # noqa: E402
from ldp.ingest.config import new_token, token_sha256  # noqa: E402
from ldp.storage import open_store  # noqa: E402

APP = "scale"
BUCKET = "ldp-scale-out"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "ldp-sim", "AWS_SECRET_ACCESS_KEY": "ldp-sim-secret",
               "AWS_DEFAULT_REGION": "us-east-1"}


def spec_doc(window_seconds: int) -> dict[str, Any]:
    """Two metrics; short windows, so the simulation's windows end (and are mixed) within the run."""
    return {"spec_version": 1, "name": APP, "window_seconds": window_seconds,
            "budget": {"per_window": 50, "lifetime": 10000},
            "upload": {"min_interval_seconds": 0, "max_batch": 4},
            "metrics": {"color": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 8},
                                  "budget": {"per_report": 1}},
                        "flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}}}}


@contextmanager
def s3_server(log: Path) -> Any:
    """moto's S3-compatible server in its own process, with the bucket made."""
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=out)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        import boto3

        deadline = time.monotonic() + 30
        while True:
            try:
                boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                             aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                             aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=BUCKET)
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the S3-compatible server did not start; see {log}") from None
                time.sleep(0.1)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(30)


def outbox_lines(path: Path) -> Counter[str]:
    """The lines in a device's outbox (read beside the client's own connection): what is not acknowledged yet."""
    import sqlite3

    db = sqlite3.connect(path)
    try:
        return Counter(row[0] for row in db.execute("SELECT line FROM ldp_client_outbox"))
    finally:
        db.close()


class Devices:
    """The devices' threads and what they saw: lines acknowledged, uploads done."""

    def __init__(self, n: int, urls: list[str], token: str, spec: Path, work: Path, rounds: int, per_round: int,
                 threads: int) -> None:
        self.n, self.urls, self.token, self.spec, self.work = n, urls, token, spec, work
        self.rounds, self.per_round, self.threads = rounds, per_round, threads
        self.acked: Counter[str] = Counter()
        self.uploads = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def _device(self, i: int) -> tuple[TelemetryClient, list[str], Path]:
        path = self.work / f"device-{i:05d}.db"
        k = i % len(self.urls)  # this device's order: its replica first, then the others
        return TelemetryClient(self.spec, path), self.urls[k:] + self.urls[:k], path

    def _worker(self, mine: list[int]) -> None:
        devices = [self._device(i) for i in mine]
        try:
            for r in range(self.rounds):
                for j, (client, urls, path) in enumerate(devices):
                    for k in range(self.per_round):
                        if (r + k + j) % 2:
                            client.record("color", (mine[j] + k) % 8)
                        else:
                            client.record("flag", (mine[j] + r) % 3 == 0)
                    before = outbox_lines(path)
                    try:
                        client.upload(urls, self.token, timeout=5, max_attempts=30, max_delay=0.5)
                    except Exception as exc:  # reported: the lines stay in the outbox for the next round
                        with self.lock:
                            self.errors.append(f"{type(exc).__name__}: {exc}")
                    delivered = before - outbox_lines(path)  # what the upload acknowledged, exactly
                    with self.lock:
                        self.acked.update(delivered)
                        self.uploads += 1
        finally:
            for client, _, _ in devices:
                client.close()

    def start(self) -> list[threading.Thread]:
        groups = [list(range(t, self.n, self.threads)) for t in range(self.threads)]
        out = [threading.Thread(target=self._worker, args=(g,), daemon=True) for g in groups if g]
        for t in out:
            t.start()
        return out


def _restore(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _ldp(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    res = subprocess.run([sys.executable, "-P", "-m", "ldp", *args], env=env, capture_output=True, text=True,
                         timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"ldp {args[0]} failed ({res.returncode}): {res.stderr[-2000:]}")
    return json.loads(res.stdout)


def _start_all(servers: list[Server]) -> None:
    """Start the replicas at once (each waited for until healthy): they start independently of each other."""
    with ThreadPoolExecutor(len(servers)) as pool:
        for future in [pool.submit(s.start) for s in servers]:
            future.result()


def _same_names_refused(configs: list[Path], work: Path, env: dict[str, str]) -> int:
    """Start a second ``ldp serve`` under each running replica's name (its own data folder and port), all at
    once: how many were refused (status 3, naming the first)."""
    procs = []
    for config in configs:
        twin = work / f"twin-{config.name}"
        twin.write_text(config.read_text().replace('data_dir = "', 'data_dir = "twin-', 1))
        procs.append(subprocess.Popen([sys.executable, "-P", "-m", "ldp", "serve", "--config", str(twin), "--port",
                                       str(free_port())], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    try:
        errs = [proc.communicate(timeout=120)[1] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:  # a timeout: not refused in time
                proc.kill()
                proc.wait()
    return sum(proc.returncode == 3 and "is held by" in err for proc, err in zip(procs, errs, strict=True))


def _shuffles(k: int, args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], int]:
    """``k`` ``ldp shuffle`` processes started at once: the run that mixed (or the last "nothing to mix") and how
    many were refused because another held the lease."""
    procs = [subprocess.Popen([sys.executable, "-P", "-m", "ldp", "shuffle", *args], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(k)]
    outs = [(p, *p.communicate(timeout=600)) for p in procs]
    refused = sum(p.returncode == 3 and "is held by" in err for p, _, err in outs)
    ran = [json.loads(out) for p, out, _ in outs if p.returncode == 0]
    failed = [err for p, _, err in outs if p.returncode not in (0, 3)]
    if failed or not ran:
        raise RuntimeError(f"ldp shuffle failed: {(failed or ['every run refused'])[0][-2000:]}")
    return max(ran, key=lambda r: r["run"] is not None), refused


def run(replicas: int = 3, devices: int = 200, rounds: int = 3, per_round: int = 5, window_seconds: int = 10,
        kill_at: float = 0.4, threads: int = 16, work: Path | None = None, shuffles: int = 3,
        stale_dask: bool = True) -> dict[str, Any]:
    """One collection (module docstring); the result line as a dict."""
    t0 = time.monotonic()
    with ExitStack() as stack:
        saved = {k: os.environ.get(k) for k in CREDENTIALS}
        os.environ.update(CREDENTIALS)  # the store's credentials: every process started from here inherits them
        stack.callback(_restore, saved)
        env = dict(os.environ)
        work = work or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ldp-scale-out-")))
        endpoint = stack.enter_context(s3_server(work / "s3.log"))
        url = f"s3://{BUCKET}/run-{time.time_ns()}"
        spec = work / "spec.json"
        spec.write_text(json.dumps(spec_doc(window_seconds)))
        token = new_token()
        servers, configs = [], []
        for r in range(1, replicas + 1):
            config = work / f"replica-{r}.toml"
            config.write_text(f'data_dir = "data-{r}"\nreplica = "r{r}"\n[fold]\nevery_seconds = 0\n'
                              f'[storage]\nurl = "{url}"\nendpoint_url = "{endpoint}"\nregion_name = "us-east-1"\n'
                              f'[apps.{APP}]\ntoken_sha256 = "{token_sha256(token)}"\nspecs = ["spec.json"]\n')
            configs.append(config)
            server = Server(config, free_port(), work / f"replica-{r}.log")
            stack.callback(lambda s=server: s.proc is not None and s.proc.poll() is None and s.stop())
            servers.append(server)
        _start_all(servers)
        urls = [f"http://127.0.0.1:{s.port}/v1/reports" for s in servers]
        (work / "devices").mkdir()
        fleet = Devices(devices, urls, token, spec, work / "devices", rounds, per_round, threads)
        workers = fleet.start()
        killed = 0
        victim = servers[-1]
        while any(t.is_alive() for t in workers):
            if not killed and fleet.uploads >= kill_at * devices * rounds:
                victim.kill()  # under load: its commits in flight are not acknowledged, the devices fail over
                killed = 1
                time.sleep(1.0)
                victim.start()
            time.sleep(0.01)
        for t in workers:
            t.join()
        same_name_refused = _same_names_refused(configs, work, env)  # while every replica (restarted too) runs
        for s in servers:
            s.stop()
        time.sleep(max(0.0, (time.time() // window_seconds + 1) * window_seconds - time.time()) + 1.5)
        opts = ["--store-option", f"endpoint_url={endpoint}"]
        shuffled, shuffles_refused = _shuffles(shuffles, ["--store", url, *opts, "--app", APP, "--grace", "1",
                                                          "--spec", str(spec), "--min-reports", "1", "--json"], env)
        closed = f"{url}/apps/{APP}/segments/closed"
        summary = _ldp(["fold", closed, *opts, "--spec", str(spec), "--out", str(work / "job"), "--by-window",
                        "--engine", "dask", "--json", "-q"], env)
        store = open_store(url, {"endpoint_url": endpoint})
        stored: Counter[str] = Counter()
        size = 0
        for key in store.list(f"apps/{APP}/segments/closed/"):
            data = store.get(key)
            size += len(data)
            stored.update(data.decode().splitlines())
        released = [w for w in shuffled["windows"].values() if "withheld" not in w]
        harmless = stale_writes.run(lambda name: open_store(f"{url}-stale/{name}", {"endpoint_url": endpoint}),
                                    dask=stale_dask)
        return {"replicas": replicas, "devices": devices, "rounds": rounds, "uploads": fleet.uploads,
                "upload_errors": len(fleet.errors), "acknowledged": sum(fleet.acked.values()),
                "stored": sum(stored.values()), "counted": summary["accepted"],
                "lost": sum((fleet.acked - stored).values()), "duplicated": sum((stored - fleet.acked).values()),
                "duplicates_dropped": shuffled["duplicates"], "killed": killed,
                "same_name_replicas_refused": same_name_refused, "concurrent_shuffles": shuffles,
                "concurrent_shuffles_refused": shuffles_refused,
                "windows": len(released), "anonymity_set": min((w["reports"] for w in released), default=0),
                "segment_bytes_per_report": round(size / max(1, sum(stored.values())), 1),
                "stale_writes_harmless": {"kinds": len(harmless["kinds"]), "failures": harmless["failures"]},
                "seconds": round(time.monotonic() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--devices", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="uploads per device")
    ap.add_argument("--per-round", type=int, default=5, help="reports a device records before each upload")
    ap.add_argument("--window-seconds", type=int, default=10, help="the spec's window (arrival windows mixed)")
    ap.add_argument("--kill-at", type=float, default=0.4, help="share of the uploads done when a replica is killed")
    ap.add_argument("--threads", type=int, default=16, help="device threads")
    ap.add_argument("--shuffles", type=int, default=3, help="ldp shuffle processes started at once")
    ap.add_argument("--no-stale-dask", action="store_true", help="the stale-write cases of the local engine only")
    args = ap.parse_args(argv)
    out = run(args.replicas, args.devices, args.rounds, args.per_round, args.window_seconds, args.kill_at,
              args.threads, shuffles=args.shuffles, stale_dask=not args.no_stale_dask)
    print(json.dumps(out))
    return 0 if out["lost"] == 0 and out["duplicated"] == 0 and out["counted"] == out["acknowledged"] \
        and not out["stale_writes_harmless"]["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
