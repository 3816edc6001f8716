"""``ldp shuffle``: one run from the command line, its text and JSON, and bad input refused with one line and
status 2 (never an internal error), whatever the options."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from support import call_main
from test_stage import DAY, batch, write

from ldp.storage.local import LocalStore


def test_a_run_from_the_command_line(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    write(store, "r1", 1, batch("a", 3), batch("b", 2))
    today = int(time.time()) // DAY * DAY
    spanning = write(store, "r2", 1, batch("b", 2), batch("c", 1, window=today), at=today)  # today: not ended
    code, out, _ = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "s"), "--app", "demo"])
    assert code == 0 and "nothing to mix: 4 batches wait for their window to end" in out  # day 0 waits for today
    store.delete(spanning)
    write(store, "r2", 1, batch("b", 2))  # r2's chunk of day 0 only
    code, out, _ = call_main(["shuffle", "--min-reports", "1",
                              "--store", str(tmp_path / "s"), "--app", "demo", "--json"])
    doc = json.loads(out)
    assert code == 0 and doc["chunks"] == 2 and doc["duplicates"] == 1
    (w,) = doc["windows"].values()
    assert w["reports"] == 5 and w["replicas"] == 1 and w["segment"].startswith("apps/demo/segments/closed/")


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    for argv, text in ((["--app", "Bad App"], "an app name"), (["--app", "demo", "--store-option", "x"], "KEY=VALUE"),
                       (["--app", "demo", "--store", "s3://"], "protocol://bucket")):
        args = ["shuffle", "--min-reports", "1",
                "--store", str(tmp_path), *argv] if "--store" not in argv else ["shuffle", *argv]
        code, _, err = call_main(args)
        assert code == 2 and text in err and "Traceback" not in err
        assert err.splitlines()[-1].startswith("ldp shuffle: error:")  # after argparse's usage line, if any


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["--grace", "-1", "10", "--dedup-days", "0", "nan", "--keep-originals", "--json",
                                 "--store-option", "a=b", "--app", "demo", "x", "--lease-seconds", "5"]), max_size=6))
def test_option_combinations_never_end_in_an_internal_error(extra: list[str]) -> None:
    code, _, err = call_main(["shuffle", "--min-reports", "1",
                              "--store", "/nonexistent/ldp-store", "--app", "demo", *extra])
    assert code in (0, 2) and "internal error" not in err and "Traceback" not in err


def test_with_the_spec_each_metric_gets_its_central_guarantee_and_min_reports(tmp_path: Path) -> None:
    """--spec: each metric's central ε from the reports of it the window's segment holds (below its local ε₀), a
    line it cannot place named so; and the spec's release.min_reports holds a window too small."""
    from support import ROOT

    from ldp.shuffler import ChunkBatch
    from ldp.spec import CollectionSpec

    spec_path = ROOT / "examples" / "collection.json"
    spec = CollectionSpec.load(spec_path)
    good = [ln for ln in (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
            if ln.startswith(b'{"spec":"' + spec.fingerprint.encode())]
    store = LocalStore(tmp_path / "s")
    foreign = (b'{"spec":"0000000000000000","metric":"x","window":1,"report":{"v":1,"protocol":"rr","params":'
               b'"0000000000000000","payload":{"i":1}}}\n')
    write(store, "r1", 1, ChunkBatch("g1", DAY, DAY, b"".join(good[:200])), ChunkBatch("f", DAY, DAY, foreign))
    write(store, "r2", 1, ChunkBatch("g2", DAY, DAY, b"".join(good[200:400])))
    code, out, err = call_main(["shuffle", "--min-reports", "1",
                                "--store", str(tmp_path / "s"), "--app", "demo", "--spec", str(spec_path),
                                "--json"])
    assert code == 0, err
    doc = json.loads(out)
    (window,) = doc["central"].values()
    assert window["0000000000000000/x"]["central"] is None and "not a metric" in window["0000000000000000/x"]["note"]
    ours = [m for k, m in window.items() if k.startswith(spec.fingerprint)]
    assert sum(m["n"] for m in ours) == 400 and ours
    for m in ours:
        if m["central"] is not None:
            k = m["reports_per_window"]  # a device's k reports: local k·ε₀ (homepage: 2 a window)
            assert m["central"]["epsilon0"] == pytest.approx(k * m["epsilon0"])
            assert m["central"]["n"] == m["n"] and m["central"]["epsilon"] <= k * m["epsilon0"]
            assert m["central"]["epsilon"] <= m["central"]["epsilon0"]
    code, text, _ = call_main(["shuffle", "--min-reports", "1",
                               "--store", str(tmp_path / "s"), "--app", "demo", "--spec", str(spec_path)])
    assert code == 0 and "nothing to mix" in text  # consumed

    strict = json.loads(spec_path.read_text())
    strict["release"] = {"min_reports": 10_000}
    (tmp_path / "strict.json").write_text(json.dumps(strict))
    yesterday = (int(time.time()) // DAY - 1) * DAY
    write(store, "r1", 2, ChunkBatch("g3", yesterday, DAY, b"".join(good[:50])), at=yesterday + 60)
    code, out, _ = call_main(["shuffle", "--min-reports", "1",
                              "--store", str(tmp_path / "s"), "--app", "demo", "--spec",
                              str(tmp_path / "strict.json"), "--grace", "0", "--json"])
    assert code == 0 and json.loads(out)["windows"] == {}  # 50 < 10,000: held (for a week by default)
    code, out, _ = call_main(["shuffle", "--store", str(tmp_path / "s"), "--app", "demo", "--spec",
                              str(tmp_path / "strict.json"), "--grace", "0", "--min-reports", "10", "--json"])
    assert code == 0 and json.loads(out)["windows"] == {}  # the flag is a floor: it never lowers a spec's threshold


def test_no_run_without_a_threshold(tmp_path: Path) -> None:
    """Neither --spec nor --min-reports: refused before anything is read or written, saying how to state one; a
    spec whose metrics set no release.min_reports is refused naming them; --min-reports 1 states the choice."""
    from support import ROOT

    store = LocalStore(tmp_path / "s")
    write(store, "r1", 1, batch("a", 3))
    base = ["shuffle", "--store", str(tmp_path / "s"), "--app", "demo"]
    code, out, err = call_main(base)
    assert code == 2 and out == "" and "no release threshold (no spec given)" in err and "--min-reports 1" in err
    assert store.list("apps/demo/shuffler/") == [] and len(store.list("apps/demo/incoming/")) == 1
    code, _, err = call_main([*base, "--spec", str(ROOT / "examples" / "collection.json")])
    assert code == 2 and "/dark_mode" in err and "no release.min_reports in its spec" in err
    code, out, _ = call_main([*base, "--min-reports", "1"])
    assert code == 0 and "window " in out
