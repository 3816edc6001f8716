"""A TelemetryClient belongs to the thread that created it: from another thread every method raises
ThreadMisuseError before the state file is touched (nothing charged, nothing sent), and one client per thread,
all on the same file, never over-spends the budget."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ldp.client import BudgetExceeded, TelemetryClient
from ldp.errors import LdpError, ThreadMisuseError
from ldp.spec import CollectionSpec

T0 = 86400.0 * 20000 + 3600.0


def spec(per_window: float = 100.0) -> CollectionSpec:
    return CollectionSpec.from_dict({
        "spec_version": 1, "name": "thread_app",
        "budget": {"per_window": per_window, "lifetime": 1000},
        "upload": {"min_interval_seconds": 0, "max_batch": 10},
        "metrics": {
            "flag": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 2, "labels": ["off", "on"]},
                     "budget": {"per_report": 1.0}},
            "home": {"protocol": "rappor", "params": {"num_bloombits": 8, "num_hashes": 2, "num_cohorts": 4,
                                                      "p": 0.5, "q": 0.75, "f": 0.5},
                     "budget": {"per_report": 1.1}},
        },
    })


def in_thread(call: Callable[[], Any]) -> BaseException | None:
    """Run ``call`` in a new thread; the exception it raised, if any."""
    caught: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            caught.append(exc)

    thread = threading.Thread(target=run, name="intruder")
    thread.start()
    thread.join()
    return caught[0] if caught else None


def snapshot(path: Path) -> list[Any]:
    """Every row of every table of the state file, read by another connection."""
    db = sqlite3.connect(path)
    try:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return [(t, db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()) for t in tables]
    finally:
        db.close()


CALLS: dict[str, Callable[[TelemetryClient], Any]] = {
    "record": lambda c: c.record("flag", "on"),
    "record_bad_value": lambda c: c.record("flag", "maybe"),
    "record_many": lambda c: c.record_many([("flag", "on"), ("home", "example.org")]),
    "cohort": lambda c: c.cohort("home"),
    "pending": lambda c: c.pending(),
    "acknowledge": lambda c: c.acknowledge([1]),
    "next_batch": lambda c: c.next_batch(),
    "split_batch": lambda c: c.split_batch("0" * 32),
    "acknowledge_batch": lambda c: c.acknowledge_batch("0" * 32, [1]),
    "has_pending": lambda c: c.has_pending(),
    "next_upload_at": lambda c: c.next_upload_at(),
    "upload": lambda c: c.upload("http://127.0.0.1:9/v1/reports", "token", timeout=0.1, max_attempts=1),
    "spent": lambda c: c.spent(),
    "remaining": lambda c: c.remaining("flag"),
    "current_window": lambda c: c.current_window(),
    "counts": lambda c: c.counts(),
    "close": lambda c: c.close(),
}


@pytest.mark.parametrize("name", CALLS)
def test_another_thread_gets_a_clear_error_and_touches_nothing(tmp_path, name):
    path = tmp_path / "state.db"
    with TelemetryClient(spec(), path, clock=lambda: T0) as client:
        client.record("flag", "off")
        before = snapshot(path)
        exc = in_thread(lambda: CALLS[name](client))
        assert isinstance(exc, ThreadMisuseError) and isinstance(exc, RuntimeError) and isinstance(exc, LdpError)
        assert "created in thread 'MainThread'" in str(exc) and "used from thread 'intruder'" in str(exc)
        assert "one TelemetryClient per thread" in str(exc) and "damaged" not in str(exc)
        assert snapshot(path) == before  # nothing charged, stored, pinned or acknowledged
        assert client.record("flag", "on") == 2  # the owner still uses it
        assert client.counts()["flag"]["reports"] == 2


def test_one_client_per_thread_on_one_file_never_over_spends(tmp_path):
    path, threads, fits = tmp_path / "state.db", 4, 20  # the budget allows exactly 20 reports of 1.0 per window
    TelemetryClient(spec(per_window=fits), path, clock=lambda: T0).close()
    start = threading.Barrier(threads)
    recorded: list[int] = []
    refused: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work() -> None:
        try:
            with TelemetryClient(spec(per_window=fits), path, clock=lambda: T0) as client:
                start.wait()
                for _ in range(fits):  # each thread alone could spend all of it
                    try:
                        client.record("flag", "on")
                        with lock:
                            recorded.append(1)
                    except BudgetExceeded:
                        with lock:
                            refused.append(1)
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            errors.append(exc)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
    assert len(recorded) == fits and len(refused) == threads * fits - fits
    with TelemetryClient(spec(per_window=fits), path, clock=lambda: T0) as client:
        assert client.counts()["flag"] == {"reports": fits, "pending": fits, "uploaded": 0, "discarded": 0}
        assert client.spent("flag").epsilon == pytest.approx(fits)
