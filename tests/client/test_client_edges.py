"""The client at its edges (issue 15, items 4, 7 and 10): seeds never reach a deployment silently,
broken clocks are refused before any charge and never brick the state file, the wire format is
UTF-8, and specs refuse settings a client could never run with."""

from __future__ import annotations

import json
import math
import sqlite3
import warnings

import pytest
from test_client import SPEC, T0, Clock, check_invariants, spec_doc

from ldp.client.runtime import StateError, TelemetryClient
from ldp.encoders import BinaryRREncoder, BinaryRRParams, GRREncoder, GRRParams, RapporEncoder, RapporParams
from ldp.privacy.accountant import BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.privacy.ledger import MAX_CLOCK, ClockError, check_clock
from ldp.randomness import SeededRandomnessWarning, is_seeded
from ldp.reports import ReportError, parse_json
from ldp.spec import CollectionSpec, EnvelopeError, SpecError, parse_envelope

GRR = GRRParams.from_labels(1.0, ["r", "g", "b"])
RAPPOR = RapporParams(16, 2, 4, 0.5, 0.75, 0.5)


# -- item 4: seeds are an explicit, recorded opt-in --------------------------------------------------
def test_seeded_client_is_refused_without_the_simulation_opt_in(tmp_path):
    with pytest.raises(ValueError, match="simulation=True"):
        TelemetryClient(SPEC, tmp_path / "a.db", clock=Clock(), rng=7)
    assert not (tmp_path / "a.db").exists()


def test_two_production_clients_never_share_their_noise(tmp_path):
    lines = []
    for name in ("a", "b"):
        with TelemetryClient(SPEC, tmp_path / f"{name}.db", clock=Clock()) as app:
            for _ in range(2):
                app.record("page", "https://example.com/")
            lines.append([item.line for item in app.pending()])
    assert lines[0] != lines[1]


def test_simulation_is_recorded_in_the_state_file_and_reopening_warns(tmp_path):
    path = tmp_path / "sim.db"
    with TelemetryClient(SPEC, path, clock=Clock(), rng=7, simulation=True) as app:
        app.record("color", "r")
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM ldp_ledger_meta WHERE key='simulation'").fetchone() == ("1",)
    db.close()
    with pytest.warns(SeededRandomnessWarning, match="seeded randomness"):
        TelemetryClient(SPEC, path, clock=Clock()).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TelemetryClient(SPEC, tmp_path / "real.db", clock=Clock()).close()  # a production file: no warning


@pytest.mark.parametrize("make", [
    lambda ledger: GRREncoder(GRR, rng=1, ledger=ledger, metric="m"),
    lambda ledger: BinaryRREncoder(BinaryRRParams(0.25, 0.75), rng=__import__("random").Random(1), ledger=ledger,
                                   metric="m"),
    lambda ledger: RapporEncoder(RAPPOR, rng=1, ledger=ledger, metric="m"),
])
def test_seeded_encoder_with_a_ledger_needs_the_opt_in(make):
    ledger = BudgetLedger(metrics={"m": BudgetPolicy(per_window=PrivacyCost(10.0))})
    with pytest.raises(ValueError, match="simulation=True"):
        make(ledger)
    assert ledger.history() == [] and not ledger.simulation


def test_seeded_encoder_with_the_opt_in_marks_the_ledger():
    ledger = BudgetLedger(metrics={"m": BudgetPolicy(per_window=PrivacyCost(10.0))})
    enc = GRREncoder(GRR, rng=1, ledger=ledger, metric="m", simulation=True)
    enc.encode("g")
    assert ledger.simulation and len(ledger.history()) == 1


