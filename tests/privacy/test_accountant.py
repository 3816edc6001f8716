"""Tests of ldp.privacy.accountant: privacy costs, composition, and the client's persistent budget ledger."""

from __future__ import annotations

import hashlib
import math
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import ROOT

from ldp.privacy.accountant import (
    ZERO_COST,
    BudgetExceeded,
    BudgetLedger,
    BudgetPolicy,
    LedgerError,
    MemoizedCharge,
    PrivacyCost,
    Reservation,
    advanced_composition,
    compose_parallel,
    compose_sequential,
)

DAY = 86400.0


class Clock:
    """An injectable clock the test moves by hand."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def C(eps: float, delta: float = 0.0) -> PrivacyCost:
    return PrivacyCost(eps, delta)


def cap(per_window: float | None = None, lifetime: float | None = None) -> BudgetPolicy:
    return BudgetPolicy(
        per_window=None if per_window is None else C(per_window),
        lifetime=None if lifetime is None else C(lifetime),
    )


# --------------------------------------------------------------------------------------------
# PrivacyCost and composition
# --------------------------------------------------------------------------------------------


class TestPrivacyCost:
    def test_valid_values_are_stored_as_floats(self):
        c = PrivacyCost(1)
        assert (c.epsilon, c.delta) == (1.0, 0.0)
        assert type(c.epsilon) is float and type(c.delta) is float
        c = PrivacyCost(0, 0.5)
        assert (c.epsilon, c.delta) == (0.0, 0.5)
        assert PrivacyCost(2.5, 1e-6).to_dict() == {"epsilon": 2.5, "delta": 1e-6}
        assert PrivacyCost.from_dict({"epsilon": 2.5}) == PrivacyCost(2.5, 0.0)
        assert PrivacyCost.from_dict({"epsilon": 2.5, "delta": 1e-6}) == PrivacyCost(2.5, 1e-6)

    @pytest.mark.parametrize("eps", [-0.1, -1e-300, math.nan, math.inf, -math.inf])
    def test_bad_epsilon(self, eps):
        with pytest.raises(ValueError, match=r"epsilon must be finite and >= 0"):
            PrivacyCost(eps)

    @pytest.mark.parametrize("delta", [-1e-9, math.nan, math.inf, -math.inf])
    def test_bad_delta_not_finite_or_negative(self, delta):
        with pytest.raises(ValueError, match=r"delta must be finite and >= 0"):
            PrivacyCost(1.0, delta)

    @pytest.mark.parametrize("delta", [1.0, 1, 1.5, 2.0])
    def test_delta_must_be_below_one(self, delta):
        with pytest.raises(ValueError, match=r"delta must be < 1"):
            PrivacyCost(1.0, delta)

    def test_delta_just_below_one_is_allowed(self):
        d = math.nextafter(1.0, 0.0)
        assert PrivacyCost(0.0, d).delta == d

    @pytest.mark.parametrize("bad", [True, False])
    def test_bool_is_a_type_error(self, bad):
        with pytest.raises(TypeError, match=r"epsilon must be a real number, got bool"):
            PrivacyCost(bad)
        with pytest.raises(TypeError, match=r"delta must be a real number, got bool"):
            PrivacyCost(1.0, bad)

    @pytest.mark.parametrize("bad", ["1", None, [1.0], 1j])
    def test_non_numbers_are_type_errors(self, bad):
        with pytest.raises(TypeError, match=r"epsilon must be a real number"):
            PrivacyCost(bad)


class TestComposition:
    # Powers of two keep every sum exact, so equality can be exact.
    a = PrivacyCost(0.5, 2.0**-20)
    b = PrivacyCost(0.25, 2.0**-19)

    def test_sequential_addition(self):
        assert self.a + self.b == PrivacyCost(0.75, 3 * 2.0**-20)
        assert self.a + ZERO_COST == self.a

    def test_addition_with_non_cost_is_a_type_error(self):
        with pytest.raises(TypeError):
            self.a + 1.0  # noqa: B018

    def test_times(self):
        assert self.a.times(3) == PrivacyCost(1.5, 3 * 2.0**-20)
        assert self.a.times(1) == self.a
        assert self.a.times(0) == ZERO_COST

    @pytest.mark.parametrize("k", [-1, 1.0, True, "2"])
    def test_times_rejects_bad_k(self, k):
        with pytest.raises(ValueError, match=r"number of compositions must be an int >= 0"):
            self.a.times(k)

    def test_compose_sequential(self):
        assert compose_sequential([]) == ZERO_COST
        assert compose_sequential([self.a]) == self.a
        assert compose_sequential([self.a, self.b, self.a]) == PrivacyCost(1.25, 4 * 2.0**-20)
        assert compose_sequential(iter([self.b] * 4)) == self.b.times(4)

    def test_sequential_delta_stays_a_valid_probability(self):
        total = PrivacyCost(0.0, 0.75) + PrivacyCost(0.0, 0.5)
        assert total.delta < 1.0
        assert total.delta == math.nextafter(1.0, 0.0)

    def test_compose_parallel_takes_max_of_each_coordinate(self):
        assert compose_parallel([]) == ZERO_COST
        costs = [PrivacyCost(1.0, 0.0), PrivacyCost(0.5, 1e-5), PrivacyCost(0.75, 1e-7)]
        assert compose_parallel(costs) == PrivacyCost(1.0, 1e-5)
        assert compose_parallel(iter(costs)) == PrivacyCost(1.0, 1e-5)
        assert compose_parallel([self.a]) == self.a

    @pytest.mark.parametrize(
        "eps, delta, k, slack",
        [
            (0.1, 0.0, 100, 1e-6),
            (1.0, 1e-7, 10, 1e-5),
            (0.01, 1e-9, 1000, 1e-3),
            (2.0, 0.0, 1, 0.5),
            (0.5, 1e-8, 37, 1e-9),
        ],
    )
    def test_advanced_composition_formula(self, eps, delta, k, slack):
        got = advanced_composition(PrivacyCost(eps, delta), k, slack)
        # Dwork & Roth Thm 3.20, written out independently of the implementation.
        want_eps = eps * math.sqrt(2 * k * math.log(1 / slack)) + k * eps * (math.exp(eps) - 1)
        want_delta = k * delta + slack
        assert got.epsilon == pytest.approx(want_eps, rel=1e-12)
        assert got.delta == pytest.approx(want_delta, rel=1e-12)

    def test_advanced_composition_beats_basic_for_many_small_steps(self):
        c = PrivacyCost(0.1)
        adv = advanced_composition(c, 1000, 1e-6)
        assert adv.epsilon == pytest.approx(0.1 * math.sqrt(2000 * math.log(1e6)) + 100 * math.expm1(0.1), rel=1e-12)
        assert adv.epsilon < c.times(1000).epsilon

    @pytest.mark.parametrize("k", [0, -3, 2.0, True])
    def test_advanced_composition_rejects_bad_k(self, k):
        with pytest.raises(ValueError, match=r"number of compositions must be an int >= 1"):
            advanced_composition(PrivacyCost(1.0), k, 1e-6)

    def test_advanced_composition_rejects_bad_slack(self):
        with pytest.raises(ValueError, match=r"delta_slack must be > 0"):
            advanced_composition(PrivacyCost(1.0), 5, 0.0)
        with pytest.raises(ValueError, match=r"delta_slack must be < 1"):
            advanced_composition(PrivacyCost(1.0), 5, 1.0)
        with pytest.raises(ValueError, match=r"delta_slack must be finite and >= 0"):
            advanced_composition(PrivacyCost(1.0), 5, -1e-6)
        with pytest.raises(TypeError, match=r"delta_slack must be a real number"):
            advanced_composition(PrivacyCost(1.0), 5, True)


# --------------------------------------------------------------------------------------------
# The ledger: caps and windows
# --------------------------------------------------------------------------------------------


def open_ledger(tmp_path: Path, clock: Clock, name: str = "ledger.db", **kw) -> BudgetLedger:
    return BudgetLedger(tmp_path / name, clock=clock, **kw)


def test_per_window_cap_per_metric(tmp_path):
    clock = Clock(10 * DAY + 5)
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=1.0)}) as led:
        assert led.reserve("a", C(0.5)).cost == C(0.5)
        led.reserve("a", C(0.5))
        before = led.history()
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.25))
        err = info.value
        assert (err.scope, err.period) == ("a", "window")
        assert (err.requested, err.spent, err.cap) == (C(0.25), C(1.0), C(1.0))
        assert led.history() == before and len(before) == 2
        assert led.spent("a") == C(1.0)
        # An uncapped metric (no default policy, no total) is not limited by "a"'s cap.
        assert led.reserve("b", C(5.0)).cost == C(5.0)
        assert led.spent("b") == C(5.0)
        assert led.spent() == C(6.0)
        assert led.remaining("a") == {"window": C(0.0), "lifetime": None}
        assert led.remaining("b") == {"window": None, "lifetime": None}


def test_per_window_cap_on_delta(tmp_path):
    clock = Clock(3 * DAY)
    with open_ledger(tmp_path, clock, metrics={"a": BudgetPolicy(per_window=C(10.0, 1e-6))}) as led:
        led.reserve("a", C(0.1, 6e-7))
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.1, 6e-7))
        assert (info.value.scope, info.value.period) == ("a", "window")
        assert info.value.spent == C(0.1, 6e-7)
        led.reserve("a", C(0.1, 4e-7))  # exactly fills δ
        assert len(led.history()) == 2


def test_cap_across_all_metrics(tmp_path):
    clock = Clock(20 * DAY + 1)
    with open_ledger(tmp_path, clock, total=cap(per_window=1.0), default=cap(per_window=0.75)) as led:
        led.reserve("a", C(0.75))
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.25))
        assert (info.value.scope, info.value.period, info.value.spent) == ("a", "window", C(0.75))
        led.reserve("b", C(0.25))
        n = len(led.history())
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("b", C(0.25))  # b's own cap has room (0.25 of 0.75), the total does not
        err = info.value
        assert (err.scope, err.period) == (BudgetLedger.ALL, "window")
        assert (err.requested, err.spent, err.cap) == (C(0.25), C(1.0), C(1.0))
        assert "all metrics" in str(err)
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("c", C(0.01))
        assert info.value.scope == "*"
        assert len(led.history()) == n == 2
        assert led.remaining("c") == {"window": C(0.0), "lifetime": None}
        # The next window starts afresh for every scope.
        clock.t += DAY
        led.reserve("b", C(0.5))
        led.reserve("c", C(0.5))
        assert led.spent() == C(1.0)


def test_lifetime_cap(tmp_path):
    clock = Clock(0.0)
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=1.0, lifetime=2.5)}) as led:
        for day in range(2):
            clock.t = day * DAY + 10
            led.reserve("a", C(0.5))
            led.reserve("a", C(0.5))
        clock.t = 2 * DAY + 10
        led.reserve("a", C(0.5))
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.5))
        err = info.value
        assert (err.scope, err.period, err.requested, err.spent, err.cap) == ("a", "lifetime", C(0.5), C(2.5), C(2.5))
        clock.t = 30 * DAY
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.01))
        assert info.value.period == "lifetime"
        assert led.spent("a", "lifetime") == C(2.5)
        assert led.spent("a", "window") == C(0.0)
        assert led.remaining("a") == {"window": C(1.0), "lifetime": C(0.0)}
        assert [h["window"] for h in led.history()] == [0, 0, 1, 1, 2]


def test_lifetime_cap_across_all_metrics(tmp_path):
    clock = Clock(0.0)
    with open_ledger(tmp_path, clock, total=cap(lifetime=1.5)) as led:
        led.reserve("a", C(1.0))
        clock.t += 5 * DAY
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("b", C(0.75))
        assert (info.value.scope, info.value.period, info.value.spent) == ("*", "lifetime", C(1.0))
        led.reserve("b", C(0.5))
        assert led.spent(period="lifetime") == C(1.5)


def test_unused_budget_does_not_carry_over(tmp_path):
    clock = Clock(100 * DAY + 7)
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=1.0)}) as led:
        led.reserve("a", C(0.25))  # day 100: 0.75 unused
        clock.t += DAY
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(1.25))
        assert (info.value.period, info.value.spent) == ("window", C(0.0))
        led.reserve("a", C(1.0))
        with pytest.raises(BudgetExceeded):
            led.reserve("a", C(0.125))
        assert led.spent("a") == C(1.0)
        assert led.spent("a", "lifetime") == C(1.25)


def test_window_boundary_is_floor_of_now_over_window_seconds(tmp_path):
    clock = Clock(499.75)
    with open_ledger(tmp_path, clock, window_seconds=100.0, metrics={"a": cap(per_window=1.0)}) as led:
        assert led.current_window() == 4
        r = led.reserve("a", C(1.0))
        assert r.window == 4
        with pytest.raises(BudgetExceeded):
            led.reserve("a", C(0.5))
        clock.t = 500.0  # exactly on the boundary: a new window
        assert led.current_window() == 5
        r = led.reserve("a", C(1.0))
        assert r.window == 5
        clock.t = 599.999
        with pytest.raises(BudgetExceeded):
            led.reserve("a", C(0.5))
        clock.t = 600.0
        assert led.reserve("a", C(0.5)).window == 6
        assert [(h["window"], h["at"]) for h in led.history()] == [(4, 499.75), (5, 500.0), (6, 600.0)]


def test_default_window_is_utc_day(tmp_path):
    clock = Clock(19_000 * DAY - 0.5)
    with open_ledger(tmp_path, clock) as led:
        assert led.window_seconds == DAY
        assert led.reserve("a", C(1.0)).window == 18_999
        clock.t = 19_000 * DAY
        assert led.reserve("a", C(1.0)).window == 19_000


def test_clock_moved_backwards_never_reopens_a_window(tmp_path):
    clock = Clock(10 * DAY + 100)
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=1.0)}) as led:
        led.reserve("a", C(1.0))
        clock.t = 9 * DAY + 100  # one day back
        assert led.current_window() == 10
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.1))
        assert (info.value.period, info.value.spent) == ("window", C(1.0))
        r = led.reserve("b", C(0.5))  # another metric has room: recorded in the later window
        assert r.window == 10
        last = led.history()[-1]
        assert (last["metric"], last["window"], last["at"]) == ("b", 10, 10 * DAY + 100)
        assert len(led.history()) == 2
    # The monotone time survives a reopen.
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=1.0)}) as led:
        assert led.current_window() == 10
        with pytest.raises(BudgetExceeded):
            led.reserve("a", C(0.1))
        clock.t = 11 * DAY
        assert led.reserve("a", C(1.0)).window == 11


def test_budget_exceeded_records_nothing_even_with_memoized_charges(tmp_path):
    clock = Clock(0.0)
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=1.0)}) as led:
        memo = MemoizedCharge(b"k", first=C(1.0), then=C(0.5), cap=C(2.0))
        assert led.reserve("a", memo).cost == C(1.0)
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", memo)  # 1.0 + 0.5 > 1.0: refused, memo state must not move
        assert info.value.requested == C(0.5)
        assert len(led.history()) == 1
        clock.t = DAY
        assert led.reserve("a", memo).cost == C(0.5)
        assert led.reserve("a", memo).cost == C(0.5)
        clock.t = 2 * DAY
        assert led.reserve("a", memo).cost == C(0.0)
        assert [h["epsilon"] for h in led.history()] == [1.0, 0.5, 0.5, 0.0]


def test_ten_tenths_fit_in_one_but_not_eleven(tmp_path):
    clock = Clock(0.0)
    pol = cap(per_window=1.0, lifetime=1.0)
    with open_ledger(tmp_path, clock, metrics={"a": pol}, total=pol) as led:
        for _ in range(10):
            led.reserve("a", C(0.1))
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.1))
        assert (info.value.scope, info.value.period) == ("a", "window")
        assert len(led.history()) == 10
        assert led.spent("a").epsilon == pytest.approx(1.0, rel=1e-12)
    # Here the absolute 1e-15 slack alone would not do: 20 x 0.8 sums to 16.000000000000004.
    with open_ledger(tmp_path, clock, name="big.db", metrics={"a": cap(per_window=16.0)}) as led:
        for _ in range(20):
            led.reserve("a", C(0.8))
        assert led.spent("a").epsilon > 16.0
        with pytest.raises(BudgetExceeded):
            led.reserve("a", C(0.8))
        with pytest.raises(BudgetExceeded):
            led.reserve("a", C(1e-6))
        assert len(led.history()) == 20
    assert PrivacyCost(sum([0.1] * 10)).fits_within(C(1.0))
    assert not PrivacyCost(sum([0.1] * 11)).fits_within(C(1.0))
    assert not C(1.0 + 1e-6).fits_within(C(1.0))


def test_spent_matches_history(tmp_path):
    clock = Clock(0.0)
    rng = random.Random(3)
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=2.0)}, total=cap(lifetime=40.0)) as led:
        for _ in range(120):
            clock.t += rng.choice([0.0, 3600.0, 40000.0])
            metric = rng.choice(["a", "b", "c"])
            try:
                led.reserve(metric, C(rng.choice([0.1, 0.25, 0.3]), rng.choice([0.0, 1e-9])))
            except BudgetExceeded:
                pass
        hist = led.history()
        window = led.current_window()
        assert 40 < len(hist) < 120
        for metric in ("a", "b", "c", "*"):
            rows = [h for h in hist if metric == "*" or h["metric"] == metric]
            for period, sel in (("lifetime", rows), ("window", [h for h in rows if h["window"] == window])):
                got = led.spent(metric, period)
                assert got.epsilon == pytest.approx(math.fsum(h["epsilon"] for h in sel), rel=1e-12, abs=1e-12)
                assert got.delta == pytest.approx(math.fsum(h["delta"] for h in sel), rel=1e-9, abs=1e-20)
        per_window = {}
        for h in hist:
            if h["metric"] == "a":
                per_window[h["window"]] = per_window.get(h["window"], 0.0) + h["epsilon"]
        assert max(per_window.values()) <= 2.0 * (1 + 1e-9)
        assert math.fsum(h["epsilon"] for h in hist) <= 40.0 * (1 + 1e-9)


@pytest.mark.parametrize("metric", ["", "*", None, 3])
def test_reserve_rejects_bad_metric(metric):
    with BudgetLedger(":memory:", clock=Clock(0.0)) as led:
        with pytest.raises(ValueError, match=r"metric must be a non-empty name"):
            led.reserve(metric, C(1.0))
        assert led.history() == []


def test_reserve_rejects_bad_cost():
    with BudgetLedger(":memory:", clock=Clock(0.0)) as led:
        with pytest.raises(TypeError, match=r"cost must be a PrivacyCost or MemoizedCharge"):
            led.reserve("a", 1.0)
        assert led.history() == []


def test_constructor_rejects_bad_settings():
    with pytest.raises(ValueError, match=r"reserved"):
        BudgetLedger(":memory:", metrics={"*": cap(1.0)})
    with pytest.raises(ValueError, match=r"window_seconds must be > 0"):
        BudgetLedger(":memory:", window_seconds=0)
    with pytest.raises(ValueError, match=r"window_seconds must be finite"):
        BudgetLedger(":memory:", window_seconds=-5.0)


def test_spent_rejects_bad_period():
    with BudgetLedger(":memory:", clock=Clock(0.0)) as led:
        with pytest.raises(ValueError, match=r"period must be 'window' or 'lifetime'"):
            led.spent("a", "day")


# --------------------------------------------------------------------------------------------
# Reserve / commit and crashes
# --------------------------------------------------------------------------------------------


def test_reserve_then_commit_states(tmp_path):
    clock = Clock(2 * DAY + 30)
    with open_ledger(tmp_path, clock) as led:
        r = led.reserve("a", C(0.5, 1e-7))
        assert isinstance(r, Reservation)
        assert (r.metric, r.cost, r.window) == ("a", C(0.5, 1e-7), 2)
        assert led.history() == [
            {"id": r.id, "metric": "a", "window": 2, "epsilon": 0.5, "delta": 1e-7, "at": 2 * DAY + 30,
             "state": "reserved"}
        ]
        led.commit(r)
        assert led.history()[0]["state"] == "committed"
        r2 = led.reserve("b", C(0.25))
        assert [h["state"] for h in led.history()] == ["committed", "reserved"]
        assert [h["metric"] for h in led.history("b")] == ["b"]
        assert r2.id > r.id
        # Committing something that is not in this ledger is an error.
        with pytest.raises(LedgerError):
            led.commit(Reservation(r2.id + 100, "b", C(0.25), 2))
        with pytest.raises(LedgerError):
            led.commit(Reservation(r2.id, "a", C(0.25), 2))
        assert [h["state"] for h in led.history()] == ["committed", "reserved"]


def test_uncommitted_reservation_survives_close_and_reopen(tmp_path):
    clock = Clock(DAY)
    pol = {"a": cap(per_window=1.0)}
    led = open_ledger(tmp_path, clock, metrics=pol)
    led.reserve("a", C(0.75))
    led.close()  # "crash" before commit
    with open_ledger(tmp_path, clock, metrics=pol) as led:
        assert [(h["metric"], h["epsilon"], h["state"]) for h in led.history()] == [("a", 0.75, "reserved")]
        assert led.spent("a") == C(0.75)
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.5))
        assert info.value.spent == C(0.75)


def test_reservation_survives_a_hard_crash(tmp_path):
    path = tmp_path / "ledger.db"
    script = textwrap.dedent(
        f"""
        import os
        from ldp.privacy.accountant import BudgetLedger, PrivacyCost
        led = BudgetLedger({str(path)!r}, clock=lambda: 5 * 86400.0)
        led.reserve("a", PrivacyCost(0.75))
        os._exit(0)  # no commit, no close
        """
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=_child_env(), check=True, timeout=60)
    with BudgetLedger(path, clock=Clock(5 * DAY), metrics={"a": cap(per_window=1.0)}) as led:
        assert [(h["epsilon"], h["state"], h["window"]) for h in led.history()] == [(0.75, "reserved", 5)]
        with pytest.raises(BudgetExceeded):
            led.reserve("a", C(0.5))


def test_charge_context_manager(tmp_path):
    clock = Clock(0.0)
    with open_ledger(tmp_path, clock, metrics={"a": cap(per_window=1.0)}) as led:
        with led.charge("a", C(0.25)) as r:
            assert led.history()[-1]["state"] == "reserved"
            assert r.cost == C(0.25)
        assert led.history()[-1] == {**led.history()[-1], "id": r.id, "state": "committed"}

        class Boom(Exception):
            pass

        with pytest.raises(Boom):
            with led.charge("a", C(0.5)) as r2:
                raise Boom
        last = led.history()[-1]
        assert (last["id"], last["state"], last["epsilon"]) == (r2.id, "reserved", 0.5)
        assert led.spent("a") == C(0.75)  # the failed body's charge still counts

        entered = []
        with pytest.raises(BudgetExceeded):
            with led.charge("a", C(0.5)):
                entered.append(True)
        assert entered == []
        assert len(led.history()) == 2


# --------------------------------------------------------------------------------------------
# Memoized charges
# --------------------------------------------------------------------------------------------


def _memo_costs(led: BudgetLedger, metric: str, memo: MemoizedCharge, n: int) -> list[float]:
    return [led.reserve(metric, memo).cost.epsilon for _ in range(n)]


def test_memoized_rappor_style_charge(tmp_path):
    with open_ledger(tmp_path, Clock(0.0)) as led:
        memo = MemoizedCharge(b"value-1", first=C(4.39), then=C(1.07), cap=C(4.39))
        assert _memo_costs(led, "m", memo, 4) == [4.39, 0.0, 0.0, 0.0]
        assert [h["epsilon"] for h in led.history()] == [4.39, 0.0, 0.0, 0.0]
        assert led.spent("m") == C(4.39)


def test_memoized_charge_is_cut_to_the_cap(tmp_path):
    with open_ledger(tmp_path, Clock(0.0)) as led:
        memo = MemoizedCharge(b"v", first=C(1.0), then=C(0.5), cap=C(2.0))
        assert _memo_costs(led, "m", memo, 5) == [1.0, 0.5, 0.5, 0.0, 0.0]
        memo2 = MemoizedCharge(b"w", first=C(1.0), then=C(0.75), cap=C(2.0))
        assert _memo_costs(led, "m", memo2, 4) == [1.0, 0.75, 0.25, 0.0]
        assert led.spent("m") == C(4.0)


def test_memoized_delta_is_capped_too(tmp_path):
    with open_ledger(tmp_path, Clock(0.0)) as led:
        memo = MemoizedCharge(b"v", first=C(1.0, 2.0**-20), then=C(0.5, 2.0**-20), cap=C(2.0, 2.0**-19))
        got = [led.reserve("m", memo).cost for _ in range(4)]
        assert got == [C(1.0, 2.0**-20), C(0.5, 2.0**-20), C(0.5, 0.0), C(0.0, 0.0)]


def test_memoized_keys_and_metrics_are_independent(tmp_path):
    with open_ledger(tmp_path, Clock(0.0)) as led:
        def memo(key):
            return MemoizedCharge(key, first=C(1.0), then=C(0.5), cap=C(2.0))

        assert _memo_costs(led, "m1", memo(b"x"), 2) == [1.0, 0.5]
        assert _memo_costs(led, "m1", memo(b"y"), 2) == [1.0, 0.5]
        assert _memo_costs(led, "m2", memo(b"x"), 2) == [1.0, 0.5]
        assert _memo_costs(led, "m1", memo(b"x"), 2) == [0.5, 0.0]
        assert _memo_costs(led, "m2", memo(b"x"), 1) == [0.5]
        assert _memo_costs(led, "m1", memo(b"y"), 1) == [0.5]


def test_memo_state_persists(tmp_path):
    memo = MemoizedCharge(b"v", first=C(1.0), then=C(0.5), cap=C(2.0))
    with open_ledger(tmp_path, Clock(0.0)) as led:
        assert _memo_costs(led, "m", memo, 2) == [1.0, 0.5]
    with open_ledger(tmp_path, Clock(0.0)) as led:
        assert _memo_costs(led, "m", memo, 2) == [0.5, 0.0]


def _all_db_values(path: Path) -> list[object]:
    db = sqlite3.connect(path)
    try:
        values: list[object] = []
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            for row in db.execute(f'SELECT * FROM "{table}"'):
                values.extend(row)
        return values
    finally:
        db.close()


def _memo_keys(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [row[0] for row in db.execute("SELECT key FROM ldp_ledger_memo")]
    finally:
        db.close()


def test_raw_memo_key_is_never_stored(tmp_path):
    key = b"private-value:jane.doe@example.org"
    path = tmp_path / "ledger.db"
    with open_ledger(tmp_path, Clock(0.0)) as led:
        for _ in range(3):
            led.reserve("metric_x", MemoizedCharge(key, first=C(1.0), then=C(0.5), cap=C(2.0)))
    needles = [key, key.hex().encode(), key.hex().upper().encode(), key.decode().encode("utf-16-le")]
    files = [p for p in tmp_path.iterdir() if p.name.startswith("ledger.db")]
    assert path in files
    for p in files:
        blob = p.read_bytes()
        for needle in needles:
            assert needle not in blob, (p.name, needle)
    values = _all_db_values(path)
    for v in values:
        if isinstance(v, (str, bytes)):
            raw = v.encode() if isinstance(v, str) else v
            assert key not in raw and key.hex().encode() not in raw
    # The stored hash is keyed (salted per ledger), not a plain hash an attacker could recompute.
    stored = _memo_keys(path)
    assert len(stored) == 1
    plain = {
        hashlib.sha256(key).hexdigest(),
        hashlib.sha256(b"metric_x\x00" + key).hexdigest(),
        hashlib.sha256(b"metric_x" + key).hexdigest(),
    }
    assert stored[0] not in plain
    with open_ledger(tmp_path, Clock(0.0), name="other.db") as other:
        other.reserve("metric_x", MemoizedCharge(key, first=C(1.0), then=C(0.5), cap=C(2.0)))
    stored_other = _memo_keys(tmp_path / "other.db")
    assert stored_other != stored


# --------------------------------------------------------------------------------------------
# Persistence and foreign files
# --------------------------------------------------------------------------------------------


def test_spending_persists_across_reopen(tmp_path):
    clock = Clock(7 * DAY + 1)
    pol = {"a": cap(per_window=1.0, lifetime=3.0)}
    with open_ledger(tmp_path, clock, metrics=pol) as led:
        r = led.reserve("a", C(0.5))
        led.commit(r)
        led.reserve("a", C(0.25))
        hist = led.history()
    with open_ledger(tmp_path, clock, metrics=pol, window_seconds=86400) as led:
        assert led.history() == hist
        assert led.spent("a") == C(0.75)
        assert led.spent("a", "lifetime") == C(0.75)
        with pytest.raises(BudgetExceeded) as info:
            led.reserve("a", C(0.5))
        assert info.value.spent == C(0.75)
        led.reserve("a", C(0.25))
        assert len(led.history()) == 3


def test_reopen_with_other_window_seconds_is_refused(tmp_path):
    with open_ledger(tmp_path, Clock(0.0)) as led:
        led.reserve("a", C(0.5))
    with pytest.raises(LedgerError, match=r"window_seconds"):
        open_ledger(tmp_path, Clock(0.0), window_seconds=3600.0)
    with open_ledger(tmp_path, Clock(0.0)) as led:  # still usable with the original setting
        assert led.spent("a") == C(0.5)


def test_non_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    content = b"this is not a database, just some notes\n" * 200
    path.write_bytes(content)
    with pytest.raises(LedgerError):
        BudgetLedger(path, clock=Clock(0.0))
    assert path.read_bytes() == content


def _foreign_db(path: Path, application_id: int) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    db.execute("INSERT INTO contacts VALUES ('ada', '123')")
    db.execute(f"PRAGMA application_id={application_id}")
    db.commit()
    db.close()


@pytest.mark.parametrize("app_id", [123, 0])
def test_sqlite_file_of_another_application_is_refused(tmp_path, app_id):
    path = tmp_path / "other_app.db"
    _foreign_db(path, app_id)
    with pytest.raises(LedgerError, match=r"another application"):
        BudgetLedger(path, clock=Clock(0.0))
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA application_id").fetchone()[0] == app_id
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")] == ["contacts"]
        assert db.execute("SELECT * FROM contacts").fetchall() == [("ada", "123")]
    finally:
        db.close()


def test_ledger_file_is_marked_with_its_application_id(tmp_path):
    with open_ledger(tmp_path, Clock(0.0)):
        pass
    db = sqlite3.connect(tmp_path / "ledger.db")
    try:
        assert db.execute("PRAGMA application_id").fetchone()[0] == 0x4C445031
    finally:
        db.close()


# --------------------------------------------------------------------------------------------
# Concurrency across processes
# --------------------------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


_WORKER = textwrap.dedent(
    """
    import sys, time
    from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost
    path, charge = sys.argv[1], float(sys.argv[2])
    one = PrivacyCost(1.0)
    led = BudgetLedger(
        path,
        metrics={"m": BudgetPolicy(per_window=one, lifetime=one)},
        total=BudgetPolicy(lifetime=one),
        clock=lambda: 1000.0,
    )
    print("ready", flush=True)
    sys.stdin.readline()  # barrier 1: every process has the ledger open
    led.commit(led.reserve("m", PrivacyCost(charge)))
    print("first", flush=True)
    sys.stdin.readline()  # barrier 2: every process has spent once; now race
    ok, refused = 1, 0
    while True:
        try:
            r = led.reserve("m", PrivacyCost(charge))
        except BudgetExceeded:
            refused += 1
            break
        led.commit(r)
        ok += 1
        time.sleep(0.001)  # let the others take the write lock in between (SQLite's busy wait is unfair)
    led.close()
    print(ok, refused, flush=True)
    """
)


def test_concurrent_processes_never_overspend(tmp_path):
    path = tmp_path / "shared.db"
    charge, n_procs = 0.01, 4
    with BudgetLedger(path, clock=Clock(1000.0)):
        pass  # create the file (and WAL mode) before the workers start
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), repr(charge)],
            cwd=ROOT, env=_child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        for _ in range(n_procs)
    ]
    try:
        for expected in ("ready", "first"):
            for p in procs:
                line = p.stdout.readline()
                assert line.strip() == expected, p.stderr.read()
            for p in procs:  # release them together
                p.stdin.write("go\n")
                p.stdin.flush()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            ok, refused = map(int, out.split())
            assert refused == 1
            assert ok >= 1  # every process spent during the overlap (barrier 2)
            results.append(ok)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert sum(results) == 100  # cap / charge, exactly
    with BudgetLedger(path, clock=Clock(1000.0)) as led:
        hist = led.history()
        assert len(hist) == sum(results)
        assert all(h["state"] == "committed" and h["epsilon"] == charge and h["window"] == 0 for h in hist)
        total = led.spent("m", "lifetime").epsilon
        assert total <= 1.0 * (1 + 1e-9)
        assert total == pytest.approx(sum(results) * charge, rel=1e-12)
        assert led.spent(period="lifetime").epsilon == total
        assert math.fsum(h["epsilon"] for h in hist) == pytest.approx(total, rel=1e-12)


def test_running_totals_are_rebuilt_for_a_ledger_written_without_them(tmp_path):
    """A ledger file whose running totals are missing (written before they existed) is rebuilt
    from its charge log on open, so no budget is ever reset."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    clock = [1000.0]
    policy = BudgetPolicy(per_window=PrivacyCost(1.0), lifetime=PrivacyCost(1.5))
    with BudgetLedger(path, total=policy, clock=lambda: clock[0]) as ledger:
        ledger.reserve("a", PrivacyCost(0.6))
        ledger.reserve("b", PrivacyCost(0.4))
    db = sqlite3.connect(path)
    db.execute("DELETE FROM ldp_ledger_window_totals")
    db.execute("DELETE FROM ldp_ledger_lifetime_totals")
    db.execute("DELETE FROM ldp_ledger_meta WHERE key='totals'")
    db.commit()
    db.close()
    with BudgetLedger(path, total=policy, clock=lambda: clock[0]) as ledger:
        assert ledger.spent().epsilon == pytest.approx(1.0)
        assert ledger.spent("a", "lifetime").epsilon == pytest.approx(0.6)
        with pytest.raises(BudgetExceeded):
            ledger.reserve("a", PrivacyCost(0.1))  # window full
        clock[0] += 86400
        ledger.reserve("a", PrivacyCost(0.5))
        with pytest.raises(BudgetExceeded) as exc:
            ledger.reserve("a", PrivacyCost(0.1))  # lifetime 1.5 reached
        assert exc.value.period == "lifetime"


def test_a_ledger_never_closed_closes_its_connection_when_collected():
    """An app (or a test) that drops a ledger without close() leaks no SQLite connection: Python 3.13
    warns of one (ResourceWarning), which our suite turns into an error."""
    import gc
    import sqlite3

    ledger = BudgetLedger()
    conn = ledger._db
    conn.execute("SELECT 1")
    del ledger
    gc.collect()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")
    closed = BudgetLedger()
    closed.close()
    closed.close()  # twice is fine
