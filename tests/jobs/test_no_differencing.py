"""No view differences a withheld window out (issue 57, item 2: the analysis side).

The report: with ``release.min_reports`` 100, metric b had 30 reports in W1 (withheld: ``not enough reports yet — 30
of 100``) and 200 in W2 (released); ``ldp decode --window all`` (230, released) minus W2 gave W1's counts exactly, and
so did ``/v1/estimates`` (``window=`` W2 and ``all``). Now every pooled view — ``--window all``, several window files
decoded together (a range), ``ldp merge --all-windows``, the fold's pooled entry that ``/v1/estimates`` and the
dashboard read — sums the windows of at least ``min_reports`` reports each, and names the others as left out.

Tested here: the attack through the CLI and through the API (no pair of released views differences to W1; the
pooled view names W1), a withheld latest window, ``ldp merge --all-windows``, and a hypothesis property over random
per-window counts and thresholds (every released view is exactly the sum of releasable windows, so any difference of
two is a signed sum of releasable windows)."""

from __future__ import annotations

import itertools
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ldp.jobs import Section, write_jsonl
from ldp.jobs.decode import decode_aggregate, decode_job, select_windows
from ldp.jobs.fold import key_name
from ldp.jobs.release import pool_windows, release
from ldp.jobs.store import canonical_bytes, merge_all, merge_files, read_aggregate, write_aggregate
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec, Envelope

W1, W2 = 20000, 20001  # 2024-10-04 and 2024-10-05
N1, N2 = 30, 200
MIN_REPORTS = 100
LABELS = ["red", "green", "blue"]
ANALYST = "no-differencing-analyst-token-0123456789abcdef"


def spec_doc(min_reports: int | None = MIN_REPORTS) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "spec_version": 1, "name": "nodiff", "budget": {"per_window": 10, "lifetime": 1000},
        "metrics": {"b": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3, "labels": LABELS},
                          "budget": {"per_report": 1}}}}
    if min_reports is not None:
        doc["release"] = {"min_reports": min_reports}
    return doc


def window_lines(spec: CollectionSpec, window: int, n: int, seed: int) -> list[str]:
    """``n`` reports of metric b in ``window``; W1's devices mostly hold ``red``, W2's ``blue``: W1's counts are not
    W2's, so a difference that gave them back would show."""
    m = spec.metrics["b"]
    rng = np.random.default_rng(seed)
    values = rng.choice(3, size=n, p=[0.8, 0.1, 0.1] if window == W1 else [0.1, 0.1, 0.8])
    batch = get_protocol(m.protocol).encoder_type(m.params).encode_batch(values, rng)
    s = Section(spec.fingerprint, "b", window, batch)
    return [Envelope(s.spec, s.metric, s.window, r).to_json() for r in s.reports.reports()]


def counts_of(view: dict[str, Any]) -> np.ndarray:
    """A released view's counts, item by item (``ldp decode --json``'s ``estimates``, or an API entry's ``rows``)."""
    if "estimates" in view:
        rows = {e["item"]: e["count"] for e in view["estimates"]}
    else:
        rows = {r["item"]: r["estimate"] for r in view["rows"]}
    assert sorted(rows) == sorted(LABELS), view
    return np.array([rows[label] for label in LABELS], dtype=float)


def assert_not_recoverable(released: dict[str, np.ndarray], secret: np.ndarray) -> None:
    """No released view, and no difference of two (either order), is W1's counts."""
    assert np.abs(secret).max() > 1.0  # W1's estimate is not zero: the test could see it
    for name, c in released.items():
        assert not np.allclose(c, secret, rtol=1e-6, atol=1e-6), name
    for (a, ca), (b, cb) in itertools.permutations(released.items(), 2):
        assert not np.allclose(ca - cb, secret, rtol=1e-6, atol=1e-6), (a, b)