def test_seeded_encoder_without_a_ledger_warns_unless_simulation():
    with pytest.warns(SeededRandomnessWarning):
        a = RapporEncoder(RAPPOR, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = RapporEncoder(RAPPOR, rng=1, simulation=True)
        RapporEncoder(RAPPOR)  # the CSPRNG: a fresh secret and cohort, no warning
        GRREncoder(GRR, rng=None)
    assert a.secret == b.secret  # what the warning is about: the seed fixes the secret


@pytest.mark.parametrize("rng, seeded", [(None, False), (7, True), (__import__("random").Random(3), True),
                                         (__import__("numpy").random.default_rng(1), True), (True, False)])
def test_is_seeded(rng, seeded):
    assert is_seeded(rng) is seeded


# -- item 10: clock readings and the wire format ------------------------------------------------------
@pytest.mark.parametrize("reading", [1e300, -1.0, -1e-9, math.nan, math.inf, -math.inf, MAX_CLOCK + 1, 10**400,
                                     "1700000000", None, True])
def test_a_broken_clock_reading_is_refused_before_any_charge(tmp_path, reading):
    clock = Clock()
    with TelemetryClient(SPEC, tmp_path / "s.db", clock=clock) as app:
        app.record("color", "r")
        before = check_invariants(tmp_path / "s.db")
        clock.t = reading
        with pytest.raises(ClockError):
            app.record("color", "g")
        with pytest.raises(ClockError):
            app.pending()
        assert check_invariants(tmp_path / "s.db") == before
        clock.t = T0 + 60  # the file is not bricked: the next good reading works
        app.record("flag", 1)
        assert app.current_window() == math.floor((T0 + 60) / 86400)
        assert all(json.loads(item.line)["window"] >= 0 for item in app.pending())


def test_a_garbage_stored_clock_is_a_state_error(tmp_path):
    path = tmp_path / "s.db"
    TelemetryClient(SPEC, path, clock=Clock()).close()
    for garbage in ("garbage", "1e300", "-5", "nan"):
        db = sqlite3.connect(path)
        db.execute("UPDATE ldp_ledger_meta SET value=? WHERE key='clock'", (garbage,))
        db.commit()
        db.close()
        with TelemetryClient(SPEC, path, clock=Clock()) as app, pytest.raises(StateError, match="clock"):
            app.record("color", "r")


def test_check_clock_accepts_the_whole_range():
    assert check_clock(0) == 0.0 and check_clock(MAX_CLOCK) == MAX_CLOCK and check_clock(T0) == T0


def test_ledger_window_seconds_keep_windows_below_2_53():
    with pytest.raises(ValueError, match="window_seconds"):
        BudgetLedger(window_seconds=1e-6)
    with pytest.raises(ValueError, match="window_seconds"):
        BudgetLedger(window_seconds=10**400)


def test_reports_are_utf8_only():
    line = GRREncoder(GRR).encode("r").to_json()
    assert parse_json(line.encode("utf-8")) == parse_json(line)
    for encoding in ("utf-16", "utf-16-le", "utf-32", "utf-32-be", "utf-8-sig"):
        with pytest.raises(ReportError) as err:
            parse_json(line.encode(encoding))
        assert err.value.reason == "not_json"
    env = json.dumps({"spec": "0" * 16, "metric": "m", "window": 1, "report": json.loads(line)})
    for encoding in ("utf-16", "utf-32"):
        with pytest.raises(EnvelopeError) as err:
            parse_envelope(env.encode(encoding))
        assert err.value.reason == "not_json"


# -- item 7: specs refuse what a client could never run with ------------------------------------------
@pytest.mark.parametrize("change, match", [
    ({"upload": {"max_batch": 10**20}}, "upload.max_batch: must be <= 1,048,576"),
    ({"upload": {"min_interval_seconds": 10**400}}, "upload.min_interval_seconds: must be <= 253,402,300,799"),
    ({"window_seconds": 10**400}, "window_seconds: must be <= 253,402,300,799"),
    ({"budget": {"per_window": 4, "lifetime": 10**400}}, "budget.lifetime: must be a finite number"),
])
def test_spec_refuses_settings_a_client_cannot_run_with(change, match):
    with pytest.raises(SpecError, match=match):
        CollectionSpec.from_dict(spec_doc(**change))


@pytest.mark.parametrize("metric, match", [
    ({"protocol": "grr", "params": {"epsilon": 1, "domain_size": 2**32}}, "counters"),
    ({"protocol": "cms", "params": {"epsilon": 4, "num_hashes": 256, "width": 1 << 23}}, "upload line"),
    ({"protocol": "cms", "params": {"epsilon": 2000, "num_hashes": 16, "width": 1024}}, "too large"),
    ({"protocol": "hcms", "params": {"epsilon": 800, "num_hashes": 16, "width": 1024}}, "too large"),
    ({"protocol": "grr", "params": {"epsilon": 40, "domain_size": 4}}, "too large"),
])
def test_spec_refuses_parameters_that_cannot_be_collected(metric, match):
    doc = spec_doc()
    doc["metrics"]["x"] = {**metric, "budget": {"per_report": 3000}}
    doc["budget"] = {"per_window": 4000, "lifetime": 10000}
    with pytest.raises(SpecError, match=match):
        CollectionSpec.from_dict(doc)
