"""Tests of ldp.client.runtime (the telemetry client runtime) and of the ledger's atomic charge.

Crash safety and concurrency run real processes: children killed at exact points of a
transaction (a private fault hook) or by SIGKILL at random moments, and several processes
recording into one state file at once."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from support import ROOT

from ldp.client.runtime import PendingItem, StateError, TelemetryClient
from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, LedgerError, PrivacyCost
from ldp.spec import CollectionSpec, EnvelopeError, parse_envelope

DAY = 86400.0
T0 = DAY * 20000 + 3600.0
LN3 = math.log(3)


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def spec_doc(**changes) -> dict:
    d = {
        "spec_version": 1, "name": "test_app",
        "budget": {"per_window": 4, "lifetime": 10},
        "upload": {"min_interval_seconds": 3600, "max_batch": 3},
        "metrics": {
            "color": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3, "labels": ["r", "g", "b"]},
                      "budget": {"per_report": 1, "per_window": 2, "lifetime": 5}},
            "flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
            "page": {"protocol": "rappor", "params": {"num_bloombits": 16, "num_hashes": 2, "num_cohorts": 4,
                                                      "p": 0.5, "q": 0.75, "f": 0.5}, "budget": {"per_report": 1.1}},
        },
    }
    d.update(changes)
    return d


SPEC = CollectionSpec.from_dict(spec_doc())
EPS_ONE = SPEC.params("page").epsilon_one  # ≈ 1.074
EPS_INF = SPEC.params("page").epsilon_inf  # 4 ln 3 ≈ 4.394


def open_client(tmp_path: Path, clock: Clock | None = None, spec: CollectionSpec = SPEC, **kw) -> TelemetryClient:
    rng = kw.pop("rng", 1)
    return TelemetryClient(spec, tmp_path / "state.db", clock=clock or Clock(), rng=rng, simulation=True, **kw)


def check_invariants(path: Path) -> dict:
    """No lost report, no orphan: every charge has its outbox row or was uploaded, and vice versa."""
    db = sqlite3.connect(path)
    try:
        charges = db.execute("SELECT count(*), coalesce(sum(epsilon), 0) FROM ldp_ledger_charges").fetchone()
        outbox = db.execute("SELECT count(*) FROM ldp_client_outbox").fetchone()[0]
        uploaded = db.execute("SELECT coalesce(sum(reports), 0) FROM ldp_client_uploads").fetchone()[0]
        orphans = db.execute("SELECT count(*) FROM ldp_client_outbox o LEFT JOIN ldp_ledger_charges c "
                             "ON c.id = o.charge WHERE c.id IS NULL").fetchone()[0]
        states = {r[0] for r in db.execute("SELECT DISTINCT state FROM ldp_ledger_charges")}
    finally:
        db.close()
    assert orphans == 0
    assert charges[0] == outbox + uploaded
    assert states <= {"committed"}
    return {"charges": charges[0], "epsilon": charges[1], "outbox": outbox, "uploaded": uploaded}


# --------------------------------------------------------------------------------------------
# The ledger's addition: a charge and the caller's writes in one transaction
# --------------------------------------------------------------------------------------------


def _table_setup(seen: list):
    def setup(db, tables):
        seen.append(tables)
        db.execute("CREATE TABLE IF NOT EXISTS box (charge INTEGER, note TEXT)")
    return setup


def test_charge_atomically_commits_both_or_neither(tmp_path):
    seen: list = []
    led = BudgetLedger(tmp_path / "l.db", metrics={"a": BudgetPolicy(per_window=PrivacyCost(1.0))},
                       clock=Clock(), setup=_table_setup(seen))
    assert seen == [frozenset()]
    out = led.charge_atomically("a", PrivacyCost(0.5), lambda r, db: db.execute(
        "INSERT INTO box VALUES (?, 'kept')", (r.id,)) and (r.window, r.cost))
    assert out == (20000, PrivacyCost(0.5))
    assert [h["state"] for h in led.history()] == ["committed"]

    def broken(r, db):
        db.execute("INSERT INTO box VALUES (?, 'lost')", (r.id,))
        raise RuntimeError("randomizer failed")
    with pytest.raises(RuntimeError):
        led.charge_atomically("a", PrivacyCost(0.25), broken)
    assert led.spent("a") == PrivacyCost(0.5) and len(led.history()) == 1  # rolled back with the row

    called = []
    with pytest.raises(BudgetExceeded):
        led.charge_atomically("a", PrivacyCost(0.75), lambda r, db: called.append(r))
    assert called == []
    with pytest.raises(ValueError):
        led.charge_atomically("*", PrivacyCost(0.1), lambda r, db: None)
    with pytest.raises(RuntimeError), led.transaction() as db:
        db.execute("INSERT INTO box VALUES (0, 'rolled back')")
        raise RuntimeError
    led.close()
    db = sqlite3.connect(tmp_path / "l.db")
    assert db.execute("SELECT note FROM box").fetchall() == [("kept",)]
    db.close()
    BudgetLedger(tmp_path / "l.db", clock=Clock(), setup=_table_setup(seen)).close()
    assert "box" in seen[1] and "ldp_ledger_charges" in seen[1]


def test_setup_can_refuse_a_file_and_nothing_is_kept(tmp_path):
    def refuse(db, tables):
        db.execute("CREATE TABLE mine (x)")
        raise LedgerError("not mine")
    with pytest.raises(LedgerError, match="not mine"):
        BudgetLedger(tmp_path / "l.db", setup=refuse)
    db = sqlite3.connect(tmp_path / "l.db")
    assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    db.close()


# --------------------------------------------------------------------------------------------
# record / pending / acknowledge
# --------------------------------------------------------------------------------------------


def test_record_puts_an_envelope_in_the_outbox(tmp_path):
    with open_client(tmp_path) as client:
        ids = [client.record("color", "g"), client.record("flag", True), client.record("page", "example.com")]
        items = client.pending()
        assert [i.id for i in items] == ids and all(isinstance(i, PendingItem) for i in items)
        for item, metric in zip(items, ("color", "flag", "page"), strict=True):
            obj = json.loads(item.line)
            assert list(obj) == ["spec", "metric", "window", "report"]  # no identifier, no timestamp
            assert (obj["spec"], obj["metric"], obj["window"]) == (SPEC.fingerprint, metric, 20000)
            env = parse_envelope(item.line, SPEC)
            assert env.report.fingerprint == SPEC.metrics[metric].params_fingerprint
        assert client.counts() == {m: {"reports": 1, "pending": 1, "uploaded": 0, "discarded": 0}
                                   for m in ("color", "flag", "page")}
        assert client.spent() == PrivacyCost(1.0 + LN3 + EPS_ONE)
        assert client.current_window() == 20000
        secret = client._state.secret.hex()
    text = "\n".join(i.line for i in items)
    assert secret not in text and "state.db" not in text and str(int(T0)) not in text


def test_bad_values_and_unknown_metrics_charge_nothing(tmp_path):
    with open_client(tmp_path) as client:
        for metric, value, exc in (("color", "purple", ValueError), ("color", 3, ValueError),
                                   ("flag", "yes", TypeError), ("page", 12, TypeError), ("size", 1, ValueError)):
            with pytest.raises(exc):
                client.record(metric, value)
        assert client.spent(period="lifetime") == PrivacyCost(0.0)
        assert client.counts() == {} and client.pending() == []


def test_pending_batches_and_upload_interval(tmp_path):
    clock = Clock()
    roomy = CollectionSpec.from_dict(spec_doc(budget={"per_window": 10, "lifetime": 100}))
    with open_client(tmp_path, clock, spec=roomy) as client:
        ids = [client.record("flag", i % 2 == 0) for i in range(3)] + [client.record("color", "r")]
        assert client.next_upload_at() == -math.inf
        assert [i.id for i in client.pending()] == ids[:3]  # max_batch 3, oldest first
        assert [i.id for i in client.pending(limit=2)] == ids[:2]
        assert client.pending(limit=0) == []
        assert client.pending() == client.pending()  # read only until acknowledged
        assert client.acknowledge([ids[0], ids[1], 999]) == 2  # unknown ids ignored
        assert client.acknowledge([ids[0], ids[1]]) == 0  # idempotent
        assert client.next_upload_at() == T0 + 3600
        assert client.pending() == []  # one batch per interval
        clock.t = T0 + 3599
        assert client.pending() == []
        clock.t = T0 - DAY  # a clock set back does not open the interval early
        assert client.pending() == []
        clock.t = T0 + 3600
        assert [i.id for i in client.pending()] == ids[2:]
        assert client.acknowledge([]) == 0 and client.next_upload_at() == T0 + 3600  # nothing done, no new interval
        assert client.counts()["flag"] == {"reports": 3, "pending": 1, "uploaded": 2, "discarded": 0}
        with pytest.raises(TypeError):
            client.acknowledge(["1"])
        with pytest.raises(ValueError):
            client.pending(limit=-1)
    check_invariants(tmp_path / "state.db")


# --------------------------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------------------------


def _refused(client: TelemetryClient, metric: str, value) -> BudgetExceeded:
    before = (client.counts(), client.spent(period="lifetime"), client.pending())
    with pytest.raises(BudgetExceeded) as info:
        client.record(metric, value)
    assert (client.counts(), client.spent(period="lifetime"), client.pending()) == before  # nothing written
    return info.value


def test_metric_window_and_lifetime_caps(tmp_path):
    clock = Clock()
    with open_client(tmp_path, clock) as client:
        client.record("color", "r")
        client.record("color", "g")
        err = _refused(client, "color", "b")
        assert (err.scope, err.period, err.cap) == ("color", "window", PrivacyCost(2.0))
        assert client.remaining("color")["window"] == PrivacyCost(0.0)
        clock.t -= DAY  # a clock set back does not reopen an earlier window
        _refused(client, "color", "b")
        clock.t = T0 + DAY  # the next window
        client.record("color", "b")
        client.record("color", "b")
        clock.t = T0 + 2 * DAY
        client.record("color", "r")  # 5 = the metric's lifetime
        err = _refused(client, "color", "r")
        assert (err.scope, err.period) == ("color", "lifetime")
        assert client.spent("color", "lifetime") == PrivacyCost(5.0)
        assert client.remaining("color") == {"window": PrivacyCost(1.0), "lifetime": PrivacyCost(0.0)}


def test_total_window_and_lifetime_caps(tmp_path):
    clock = Clock()
    with open_client(tmp_path, clock) as client:
        client.record("color", "r")
        client.record("color", "g")
        client.record("flag", True)  # 2 + ln 3 = 3.10 of 4
        err = _refused(client, "flag", False)
        assert (err.scope, err.period) == (BudgetLedger.ALL, "window")
        for day in (1, 2):
            clock.t = T0 + day * DAY
            for _ in range(3):
                client.record("flag", True)
        spent = client.spent(period="lifetime")
        assert spent == PrivacyCost(2 + 7 * LN3)  # 9.69 of 10
        clock.t = T0 + 3 * DAY
        err = _refused(client, "flag", True)
        assert (err.scope, err.period, err.spent) == (BudgetLedger.ALL, "lifetime", spent)


def test_rappor_is_memoized_across_restarts(tmp_path):
    clock = Clock()
    with open_client(tmp_path, clock) as client:
        cohort, secret = client.cohort("page"), client._encoder("page").secret
        enc = client._encoder("page")
        prr = enc.permanent_response(enc.prepare("example.com"))
        client.record("page", "example.com")
        client.record("page", "example.com")
    for day in (1, 2):
        clock.t = T0 + day * DAY
        with open_client(tmp_path, clock, rng=None) as client:
            enc = client._encoder("page")
            assert (client.cohort("page"), enc.secret) == (cohort, secret)
            assert enc.permanent_response(enc.prepare("example.com")) == prr
            client.record("page", "example.com")
            client.record("page", "example.com")
    with open_client(tmp_path, clock) as client:
        # Six reports of one value cost min(6 ε₁, ε∞) = ε∞, not 6 ε₁.
        assert client.spent("page", "lifetime") == PrivacyCost(EPS_INF)
        client.record("page", "other.example")  # a new value pays again
        assert client.spent("page", "lifetime") == PrivacyCost(EPS_INF + EPS_ONE)
        cohorts = {json.loads(i.line)["report"]["payload"]["cohort"] for i in client.pending(limit=3)}
        assert cohorts == {cohort}
        assert client.cohort("color") is None
    other = TelemetryClient(SPEC, tmp_path / "other.db", clock=clock)  # another device: another secret
    assert other._encoder("page").secret != secret
    assert other._encoder("page").secret != client._encoder("page").secret
    other.close()


# --------------------------------------------------------------------------------------------
# The state file: bound to its collection, refused when foreign or damaged
# --------------------------------------------------------------------------------------------


def test_state_is_bound_to_its_collection(tmp_path):
    with open_client(tmp_path) as client:
        client.record("color", "r")
    with pytest.raises(StateError, match="belongs to collection 'test_app', not 'other_app'"):
        open_client(tmp_path, spec=CollectionSpec.from_dict(spec_doc(name="other_app")))
    with pytest.raises(StateError, match="window_seconds"):
        open_client(tmp_path, spec=CollectionSpec.from_dict(spec_doc(window_seconds=3600)))
    with open_client(tmp_path) as client:  # still usable, budget intact
        assert client.spent("color") == PrivacyCost(1.0)


def test_changed_params_keep_old_reports_uploadable(tmp_path):
    with open_client(tmp_path) as client:
        client.record("color", "r")
        client.record("page", "example.com")
        old_cohort = client.cohort("page")
    d = spec_doc()
    d["metrics"]["color"]["params"]["epsilon"] = 0.5
    d["metrics"]["page"]["params"]["num_cohorts"] = 64
    d["upload"]["max_batch"] = 10
    new = CollectionSpec.from_dict(d)
    with open_client(tmp_path, spec=new) as client:
        client.record("color", "g")
        client.record("page", "example.com")
        assert 0 <= client.cohort("page") < 64
        lines = [i.line for i in client.pending(limit=10)]
        assert client.spent("color") == PrivacyCost(1.5)  # the budget carries over
    index = {SPEC.fingerprint: SPEC, new.fingerprint: new}
    envs = [parse_envelope(line, index) for line in lines]
    assert [e.spec for e in envs] == [SPEC.fingerprint, SPEC.fingerprint, new.fingerprint, new.fingerprint]
    assert envs[1].report.payload["cohort"] == old_cohort
    with pytest.raises(EnvelopeError) as info:
        parse_envelope(lines[0], new)
    assert info.value.reason == "unknown_spec"


def _state_file(tmp_path: Path) -> Path:
    with open_client(tmp_path) as client:
        client.record("color", "r")
        client.record("page", "example.com")
    return tmp_path / "state.db"


def _sql(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    for s in statements:
        db.execute(s)
    db.commit()
    db.close()


def _bare_ledger(p: Path) -> None:
    BudgetLedger(p).close()


def _foreign(p: Path) -> None:
    _sql(p, "CREATE TABLE contacts (name TEXT)", "INSERT INTO contacts VALUES ('ada')")


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_bytes(b"not a database, just notes\n" * 300), "not a usable ldp budget ledger"),
    (_foreign, "another application"),
    (lambda p: _foreign(p) or _sql(p, "PRAGMA application_id=123"), "another application"),
    (_bare_ledger, "is a bare budget ledger, not a telemetry client state file"),
])
def test_foreign_files_are_refused_untouched(tmp_path, make, message):
    path = tmp_path / "state.db"
    make(path)
    before = path.read_bytes()
    with pytest.raises(StateError, match=message):
        open_client(tmp_path)
    if message != "is a bare budget ledger, not a telemetry client state file":  # a ledger is WAL already
        assert path.read_bytes() == before


@pytest.mark.parametrize("statements, message", [
    (["DROP TABLE ldp_client_outbox"], r"table\(s\) ldp_client_outbox missing"),
    (["DROP TABLE ldp_ledger_window_totals", "DROP TABLE ldp_ledger_charges"],
     r"table\(s\) ldp_ledger_charges, ldp_ledger_window_totals missing"),
    (["UPDATE ldp_client_meta SET value=hex(randomblob(32)) WHERE key='secret'"], "meta data .* was modified"),
    (["UPDATE ldp_client_meta SET value='test_app' WHERE key='format'"], "state format 'test_app'"),
    (["UPDATE ldp_ledger_meta SET value='00' WHERE key='salt'"], "was modified"),
    (["DELETE FROM ldp_client_meta WHERE key='digest'"], r"meta key\(s\) digest missing"),
])
def test_damaged_state_is_refused(tmp_path, statements, message):
    path = _state_file(tmp_path)
    _sql(path, *statements)
    with pytest.raises(StateError, match=message):
        open_client(tmp_path)


def test_damage_found_later_is_refused(tmp_path):
    path = _state_file(tmp_path)
    _sql(path, "UPDATE ldp_client_cohorts SET cohort=99")
    with open_client(tmp_path, rng=None) as client, pytest.raises(StateError, match="cohort 99"):
        client.record("page", "x")
    _sql(path, "UPDATE ldp_client_meta SET value='soon' WHERE key='last_upload'")
    with open_client(tmp_path) as client, pytest.raises(StateError, match="last_upload"):
        client.pending()


def test_corrupted_pages_are_refused(tmp_path):
    path = _state_file(tmp_path)
    _sql(path, "PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 3 * page
    data[page + 8: 3 * page] = b"\xa5" * (2 * page - 8)
    path.write_bytes(bytes(data))
    with pytest.raises(StateError):
        open_client(tmp_path)


# --------------------------------------------------------------------------------------------
# Crash safety and concurrency, in real processes
# --------------------------------------------------------------------------------------------

CHILD = r"""
import json, os, sys, time
import ldp.client.state
from ldp.client.runtime import BudgetExceeded, TelemetryClient
mode, spec_path, state_path, now = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
client = TelemetryClient(spec_path, state_path, clock=lambda: now)
if mode == "crash":
    point = sys.argv[5]
    ids = [client.record("color", "g"), client.record("page", "example.com")]
    ldp.client.state._fault = lambda p: os._exit(77) if p == point else None
    if point == "acknowledge":
        client.acknowledge(ids)
    else:
        client.record("color", "b")
    os._exit(0)