@pytest.fixture(name="job")
def job_fixture(tmp_path: Path, run_ldp: Any) -> tuple[Path, Path]:
    """The reported case: W1 of 30 reports and W2 of 200 under min_reports 100, aggregated by window with the CLI."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec_doc()))
    spec = CollectionSpec.load(spec_path)
    write_jsonl(tmp_path / "up.jsonl", window_lines(spec, W1, N1, 1) + window_lines(spec, W2, N2, 2))
    status, _, err = run_ldp("aggregate", str(tmp_path / "up.jsonl"), "--spec", str(spec_path), "--out",
                             str(tmp_path / "job"), "--by-window", "-q")
    assert status == 0, err
    return spec_path, tmp_path / "job"


def decode_json(run_ldp: Any, spec_path: Path, *paths: Path | str, window: str | None = None,
                owner: bool = False) -> dict[str, Any]:
    argv = ["decode", *map(str, paths), "--spec", str(spec_path), "--metric", "b", "--json"]
    argv += [] if window is None else ["--window", window]
    argv += ["--no-release"] if owner else []
    status, out, err = run_ldp(*argv)
    assert status == 0, err
    return dict(json.loads(out))


def test_the_reported_attack_through_the_cli(job, run_ldp):
    spec_path, folder = job
    fp = CollectionSpec.load(spec_path).metrics["b"].params_fingerprint
    one = decode_json(run_ldp, spec_path, folder, window=str(W1))
    assert one["release"]["released"] is False and "estimates" not in one and one["window"] == W1
    assert one["release"]["reason"] == f"not enough reports yet — {N1} of {MIN_REPORTS}"
    two = decode_json(run_ldp, spec_path, folder, window=str(W2))
    assert two["release"]["released"] and two["n"] == N2 and "left_out" not in two["release"]
    pooled = decode_json(run_ldp, spec_path, folder, window="all")
    left = [{"window": W1, "n": N1, "reason": f"not enough reports yet — {N1} of {MIN_REPORTS}"}]
    assert pooled["window"] == "all" and pooled["n"] == N2 and pooled["release"]["released"]
    assert pooled["release"]["left_out"] == left and pooled["release"]["pooled_windows"] == 1
    assert pooled["release"]["text"] == f"window {W1} left out of the pooled view (not enough reports yet — " \
                                        f"{N1} of {MIN_REPORTS})"
    latest = decode_json(run_ldp, spec_path, folder, window="latest")
    assert latest["window"] == W2 and latest["n"] == N2
    # a range: the two window files given, pooled
    files = [folder / "aggregates" / f"{key_name(('b', fp, w))}.agg" for w in (W1, W2)]
    ranged = decode_json(run_ldp, spec_path, *files, window="all")
    assert ranged["n"] == N2 and ranged["release"]["left_out"] == left
    released = {"W2": counts_of(two), "all": counts_of(pooled), "latest": counts_of(latest),
                "range": counts_of(ranged)}
    for c in released.values():
        assert c == pytest.approx(released["W2"], rel=0, abs=0)  # every released view is W2's, exactly
    # the data owner's views: W1's counts, and the attack as it was (the old pooled view minus W2 gave them)
    secret = counts_of(decode_json(run_ldp, spec_path, folder, window=str(W1), owner=True))
    everything = decode_json(run_ldp, spec_path, folder, window="all", owner=True)
    assert everything["n"] == N1 + N2 and everything["release"]["left_out"] == []
    assert counts_of(everything) - released["W2"] == pytest.approx(secret, rel=1e-9, abs=1e-6)
    assert_not_recoverable(released, secret)
    # the table says it too, and which window "latest" is
    status, out, _ = run_ldp("decode", str(folder), "--spec", str(spec_path), "--metric", "b", "--window", "all")
    assert status == 0 and f"release: window {W1} left out of the pooled view (not enough reports yet — 30 of 100)" \
        in out
    status, out, _ = run_ldp("decode", str(folder), "--spec", str(spec_path), "--metric", "b", "--window", "latest")
    assert status == 0 and f", window latest ({W2})" in out


def test_a_withheld_latest_window_is_shown_withheld(job, run_ldp):
    spec_path, folder = job
    status, out, _ = run_ldp("decode", str(folder), "--spec", str(spec_path), "--metric", "b", "--window", "latest")
    assert status == 0 and "not released" not in out
    only_w1 = next((folder / "aggregates").glob(f"b.*.w{W1}.agg"))
    got = decode_json(run_ldp, spec_path, only_w1, window="latest")  # W1 is the latest there: withheld, not replaced
    assert got["window"] == W1 and got["release"]["released"] is False and "estimates" not in got
    status, out, _ = run_ldp("decode", str(only_w1), "--spec", str(spec_path), "--window", "latest")
    assert status == 0 and f"window latest ({W1})" in out and "not released: not enough reports yet — 30 of 100" in out
    # pooled over W1 alone: nothing released, W1 named
    pooled = decode_json(run_ldp, spec_path, only_w1, window="all")
    assert pooled["n"] == 0 and pooled["release"]["released"] is False and "estimates" not in pooled
    assert pooled["release"]["reason"] == (f"not enough reports yet — no window has 100 reports of its own: window "
                                           f"{W1} left out of the pooled view (not enough reports yet — 30 of 100)")


def test_merge_all_windows_leaves_out_withheld_windows(job, run_ldp, tmp_path):
    spec_path, folder = job
    fp = CollectionSpec.load(spec_path).metrics["b"].params_fingerprint
    name = key_name(("b", fp, None))
    status, _, err = run_ldp("merge", str(folder), "--all-windows", "--out", str(tmp_path / "total"))
    assert status == 2 and "--all-windows needs --spec" in err
    status, _, err = run_ldp("merge", str(folder), "--spec", str(spec_path), "--out", str(tmp_path / "total"))
    assert status == 2 and "--spec is for --all-windows" in err
    status, out, err = run_ldp("merge", str(folder), "--all-windows", "--spec", str(spec_path), "--out",
                               str(tmp_path / "total"), "--json")
    assert status == 0, err
    doc = json.loads(out)
    left = [{"window": W1, "n": N1, "reason": f"not enough reports yet — {N1} of {MIN_REPORTS}"}]
    assert doc == {name: {"path": str(tmp_path / "total" / f"{name}.agg"), "windows": [W2], "left_out": left}}
    merged = read_aggregate(tmp_path / "total" / f"{name}.agg")
    w2 = read_aggregate(folder / "aggregates" / f"{key_name(('b', fp, W2))}.agg")
    assert merged.n == N2 and canonical_bytes(merged) == canonical_bytes(w2)  # W2 alone, byte for byte
    # decoding the merged file: W2's estimate, so merged minus W2 is nothing
    dec = decode_json(run_ldp, spec_path, tmp_path / "total" / f"{name}.agg")
    assert dec["n"] == N2 and counts_of(dec) == pytest.approx(counts_of(
        decode_json(run_ldp, spec_path, folder, window=str(W2))), rel=0, abs=0)
    status, out, _ = run_ldp("merge", str(folder), "--all-windows", "--spec", str(spec_path), "--out",
                             str(tmp_path / "total2"))
    assert status == 0 and f"  left out: window {W1} (not enough reports yet — 30 of 100)" in out
    # every window withheld: no file, and it says so (one output file: refused)
    only_w1 = next((folder / "aggregates").glob(f"b.*.w{W1}.agg"))
    status, _, err = run_ldp("merge", str(only_w1), "--all-windows", "--spec", str(spec_path), "--out",
                             str(tmp_path / "x.agg"))
    assert status == 2 and f"every window of {name} is left out" in err and not (tmp_path / "x.agg").exists()
    status, out, _ = run_ldp("merge", str(only_w1), "--all-windows", "--spec", str(spec_path), "--out",
                             str(tmp_path / "none"), "--json")
    assert status == 0 and json.loads(out) == {name: {"path": None, "windows": [], "left_out": left}}
    assert not list((tmp_path / "none").glob("*.agg"))
    # without --all-windows: lossless, one window stays one window (no threshold to apply)
    status, _, _ = run_ldp("merge", str(folder), "--out", str(tmp_path / "same"))
    assert status == 0 and sorted(p.name for p in (tmp_path / "same").glob("*.agg")) == sorted(
        p.name for p in (folder / "aggregates").glob("*.agg"))


def test_the_reported_attack_through_the_api(tmp_path):
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ldp.ingest.access import ReadAccess
    from ldp.ingest.config import token_sha256
    from ldp.ingest.dashboard import dashboard_routes, render_dashboard
    from ldp.ingest.watch import JOB_DIR, fold_app
    from ldp.jobs.decode import decode_file

    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec_doc()))
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    closed = data / "apps" / "demo" / "segments" / "closed"
    closed.mkdir(parents=True)
    write_jsonl(closed / "20260101T000001Z-0000000000000001.jsonl",
                window_lines(spec, W1, N1, 1) + window_lines(spec, W2, N2, 2))
    doc = fold_app(data, "demo", [spec_path])
    assert doc["accepted"] == N1 + N2
    routes = dashboard_routes(data, ["demo"], access=ReadAccess([token_sha256(ANALYST)]))
    views: dict[str, dict[str, Any]] = {}
    with TestClient(Starlette(routes=routes)) as client:
        assert client.get("/v1/estimates", params={"window": "all"}).status_code == 401
        auth = {"Authorization": f"Bearer {ANALYST}"}
        for window in (str(W1), str(W2), "latest", "all", None):
            r = client.get("/v1/estimates", params={} if window is None else {"window": window}, headers=auth)
            assert r.status_code == 200
            (m,) = r.json()["apps"]["demo"]["metrics"]
            if window is None:  # the whole entry: the pooled view and every window kept
                views["entry"] = m
                for w in m["windows"]:
                    views[f"entry.windows[{w['window']}]"] = w
            else:
                views[window] = m
    one = views[str(W1)]
    assert one["rows"] == [] and one["release"]["released"] is False and one["n"] == N1
    left = [{"window": W1, "n": N1, "reason": f"not enough reports yet — {N1} of {MIN_REPORTS}"}]
    for pooled in (views["all"], views["entry"]):
        assert pooled["n"] == N2 and pooled["release"]["released"] and pooled["release"]["left_out"] == left
    assert views["entry"]["window_n"] == {str(W1): N1, str(W2): N2}  # each window's n: public already
    released = {k: counts_of(v) for k, v in views.items() if v["release"] and v["release"]["released"]}
    assert set(released) == {str(W2), "latest", "all", "entry", f"entry.windows[{W2}]"}
    for c in released.values():
        assert c == pytest.approx(released[str(W2)], rel=0, abs=0)
    _, secret = decode_file(data / "apps" / "demo" / JOB_DIR, {spec.fingerprint: spec}, metric="b", window=W1)
    assert_not_recoverable(released, np.asarray(secret.count, dtype=float))
    html = render_dashboard(data, ["demo"])
    assert "<dt>Windows left out of the pooled estimate</dt><dd>2024-10-04 (not enough reports yet — 30 of 100)" \
        in html
    assert "<dt>Pooled estimate (all windows)</dt><dd>200 reports of the 1 window(s) released</dd>" in html
    assert "<dt>Reports in all windows</dt><dd>230</dd>" in html


# -- the property: every released view is the sum of releasable windows -------------------------------------------

W0 = 19000


@st.composite
def collections(draw: Any) -> tuple[dict[int, list[int]], int | None]:
    """Per window (1 to 5 of the first 10 after W0) the true counts of its devices' 3 values (1 to 80 devices), and
    the metric's ``min_reports`` (``None``: no threshold)."""
    windows = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))
    truth = {W0 + w: draw(st.lists(st.integers(0, 30), min_size=3, max_size=3).filter(lambda c: sum(c) > 0))
             for w in windows}
    return truth, draw(st.none() | st.integers(0, 90))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.integers(0, 2**32 - 1))
