"""The ledger at the speed of one transaction (issue 16 item 4), against the reference paths.

* one SQLite transaction per charged report (``Encoder.encode``, ``TelemetryClient.record``) and
  per batch (``BudgetLedger.charge_many``, ``TelemetryClient.record_many``), with the file kept in
  WAL mode with ``synchronous=FULL`` (the charge is on disk before the report leaves);
* the float cap check (``_first_exceeded``) agrees exactly with the ``PrivacyCost`` arithmetic
  it replaced (hypothesis);
* what a ledger knows without reading the file (:class:`ldp.privacy.ledger_store.Known`) gives exactly
  what reading the file every time gives (hypothesis), sees other connections' commits, and is
  forgotten on rollback;
* a batch is all or nothing, and when it fits it is the same calls one by one (hypothesis).

Crash and multi-process tests of these paths are in tests/client/test_client.py.
"""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ldp.client.runtime import TelemetryClient
from ldp.encoders import GRREncoder, GRRParams
from ldp.privacy import ledger_store as ledger_sql
from ldp.privacy.accountant import (
    BudgetExceeded,
    BudgetLedger,
    BudgetPolicy,
    MemoizedCharge,
    PrivacyCost,
    _cap_limits,
    _first_exceeded,
)
from ldp.privacy.ledger import LedgerDamagedError
from ldp.spec import CollectionSpec, parse_envelope

DAY = 86400.0
T0 = DAY * 20000 + 3600.0
DELTA_MAX = math.nextafter(1.0, 0.0)


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def statements(ledger: BudgetLedger) -> list[str]:
    """Every SQL statement the ledger's connection runs from now on (appended as they run)."""
    seen: list[str] = []
    ledger._db.set_trace_callback(seen.append)
    return seen


# --------------------------------------------------------------------------------------------
# One transaction per report, one per batch
# --------------------------------------------------------------------------------------------


def test_encode_is_one_transaction_per_report(tmp_path):
    """Was reserve (BEGIN..COMMIT) then commit (PRAGMA synchronous=NORMAL, BEGIN..COMMIT, PRAGMA)."""
    with BudgetLedger(tmp_path / "l.db", metrics={"m": BudgetPolicy(per_window=PrivacyCost(100.0))},
                      clock=Clock()) as led:
        enc = GRREncoder(GRRParams(1.0, 4), ledger=led, metric="m")
        enc.encode(1)
        seen = statements(led)
        for _ in range(3):
            enc.encode(2)
        assert seen.count("BEGIN IMMEDIATE") == 3 and seen.count("COMMIT") == 3
        assert not [s for s in seen if "synchronous" in s or s == "ROLLBACK"]
        assert [h["state"] for h in led.history()] == ["committed"] * 4
        assert led._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert led._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: one WAL fsync per COMMIT


def test_record_and_record_many_are_one_transaction_each(tmp_path):
    spec = CollectionSpec.from_dict(SPEC_DOC)
    with TelemetryClient(spec, tmp_path / "s.db", clock=Clock()) as app:
        app.record("color", "r")
        app.record("page", "warm")  # the cohort is drawn once, in its own transaction
        seen = statements(app._ledger)
        app.record("flag", True)
        assert seen.count("BEGIN IMMEDIATE") == 1 and seen.count("COMMIT") == 1
        seen.clear()
        ids = app.record_many([("flag", False), ("page", "a.example"), ("color", "g"), ("page", "b.example")])
        assert seen.count("BEGIN IMMEDIATE") == 1 and seen.count("COMMIT") == 1
        assert len(ids) == 4 and ids == sorted(ids)


# --------------------------------------------------------------------------------------------
# The float cap check against the PrivacyCost arithmetic
# --------------------------------------------------------------------------------------------


def reference_first_exceeded(spent, epsilon, delta, caps) -> int:
    """The check as it was written before: a clamped PrivacyCost per total, then ``+`` and ``fits_within``."""
    for k, cap in enumerate(caps):
        if cap is None:
            continue
        e, d = spent[k]
        so_far = PrivacyCost(max(e, 0.0), min(max(d, 0.0), DELTA_MAX))
        if not (so_far + PrivacyCost(epsilon, delta)).fits_within(cap):
            return k
    return -1


def outcome(fn, *args):
    try:
        return fn(*args)
    except (ValueError, TypeError) as exc:
        return type(exc)