elif mode == "crash_many":  # killed inside a batch: at the SECOND item's point, or around the transaction
    point = sys.argv[5]
    client.record("color", "g"), client.record("page", "example.com")
    hits = []
    def fault(p):
        if p == point:
            hits.append(p)
            if p in ("before_charge", "committed") or len(hits) == 2:
                os._exit(77)
    ldp.client.state._fault = fault
    client.record_many([("color", "b"), ("page", "example.com")])
    os._exit(0)
elif mode in ("race", "race_many"):
    start, tries = float(sys.argv[5]), int(sys.argv[6])
    while time.time() < start:
        time.sleep(0.001)
    ok = refused = 0
    for _ in range(tries):
        try:
            if mode == "race":
                client.record("flag", True)
            else:
                client.record_many([("flag", True), ("flag", False)])
            ok += 1
        except BudgetExceeded:
            refused += 1
    print(json.dumps({"ok": ok, "refused": refused}))
elif mode in ("encode_crash", "encode_storm"):  # Encoder.encode through a file ledger, no client
    from ldp.encoders import GRREncoder, GRRParams
    from ldp.privacy.ledger import BudgetLedger
    client.close()
    ledger = BudgetLedger(state_path + ".ledger", clock=lambda: now)
    enc = GRREncoder(GRRParams(1.0, 4), ledger=ledger, metric="m")
    enc.encode(1)
    if mode == "encode_crash":  # dies after the charge was written, before COMMIT, inside randomize
        randomize = enc.randomize
        enc.randomize = lambda p: (randomize(p), os._exit(77))
        enc.encode(2)
    while True:
        enc.encode(3)
        print("E", flush=True)
