"""A leader and a helper each scaled out over processes, killed at random (issue 86, item 4; docs/scale-out.md).

Every process is ``ldp serve --role leader|helper --replica NAME`` over its side's one folder store
(:mod:`ldp.aggregators.scale_out`): ``--doors`` leader replicas take the uploads (``aggregate_every = 0``),
``--drivers`` leader replicas plan and drive the jobs, each with a helper replica of its own (``--drivers`` helper
replicas, the leader's peer being one of them). Devices upload each report to a door at random, and again to another
door when no answer came (a killed door); some reports are uploaded to two doors on purpose (a device's retry whose
first answer was lost). Meanwhile a process of either side, at random, is killed with SIGKILL and started again
under its name, ``--kills`` times. Then the window is collected (``ldp collect`` from a driver, waiting while a job
is held by a replica that died): the script exits 0 when its sums are exactly the reports' (each counted once,
whichever doors stored it and whichever drivers and helpers ran its job), 1 otherwise.

    python simulations/aggregator_replicas.py                       # 3 doors, 2 drivers and 2 helpers, 2000 reports
    python simulations/aggregator_replicas.py --reports 500 --kills 4

``tests/aggregators/test_scale_out.py`` runs it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ldp_interop_api import free_port, start_serve

BUCKETS = 8
WINDOW = 3600
PRECISION = 60


class Replica:
    """One ``ldp serve --replica NAME`` process: started, killed (SIGKILL) and started again on its port."""

    def __init__(self, role: str, name: str, config: Path, root: Path) -> None:
        self.role, self.name, self.config, self.root = role, name, config, root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = start_serve(["--role", self.role, "--config", str(self.config), "--replica", self.name,
                                 "--port", str(self.port)], self.url, self.root, self.root / f"{self.name}.log")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def _secret(path: Path, text: str) -> None:
    from ldp.web.secret_files import write_secret

    write_secret(path, text)


def deployment(root: Path, doors: int, drivers: int) -> tuple[Any, dict[str, Any], list[Replica], list[Replica],
                                                                  list[Replica]]:
    """Keys, the task, the configs and the replicas (not started): (task, keys, doors, drivers, helpers)."""
    from ldp import prio
    from ldp.aggregators.config import save_keypair
    from ldp.aggregators.task import Noise, Task, b64
    from ldp.ingest.config import token_sha256

    keys = {name: prio.HpkeKeypair.generate(i) for i, name in ((1, "leader"), (2, "helper"), (7, "collector"))}
    for name, pair in keys.items():
        (root / name).mkdir()
        save_keypair(root / name / "hpke.json", pair)
    peer, collector = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    _secret(root / "collector" / "leader.token", collector)
    helpers = [Replica("helper", f"h{i + 1}", root / "helper" / "helper.toml", root / "helper")
               for i in range(drivers)]
    driving = [Replica("leader", f"j{i + 1}", root / "leader" / f"j{i + 1}.toml", root / "leader")
               for i in range(drivers)]
    taking = [Replica("leader", f"d{i + 1}", root / "leader" / "doors.toml", root / "leader") for i in range(doors)]
    task = Task(task_id=secrets.token_bytes(32), app="replicas", metric="m", vdaf="Prio3Histogram",
                vdaf_params={"length": BUCKETS}, window_seconds=WINDOW, min_batch_size=10,
                leader_url=driving[0].url + "/", helper_url=helpers[0].url + "/",
                collector_hpke_config=keys["collector"].config.to_bytes(), time_precision=PRECISION, noise=Noise())
    verify = b64(secrets.token_bytes(task.prio3().verify_key_size)) + "\n"
    for org in ("leader", "helper", "collector"):
        task.save(root / org / "m.task.json")
    entry = '[[tasks]]\nfile = "m.task.json"\nverify_key_file = "m.verify"\n'
    for org in ("leader", "helper"):
        _secret(root / org / "m.verify", verify)
    (root / "helper" / "helper.toml").write_text(
        f'role = "helper"\nstore = "store"\nhpke_key = "hpke.json"\n[peer]\ntoken_sha256 = "{token_sha256(peer)}"\n'
        + entry)
    _secret(root / "leader" / "helper.token", peer)
    head = (f'role = "leader"\nstore = "store"\nhpke_key = "hpke.json"\njob_size = 150\njob_lease = 3\n'
            f'[collector]\ntoken_sha256 = "{token_sha256(collector)}"\n')
    for i, driver in enumerate(driving):
        driver.config.write_text(head.replace("job_lease", "aggregate_every = 0.5\njob_lease")
                                 + f'[peer]\nurl = "{helpers[i].url}"\ntoken_file = "helper.token"\n' + entry)
    (root / "leader" / "doors.toml").write_text(head.replace("job_lease", "aggregate_every = 0\njob_lease")
                                                + f'[peer]\nurl = "{helpers[0].url}"\ntoken_file = "helper.token"\n'
                                                + entry)
    return task, keys, taking, driving, helpers


def upload_all(doors: list[Replica], task: Any, reports: list[bytes], rng: random.Random, twice: float
               ) -> Counter[int]:
    """Each report to a door at random until one answers 201 or 409 (a door that does not answer: another), and a
    ``twice`` share of them to a second door as well; the answers' statuses."""
    from ldp.aggregators.task import b64

    path = f"/tasks/{b64(task.task_id)}/reports"
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    seeds = [rng.randrange(2 ** 32) for _ in range(8)]

    def send(part: list[bytes], seed: int) -> None:
        r = random.Random(seed)
        for body in part:
            for _copy in range(2 if r.random() < twice else 1):
                while True:
                    door = r.choice(doors)
                    try:
                        conn = http.client.HTTPConnection("127.0.0.1", door.port, timeout=30)
                        conn.request("PUT", path, body=body, headers={"Content-Type": "application/dap-report"})
                        status = conn.getresponse().status
                        conn.close()
                    except OSError:
                        time.sleep(0.05)
                        continue
                    if status in (201, 409):
                        with lock:
                            statuses[status] += 1
                        break
                    time.sleep(0.05)  # 503 while a door starts: try again
    threads = [threading.Thread(target=send, args=(reports[i::8], seeds[i])) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def killer(replicas: list[Replica], kills: int, rng: random.Random, done: threading.Event, log: Any) -> list[str]:
    """SIGKILL a replica at random every 0.3-1.2 s, and start it again, ``kills`` times (or until ``done``)."""
    killed: list[str] = []
    for _ in range(kills):
        if done.wait(rng.uniform(0.3, 1.2)):
            break
        victim = rng.choice(replicas)
        victim.kill()
        killed.append(victim.name)
        log(f"  killed {victim.name} (SIGKILL)")
        time.sleep(rng.uniform(0.0, 0.5))
        victim.start()
    return killed


def run(reports_n: int, doors_n: int, drivers_n: int, kills: int, seed: int, log: Any = print) -> dict[str, Any]:
    from ldp import prio

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="ldp-replicas-") as tmp:
        root = Path(tmp)
        task, keys, doors, drivers, helpers = deployment(root, doors_n, drivers_n)
        everyone = [*helpers, *drivers, *doors]
        now = int(time.time())
        window = now - now % WINDOW - WINDOW  # the window before this one: collected as soon as its jobs are done
        values = [rng.randrange(BUCKETS) for _ in range(reports_n)]
        vdaf = task.prio3()
        reports = [prio.seal_report(vdaf, v, task_id=task.task_id, time=window + PRECISION,
                                    leader=keys["leader"].config, helper=keys["helper"].config,
                                    time_precision=PRECISION) for v in values]
        began = time.monotonic()
        try:
            for r in everyone:
                r.start()
            done = threading.Event()
            killed: list[str] = []
            chaos = threading.Thread(target=lambda: killed.extend(killer(everyone, kills, rng, done, log)))
            chaos.start()
            statuses = upload_all(doors, task, reports, rng, 0.05)
            log(f"  uploaded {reports_n} reports: {dict(statuses)}")
            chaos.join()  # every kill done, during the uploads or the jobs after them
            result = collect(root, drivers[0], window)
        finally:
            for r in everyone:
                r.stop()
    truth = [values.count(b) for b in range(BUCKETS)]
    exact = result.get("sums") == truth and result.get("n") == reports_n
    return {"reports": reports_n, "doors": doors_n, "drivers": drivers_n, "helpers": drivers_n,
            "killed": killed, "statuses": {str(k): v for k, v in statuses.items()},
            "collected": {k: result.get(k) for k in ("n", "sums", "refused")}, "truth": truth, "exact": exact,
            "seconds": round(time.monotonic() - began, 1)}


def collect(root: Path, driver: Replica, window: int) -> dict[str, Any]:
    """``ldp collect`` of ``window`` from ``driver`` (waiting while jobs are held): the result document."""
    out = root / "collector" / "result.json"
    done = subprocess.run([sys.executable, "-m", "ldp", "collect", "--task", str(root / "collector" / "m.task.json"),
                           "--key", str(root / "collector" / "hpke.json"), "--token-file",
                           str(root / "collector" / "leader.token"), "--window", str(window), "--leader",
                           driver.url + "/", "--wait", "180", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=root)
    if done.returncode != 0:
        return {"error": done.stderr[-3000:]}
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reports", type=int, default=2000)
    p.add_argument("--doors", type=int, default=3)
    p.add_argument("--drivers", type=int, default=2, help="leader drivers, and as many helper replicas")
    p.add_argument("--kills", type=int, default=8)
    p.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "big"))
    args = p.parse_args(argv)
    out = run(args.reports, args.doors, args.drivers, args.kills, args.seed,
              log=lambda m: print(m, file=sys.stderr, flush=True))
    out["seed"] = args.seed
    print(json.dumps(out))
    return 0 if out["exact"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