amounts = st.one_of(st.floats(0.0, 10.0), st.sampled_from([0.0, 0.1, 0.3, 1.0, 1e-9, 5e-324]))
stored = st.one_of(amounts, st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-0.0, -1.0, 1e308]))
deltas = st.one_of(st.sampled_from([0.0, 1e-9, 1e-6, 0.5, DELTA_MAX]), st.floats(0.0, DELTA_MAX))
caps = st.one_of(st.none(), st.builds(PrivacyCost, amounts, deltas),
                 st.builds(PrivacyCost, st.sampled_from([0.0, 1.0, 1e308, 1.7976931348623157e308]), deltas))


@settings(max_examples=500, deadline=None)
@given(spent=st.lists(st.tuples(stored, st.one_of(deltas, stored)), min_size=4, max_size=4),
       epsilon=st.one_of(amounts, st.sampled_from([1e308])), delta=deltas, caps=st.lists(caps, min_size=4, max_size=4))
def test_first_exceeded_agrees_with_privacy_cost_arithmetic(spent, epsilon, delta, caps):
    limits = tuple((k, *_cap_limits(c)) for k, c in enumerate(caps) if c is not None)
    assert outcome(_first_exceeded, spent, epsilon, delta, limits) == \
        outcome(reference_first_exceeded, spent, epsilon, delta, caps)


def test_ten_tenths_still_fit_exactly():
    cap = PrivacyCost(1.0)
    limits = ((0, *_cap_limits(cap)),)
    total = 0.0
    for _ in range(10):
        assert _first_exceeded([(total, 0.0)], 0.1, 0.0, limits) == -1
        total += 0.1
    assert _first_exceeded([(total, 0.0)], 0.1, 0.0, limits) == 0


# --------------------------------------------------------------------------------------------
# What the ledger knows without reading, against reading the file every time
# --------------------------------------------------------------------------------------------


class _Forgets(dict):
    """A totals cache that never keeps anything: every charge reads the file."""

    def __setitem__(self, key, value) -> None:
        pass


class ReadsEverything(ledger_sql.Known):
    """The reference: every transaction reads the clock, every charge the totals, from the file."""

    def __init__(self) -> None:
        super().__init__(private=False)
        self.totals = _Forgets()

    def check(self, db: sqlite3.Connection) -> None:
        self.forget()


def reference_ledger(path, **kw) -> BudgetLedger:
    led = BudgetLedger(path, **kw)
    led._known = ReadsEverything()
    led._txn = ledger_sql.Transaction(led._db, led._known)
    return led


METRICS = ("a", "b", "c")
POLICIES = dict(
    total=BudgetPolicy(per_window=PrivacyCost(3.0, 1e-6), lifetime=PrivacyCost(8.0, 1e-5)),
    metrics={"a": BudgetPolicy(per_window=PrivacyCost(1.0)), "b": BudgetPolicy(lifetime=PrivacyCost(2.5, 5e-6))},
)
costs = st.one_of(
    st.builds(PrivacyCost, st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0]), st.sampled_from([0.0, 1e-7, 2e-6])),
    st.builds(lambda key, e: MemoizedCharge(key, PrivacyCost(e), PrivacyCost(e / 2), PrivacyCost(1.2)),
              st.sampled_from([b"x", b"y"]), st.sampled_from([0.3, 0.5])))
charge_ops = st.tuples(st.just("charge"), st.sampled_from(METRICS), costs)
ops = st.lists(st.one_of(
    charge_ops,
    st.tuples(st.just("batch"), st.lists(st.tuples(st.sampled_from(METRICS), costs), max_size=4)),
    st.tuples(st.just("fail"), st.sampled_from(METRICS), costs),  # work raises: rolled back
    st.tuples(st.just("tick"), st.sampled_from([-DAY, -1.0, 0.0, 1.0, DAY / 2, DAY])),
    st.tuples(st.just("spent"), st.sampled_from([*METRICS, BudgetLedger.ALL]), st.sampled_from(["window", "lifetime"])),
), max_size=40)


def apply(led: BudgetLedger, clock: Clock, op: tuple):
    """One operation; returns a comparable result (exceptions as their fields)."""
    try:
        if op[0] == "charge":
            r = led.charge_atomically(op[1], op[2], lambda r, db: r)
            return ("ok", r.metric, r.cost, r.window)
        if op[0] == "batch":
            return ("ok", [(r.metric, r.cost, r.window) for r in led.charge_many(op[1], lambda rs, db: rs)])
        if op[0] == "fail":
            def boom(r, db):
                raise RuntimeError("randomizer failed")
            with pytest.raises(RuntimeError):
                led.charge_atomically(op[1], op[2], boom)
            return ("rolled back",)
        if op[0] == "tick":
            clock.t += op[1]
            return ("window", led.current_window())
        return ("spent", led.spent(op[1], op[2]))
    except BudgetExceeded as exc:
        return ("refused", exc.scope, exc.period, exc.requested, exc.spent, exc.cap, exc.index)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops)