elif mode == "storm":
    i = 0
    while True:
        print("R", client.record("flag", i % 2 == 0), flush=True)
        if i % 7 == 6:
            ids = [item.id for item in client.pending()]
            print("T", *ids, flush=True)
            client.acknowledge(ids)
        i += 1
"""


def _child(tmp_path: Path, *args: object) -> tuple[list[str], dict[str, str]]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return [sys.executable, str(script), *map(str, args)], env


@contextmanager
def _spawn(cmd: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """The child ``cmd`` with text pipes for stdout and stderr. On the way out (a failed assertion too) it is killed
    if still running, its pipes are closed and its status reaped: nothing leaks into a later test's warnings."""
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.stdout.close()
        child.stderr.close()
        child.wait(timeout=30)


def _kill_and_drain(child: subprocess.Popen) -> str:
    """SIGKILL ``child`` and return the rest of its stdout. Read through ``child.stdout`` itself, not
    ``communicate()``: the earlier ``readline()`` calls may have buffered lines past the last one returned,
    and ``communicate()`` reads the raw pipe, so those lines (an acknowledgement's ids, say) would be lost."""
    child.send_signal(signal.SIGKILL)
    with child.stdout, child.stderr:
        out = child.stdout.read()
        child.stderr.read()
    child.wait(timeout=30)
    return out