def test_every_released_view_is_a_sum_of_releasable_windows(case, seed):
    from ldp.ingest.series import decode_metrics, estimate_rows

    truth, min_reports = case
    spec = CollectionSpec.from_dict(spec_doc(min_reports))
    specs = {spec.fingerprint: spec}
    m = spec.metrics["b"]
    policy = spec.release_for("b")
    rng = np.random.default_rng(seed)
    aggs = {w: get_protocol("grr").aggregate_type.simulate(m.params, t, rng) for w, t in sorted(truth.items())}
    releasable = [w for w, a in aggs.items() if min_reports is None or a.n >= min_reports]
    withheld = [w for w in aggs if w not in releasable]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "aggregates"
        names = {w: key_name(("b", m.params_fingerprint, w)) for w in aggs}
        for w, a in aggs.items():
            write_aggregate(folder / f"{names[w]}.agg", a)
        # every view ldp decode releases, with the windows it holds
        views: dict[str, tuple[list[int], Any]] = {}
        for w in aggs:
            d = decode_job(folder, specs, window=w)
            out = release(d.estimates, policy, d.n)
            assert out.released == (w in releasable)
            if out.released:
                views[f"w{w}"] = ([w], d.estimates)
        d = decode_job(folder, specs, window="all")
        out = release(d.estimates, policy, d.n, pooling=d.pooling)
        assert d.pooling is not None and list(d.pooling.pooled) == releasable and d.n == sum(
            aggs[w].n for w in releasable)
        assert [e["window"] for e in d.pooling.left_out] == withheld
        assert [e["n"] for e in d.pooling.left_out] == [aggs[w].n for w in withheld]
        assert out.released == bool(releasable)
        if out.released:
            views["all"] = (releasable, d.estimates)
        sel = select_windows([folder], window="all")
        assert pool_windows({w: a.n for w, a in sel.windows.items()}, policy).pooled == tuple(releasable)
        # each released view is exactly the estimate of the merge of its windows, all releasable: so the difference
        # of any two is a signed sum of releasable windows, and no withheld window is in any
        for key, (ws, est) in views.items():
            assert set(ws) <= set(releasable), key
            want = decode_aggregate(merge_all(aggs[w] for w in ws))
            assert np.array_equal(est.count, want.count) and np.array_equal(est.std_error, want.std_error), key
        for (a, (wa, _)), (b, (wb, _)) in itertools.permutations(views.items(), 2):
            assert (set(wa) ^ set(wb)) <= set(releasable), (a, b)
        # ldp merge --all-windows: the merge of the releasable windows, byte for byte (or no file)
        merged = merge_files([folder], Path(tmp) / "total", all_windows=True, specs=specs)
        pooled_name = key_name(("b", m.params_fingerprint, None))
        assert merged.pooled[pooled_name] == releasable
        assert [e["window"] for e in merged.left_out[pooled_name]] == withheld
        if releasable:
            assert read_aggregate(merged[pooled_name]).to_bytes() == canonical_bytes(
                merge_all(aggs[w] for w in releasable))
        else:
            assert pooled_name not in merged
        # the fold (estimates.json, which /v1/estimates and the dashboard read): the same rule
        (entry,) = decode_metrics(folder, specs, {names[w]: {"n": a.n} for w, a in aggs.items()}, None,
                                  confidence=0.95, alpha=0.05, keep=10, now=datetime(2030, 1, 1, tzinfo=UTC))
        assert entry["n"] == sum(aggs[w].n for w in releasable)
        assert [e["window"] for e in entry["release"]["left_out"]] == withheld
        assert entry["release"]["released"] == bool(releasable)
        if releasable:
            want_rows = estimate_rows(release(decode_aggregate(merge_all(aggs[w] for w in releasable)), policy,
                                              entry["n"]).estimates)["rows"]
            assert entry["rows"] == want_rows
        else:
            assert entry["rows"] == []
        for w in entry["windows"]:
            assert bool(w["rows"]) <= (w["window"] in releasable)
            assert w["release"]["released"] == (w["window"] in releasable)