def test_known_values_give_what_reading_the_file_gives(ops):
    fast_clock, ref_clock = Clock(), Clock()
    fast = BudgetLedger(":memory:", clock=fast_clock, **POLICIES)
    ref = reference_ledger(":memory:", clock=ref_clock, **POLICIES)
    fast._salt = ref._salt  # same memo keys
    with fast, ref:
        for op in ops:
            assert apply(fast, fast_clock, op) == apply(ref, ref_clock, op), op
        strip = lambda h: [{k: v for k, v in row.items() if k != "id"} for row in h]  # noqa: E731
        assert strip(fast.history()) == strip(ref.history())
        for metric in (*METRICS, BudgetLedger.ALL):
            assert fast.remaining(metric) == ref.remaining(metric)


def test_other_connections_commits_are_seen(tmp_path):
    """Two ledger objects (two connections, as two processes) on one file, and a third writer."""
    path = tmp_path / "shared.db"
    clock = Clock()
    policy = dict(metrics={"m": BudgetPolicy(per_window=PrivacyCost(1.0))})
    with BudgetLedger(path, clock=clock, **policy) as one, BudgetLedger(path, clock=clock, **policy) as two:
        one.charge_atomically("m", PrivacyCost(0.5), lambda r, db: None)
        two.charge_atomically("m", PrivacyCost(0.25), lambda r, db: None)
        with pytest.raises(BudgetExceeded) as exc:
            one.charge_atomically("m", PrivacyCost(0.5), lambda r, db: None)
        assert exc.value.spent == PrivacyCost(0.75)
        one.charge_atomically("m", PrivacyCost(0.25), lambda r, db: None)
        with pytest.raises(BudgetExceeded):
            two.charge_atomically("m", PrivacyCost(0.01), lambda r, db: None)
        # the clock another process moved forward (a day later) is read, not the one this object knew
        raw = sqlite3.connect(path)
        raw.execute("UPDATE ldp_ledger_meta SET value=? WHERE key='clock'", (repr(T0 + DAY),))
        raw.commit()
        assert one.charge_atomically("m", PrivacyCost(0.5), lambda r, db: r.window) == 20001
        raw.execute("UPDATE ldp_ledger_meta SET value='garbage' WHERE key='clock'")
        raw.commit()
        raw.close()
        with pytest.raises(LedgerDamagedError):
            two.charge_atomically("m", PrivacyCost(0.1), lambda r, db: None)


@pytest.mark.parametrize("where", [":memory:", "file"])
def test_a_rolled_back_charge_is_not_remembered(tmp_path, where):
    led = BudgetLedger(tmp_path / "l.db" if where == "file" else ":memory:", clock=Clock(),
                       metrics={"m": BudgetPolicy(per_window=PrivacyCost(1.0))})

    def boom(r, db):
        raise RuntimeError("randomizer failed")
    with led:
        for _ in range(3):
            with pytest.raises(RuntimeError):
                led.charge_atomically("m", PrivacyCost(0.6), boom)
        led.charge_atomically("m", PrivacyCost(0.6), lambda r, db: None)  # the failed ones left nothing
        with pytest.raises(BudgetExceeded):
            led.charge_many([("m", PrivacyCost(0.3)), ("m", PrivacyCost(0.3))], lambda rs, db: None)
        led.charge_atomically("m", PrivacyCost(0.4), lambda r, db: None)  # the refused batch left nothing
        assert led.spent("m") == PrivacyCost(1.0)


# --------------------------------------------------------------------------------------------
# charge_many: all or nothing, the same as one by one when it fits
# --------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(prefix=st.lists(charge_ops, max_size=6), batch=st.lists(st.tuples(st.sampled_from(METRICS), costs), max_size=6))
def test_charge_many_is_the_same_calls_in_a_row_or_nothing(prefix, batch):
    many, seq = (BudgetLedger(":memory:", clock=Clock(), **POLICIES) for _ in range(2))
    seq._salt = many._salt
    with many, seq:
        for op in prefix:
            apply(many, Clock(), op)
            apply(seq, Clock(), op)
        before = many.history()
        got = apply(many, Clock(), ("batch", batch))
        one_by_one = [apply(seq, Clock(), ("charge", m, c)) for m, c in batch]
        refused = [i for i, r in enumerate(one_by_one) if r[0] == "refused"]
        if not refused:
            assert got == ("ok", [r[1:] for r in one_by_one])
            assert [h["epsilon"] for h in many.history()] == [h["epsilon"] for h in seq.history()]
        else:  # refused at the first item that did not fit, with the same fields, and nothing kept
            i = refused[0]
            assert got == (*one_by_one[i][:-1], i)
            assert many.history() == before