def _spec_file(tmp_path: Path, d: dict) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize("point", ["before_charge", "charged", "randomized", "inserted", "committed", "acknowledge"])
def test_killed_at_each_step(tmp_path, point):
    spec_path = _spec_file(tmp_path, spec_doc())
    cmd, env = _child(tmp_path, "crash", spec_path, tmp_path / "state.db", T0, point)
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 77, res.stderr
    state = check_invariants(tmp_path / "state.db")
    with open_client(tmp_path, rng=None) as client:
        counts = client.counts()
        committed = point == "committed"
        assert counts["color"] == {"reports": 1 + committed, "pending": 1 + committed, "uploaded": 0,
                                   "discarded": 0}
        # the acknowledgement rolled back
        assert counts["page"] == {"reports": 1, "pending": 1, "uploaded": 0, "discarded": 0}
        assert client.spent("color") == PrivacyCost(1.0 + committed)  # charged iff its report was stored
        assert state["epsilon"] == pytest.approx(1.0 + committed + EPS_ONE)
        assert client.next_upload_at() == -math.inf
        for item in client.pending():
            parse_envelope(item.line, SPEC)
        if not committed:  # the budget left is exactly what it was: no double charge, no lost one
            client.record("color", "r")
        with pytest.raises(BudgetExceeded):
            client.record("color", "r")