def test_the_pooling_rule_and_its_words():
    from ldp.jobs.release import release_info
    from ldp.spec import Release

    policy = Release(min_reports=100, min_z=2.0)
    p = pool_windows({W2: 200, W1: 30, W1 + 5: 100, None: 7}, policy)
    assert p.pooled == (W2, W1 + 5) and p.n == 300 and not p.empty
    assert [e["window"] for e in p.left_out] == [None, W1]  # the aggregate without a window is one unit, first
    state = release_info(policy, p.n, 2, pooling=p)
    assert state["released"] and state["pooled_windows"] == 2 and state["left_out"] == list(p.left_out)
    assert state["text"] == ("2 items below 2 SE withheld; 2 windows left out of the pooled view: (no window) (not "
                             "enough reports yet — 7 of 100), 20000 (not enough reports yet — 30 of 100)")
    # exactly min_reports is released; held windows (the central target) are left out whatever their count
    held = pool_windows({W1: 100, W2: 5000}, policy, held={W2: "withheld: central target: too much"})
    assert held.pooled == (W1,) and held.left_out == ({"window": W2, "n": 5000,
                                                      "reason": "withheld: central target: too much"},)
    # many windows left out: the text names the first few, the list has them all
    many = pool_windows({W0 + k: k for k in range(9)}, policy)
    assert many.empty and len(many.left_out) == 9 and many.text().endswith(" and 4 more (listed in left_out)")
    out = release(None, policy, many.n, pooling=many)
    assert not out.released and out.to_dict()["reason"].startswith(
        "not enough reports yet — no window has 100 reports of its own: 9 windows left out of the pooled view: ")
    # the data owner's view pools everything, and says the thresholds were not applied
    owner = pool_windows({W1: 30, W2: 200}, policy, apply=False)
    assert owner.pooled == (W1, W2) and owner.n == 230 and owner.left_out == ()
    assert "--no-release" in release(None, policy, owner.n, pooling=owner, apply=False).text
    # no threshold: every window; no window at all: nothing left out, the usual rule on n = 0
    assert pool_windows({W1: 1, W2: 2}, Release()).pooled == (W1, W2)
    none = pool_windows({}, policy)
    assert not none.empty and release_info(policy, 0, pooling=none)["reason"] == "not enough reports yet — 0 of 100"