def test_charge_many_checks_every_item_before_charging():
    with BudgetLedger(":memory:", clock=Clock()) as led:
        for bad, exc in ((["m", PrivacyCost(1)], TypeError), ([("m", 1.0)], TypeError),
                         ([("*", PrivacyCost(1))], ValueError),
                         ([("m", PrivacyCost(1)), ("", PrivacyCost(1))], ValueError)):
            with pytest.raises(exc):
                led.charge_many(bad, lambda rs, db: None)
        assert led.history() == []
        assert led.charge_many([], lambda rs, db: rs) == []
        out = led.charge_many([("m", PrivacyCost(0.5)), ("n", PrivacyCost(0.25, 1e-7))],
                              lambda rs, db: [(r.metric, r.cost, r.window) for r in rs])
        assert out == [("m", PrivacyCost(0.5), 20000), ("n", PrivacyCost(0.25, 1e-7), 20000)]
        assert [h["state"] for h in led.history()] == ["committed"] * 2


def test_memoized_keys_repeat_within_one_batch():
    memo = MemoizedCharge(b"k", first=PrivacyCost(0.5), then=PrivacyCost(0.5), cap=PrivacyCost(1.2))
    with BudgetLedger(":memory:", clock=Clock()) as led:
        costs = led.charge_many([("h", memo)] * 4, lambda rs, db: [round(r.cost.epsilon, 9) for r in rs])
        assert costs == [0.5, 0.5, 0.2, 0.0]


# --------------------------------------------------------------------------------------------
# TelemetryClient.record_many
# --------------------------------------------------------------------------------------------

SPEC_DOC = {
    "spec_version": 1, "name": "batch_app",
    "budget": {"per_window": 20, "lifetime": 40},
    "upload": {"min_interval_seconds": 0, "max_batch": 50},
    "metrics": {
        "color": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3, "labels": ["r", "g", "b"]},
                  "budget": {"per_report": 1, "per_window": 2}},
        "flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
        "page": {"protocol": "rappor", "params": {"num_bloombits": 16, "num_hashes": 2, "num_cohorts": 4,
                                                  "p": 0.5, "q": 0.75, "f": 0.5}, "budget": {"per_report": 1.1}},
    },
}


def test_record_many_stores_every_report_in_order(tmp_path):
    spec = CollectionSpec.from_dict(SPEC_DOC)
    with TelemetryClient(spec, tmp_path / "s.db", clock=Clock()) as app:
        ids = app.record_many([("color", "r"), ("flag", True), ("page", "x.example"), ("color", "b")])
        items = app.pending()
        assert [i.id for i in items] == ids
        assert [parse_envelope(i.line, spec).metric for i in items] == ["color", "flag", "page", "color"]
        assert all(json.loads(i.line)["window"] == 20000 for i in items)
        assert app.counts()["color"] == {"reports": 2, "pending": 2, "uploaded": 0, "discarded": 0}
        assert app.spent().epsilon == pytest.approx(2 + math.log(3) + spec.params("page").epsilon_one)
        assert app.record_many([]) == []


def test_record_many_is_all_or_nothing(tmp_path):
    spec = CollectionSpec.from_dict(SPEC_DOC)
    with TelemetryClient(spec, tmp_path / "s.db", clock=Clock()) as app:
        app.record("color", "r")
        before = (app.counts(), app.spent(), app.pending())
        with pytest.raises(BudgetExceeded) as exc:  # the third report of color today breaks its cap of 2
            app.record_many([("flag", True), ("color", "g"), ("color", "b"), ("flag", False)])
        assert (exc.value.index, exc.value.scope, exc.value.period) == (2, "color", "window")
        assert "charge 2 of a batch" in str(exc.value)
        with pytest.raises(ValueError, match=r"record_many item 1 \('color'\).*purple") as refused:
            app.record_many([("flag", True), ("color", "purple")])
        assert (refused.value.code, refused.value.fields) == ("unknown_label", {"got": "purple"})  # the refusal's
        with pytest.raises(TypeError, match="record_many item 0"):
            app.record_many([("page", 12)])
        with pytest.raises(ValueError, match="item 1.*no metric 'size'"):
            app.record_many([("flag", True), ("size", 3)])
        with pytest.raises(TypeError, match="pairs"):
            app.record_many([("flag",)])
        assert (app.counts(), app.spent(), app.pending()) == before
        assert len(app.record_many([("flag", True), ("color", "g"), ("flag", False)])) == 3