@pytest.mark.parametrize("point", ["before_charge", "charged", "randomized", "inserted", "committed"])
def test_killed_inside_a_batch_keeps_all_or_nothing(tmp_path, point):
    d = spec_doc(budget={"per_window": 10, "lifetime": 20})
    spec_path = _spec_file(tmp_path, d)
    cmd, env = _child(tmp_path, "crash_many", spec_path, tmp_path / "state.db", T0, point)
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 77, res.stderr
    check_invariants(tmp_path / "state.db")
    committed = point == "committed"
    with open_client(tmp_path, rng=None, spec=CollectionSpec.from_dict(d)) as client:
        counts = client.counts()
        assert counts["color"] == {"reports": 1 + committed, "pending": 1 + committed, "uploaded": 0,
                                   "discarded": 0}
        assert counts["page"] == {"reports": 1 + committed, "pending": 1 + committed, "uploaded": 0,
                                  "discarded": 0}
        assert client.spent("color") == PrivacyCost(1.0 + committed)
        if not committed:  # the half-stored batch left nothing: the same batch fits again, exactly once
            client.record_many([("color", "b"), ("page", "example.com")])
        with pytest.raises(BudgetExceeded):
            client.record("color", "r")


def _encode_ledger(tmp_path: Path) -> list[dict]:
    with BudgetLedger(tmp_path / "state.db.ledger", clock=Clock()) as ledger:
        return ledger.history()


