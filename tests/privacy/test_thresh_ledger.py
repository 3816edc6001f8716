"""The ledger's charge on change (ChangeCharge): the epoch kept per stream, ε per change and 0 per replay, exactly,
in memory and in a file, across reopening, under caps, in batches, and against a damaged epoch."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings, strategies as st

from ldp.errors import BudgetExceeded, LedgerDamagedError
from ldp.privacy.accountant import BudgetLedger, BudgetPolicy, ChangeCharge, MemoizedCharge, PrivacyCost

EPS = 0.75


def charge(value: str, stream: bytes = b"s", eps: float = EPS) -> ChangeCharge:
    return ChangeCharge(stream, value.encode(), PrivacyCost(eps))


class Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


def test_epochs_and_charges_follow_changes_only():
    with BudgetLedger() as led:
        got = [led.reserve("m", charge(v)) for v in "aaabba"]
        assert [r.epoch for r in got] == [0, 0, 0, 1, 1, 2]  # a change back to "a" is a change
        assert [r.cost.epsilon for r in got] == [EPS, 0.0, 0.0, EPS, 0.0, EPS]
        assert led.spent("m", "lifetime") == PrivacyCost(3 * EPS)
        assert led.reserve("m", PrivacyCost(0.5)).epoch is None  # other charges carry no epoch
        assert led.reserve("m", MemoizedCharge(b"k", PrivacyCost(0.1), PrivacyCost(0.1), PrivacyCost(1))).epoch is None


def test_streams_and_metrics_are_independent():
    with BudgetLedger() as led:
        assert led.reserve("m", charge("a", b"one")).epoch == 0
        assert led.reserve("m", charge("b", b"two")).epoch == 0  # another stream: its own epochs
        assert led.reserve("n", charge("b", b"one")).epoch == 0  # another metric
        assert led.reserve("m", charge("a", b"one")).epoch == 0  # stream one still holds "a": a replay
        assert led.spent("m", "lifetime") == PrivacyCost(2 * EPS)


def test_the_value_is_never_stored():
    with BudgetLedger() as led:
        led.reserve("m", charge("secret-value", b"stream-key"))
        dump = "\n".join(led._db.iterdump())
    assert "secret-value" not in dump and b"secret-value".hex() not in dump and "stream-key" not in dump


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from("abc"), min_size=1, max_size=30))
def test_any_sequence_costs_changes_plus_one(values):
    changes = sum(a != b for a, b in zip(values, values[1:], strict=False))
    with BudgetLedger() as led:
        epochs = [led.reserve("m", charge(v)).epoch for v in values]
        assert epochs[-1] == changes
        assert led.spent("m", "lifetime").epsilon == pytest.approx((changes + 1) * EPS, rel=1e-12)
        assert [h["epsilon"] for h in led.history()] == [EPS if i == 0 or values[i] != values[i - 1] else 0.0
                                                         for i in range(len(values))]


def test_epoch_survives_reopening_the_file(tmp_path):
    path = tmp_path / "ledger.db"
    with BudgetLedger(path) as led:
        assert [led.reserve("m", charge(v)).epoch for v in "ab"] == [0, 1]
    with BudgetLedger(path) as led:
        assert led.reserve("m", charge("b")).epoch == 1  # a replay after a restart: free
        assert led.reserve("m", charge("c")).epoch == 2
        assert led.spent("m", "lifetime") == PrivacyCost(3 * EPS)


def test_a_rolled_back_charge_does_not_move_the_epoch():
    with BudgetLedger() as led:
        led.reserve("m", charge("a"))

        def crash(_reservation, _db):
            raise RuntimeError("killed before COMMIT")

        with pytest.raises(RuntimeError):
            led.charge_atomically("m", charge("b"), crash)
        assert led.spent("m", "lifetime") == PrivacyCost(EPS)
        assert led.reserve("m", charge("a")).epoch == 0  # "b" never happened
        assert led.charge_atomically("m", charge("b"), lambda r, _db: r.epoch) == 1


def test_a_refused_change_keeps_the_epoch_and_replays_stay_free():
    with BudgetLedger(metrics={"m": BudgetPolicy(lifetime=PrivacyCost(2 * EPS))}) as led:
        led.reserve("m", charge("a"))
        led.reserve("m", charge("b"))
        with pytest.raises(BudgetExceeded):
            led.reserve("m", charge("c"))
        again = led.reserve("m", charge("b"))  # the current value still reports, at no cost
        assert (again.epoch, again.cost) == (1, PrivacyCost(0.0))


def test_charge_many_sees_the_changes_before_it_and_is_all_or_nothing():
    with BudgetLedger(metrics={"m": BudgetPolicy(lifetime=PrivacyCost(3 * EPS))}) as led:
        with pytest.raises(BudgetExceeded) as err:
            led.charge_many([("m", charge(v)) for v in "aabab"], lambda rs, _db: None)
        assert err.value.index == 4
        assert led.spent("m", "lifetime") == PrivacyCost(0.0)
        assert led.charge_many([("m", charge(v)) for v in "aaba"], lambda rs, _db: [r.epoch for r in rs]) \
            == [0, 0, 1, 2]


def test_a_damaged_epoch_is_refused(tmp_path):
    path = tmp_path / "ledger.db"
    with BudgetLedger(path) as led:
        led.reserve("m", charge("a"))
    db = sqlite3.connect(path)
    db.execute("UPDATE ldp_ledger_changes SET epoch='x'")
    db.commit()
    db.close()
    with BudgetLedger(path) as led, pytest.raises(LedgerDamagedError, match="epoch"):
        led.reserve("m", charge("b"))


def test_a_ledger_made_before_change_charges_gains_the_table(tmp_path):
    path = tmp_path / "ledger.db"
    with BudgetLedger(path) as led:
        led.reserve("m", PrivacyCost(0.5))
    db = sqlite3.connect(path)
    db.execute("DROP TABLE ldp_ledger_changes")
    db.commit()
    db.close()
    with BudgetLedger(path) as led:
        assert led.reserve("m", charge("a")).epoch == 0
        assert led.spent("m", "lifetime") == PrivacyCost(0.5 + EPS)


def test_bad_charges_are_refused():
    with BudgetLedger() as led, pytest.raises(TypeError, match="ChangeCharge"):
        led.reserve("m", "a")  # type: ignore[arg-type]