def test_encode_killed_before_commit_leaves_no_charge(tmp_path):
    """Encoder.encode charges and randomizes in one transaction: dying inside randomize (the charge
    written, not committed) loses charge and report together; the report never left."""
    spec_path = _spec_file(tmp_path, spec_doc())
    cmd, env = _child(tmp_path, "encode_crash", spec_path, tmp_path / "state.db", T0)
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 77, res.stderr
    assert [(h["metric"], h["epsilon"], h["state"]) for h in _encode_ledger(tmp_path)] == [("m", 1.0, "committed")]


def test_encode_sigkilled_at_random_moments_never_hands_out_an_uncharged_report(tmp_path):
    spec_path = _spec_file(tmp_path, spec_doc())
    cmd, env = _child(tmp_path, "encode_storm", spec_path, tmp_path / "state.db", T0)
    returned = 0
    for delay in (0.0, 0.007, 0.019):
        with _spawn(cmd, env) as child:
            lines = [child.stdout.readline() for _ in range(20)]
            assert all(lines), child.stderr.read()
            time.sleep(delay)
            out = _kill_and_drain(child)
        returned += len(lines) + len(out.splitlines())
        history = _encode_ledger(tmp_path)
        assert len(history) >= returned  # every report encode returned was charged, durably
        assert {h["state"] for h in history} == {"committed"}


def test_sigkill_at_random_moments_loses_nothing(tmp_path):
    d = spec_doc(budget={"per_window": 1e6, "lifetime": 1e7}, upload={"min_interval_seconds": 0, "max_batch": 5})
    spec_path = _spec_file(tmp_path, d)
    cmd, env = _child(tmp_path, "storm", spec_path, tmp_path / "state.db", T0)
    seen: set[int] = set()  # outbox ids the child saw committed
    tried: set[int] = set()  # ids it tried to acknowledge
    for delay in (0.0, 0.013, 0.031):
        with _spawn(cmd, env) as child:
            lines = []
            while len(lines) < 25:
                line = child.stdout.readline()
                assert line, child.stderr.read()
                lines.append(line)
            time.sleep(delay)
            out = _kill_and_drain(child)
        assert child.returncode == -signal.SIGKILL
        for line in lines + out.splitlines():
            kind, *ids = line.split()
            (seen if kind == "R" else tried).update(map(int, ids))
        state = check_invariants(tmp_path / "state.db")
        db = sqlite3.connect(tmp_path / "state.db")
        outbox = {r[0] for r in db.execute("SELECT id FROM ldp_client_outbox")}
        db.close()
        assert seen - outbox <= tried  # every report the child saw stored is pending or was acknowledged
        assert state["charges"] >= len(seen)  # no refund: at least what the child saw committed
        with open_client(tmp_path, spec=CollectionSpec.from_dict(d)) as client:
            assert client.spent(period="lifetime").epsilon == pytest.approx(state["charges"] * LN3)


@pytest.mark.parametrize("mode", ["race", "race_many"])
def test_concurrent_processes_share_one_budget(tmp_path, mode):
    n = 10  # reports that fit: 10 records, or 5 batches of 2 (all or nothing)
    d = spec_doc(budget={"per_window": 20, "lifetime": 100})
    d["metrics"]["flag"]["budget"] = {"per_report": 1.1, "per_window": n * LN3}
    spec_path = _spec_file(tmp_path, d)
    start = time.time() + 1.0
    cmd, env = _child(tmp_path, mode, spec_path, tmp_path / "state.db", T0, start, 6)
    results = []
    with ExitStack() as stack:
        children = [stack.enter_context(_spawn(cmd, env)) for _ in range(4)]
        for child in children:
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0, err
            results.append(json.loads(out))
    per = 1 if mode == "race" else 2
    assert sum(r["ok"] for r in results) == n // per
    assert sum(r["refused"] for r in results) == 4 * 6 - n // per
    state = check_invariants(tmp_path / "state.db")
    assert state["charges"] == state["outbox"] == n
    with open_client(tmp_path, spec=CollectionSpec.from_dict(d)) as client:
        assert client.counts() == {"flag": {"reports": n, "pending": n, "uploaded": 0, "discarded": 0}}
        assert client.spent("flag").epsilon == pytest.approx(n * LN3)
