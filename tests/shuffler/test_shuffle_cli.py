"""``ldp shuffle``: one run from the command line, its text and JSON, and bad input refused with one line and
status 2 (never an internal error), whatever the options."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hypothesis import given, settings, strategies as st
from support import call_main
from test_stage import DAY, batch, write

from ldp.storage.local import LocalStore


def test_a_run_from_the_command_line(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    write(store, "r1", 1, batch("a", 3), batch("b", 2))
    today = int(time.time()) // DAY * DAY
    spanning = write(store, "r2", 1, batch("b", 2), batch("c", 1, window=today), at=today)  # today: not ended
    code, out, _ = call_main(["shuffle", "--store", str(tmp_path / "s"), "--app", "demo"])
    assert code == 0 and "nothing to mix: 4 batches wait for their window to end" in out  # day 0 waits for today
    store.delete(spanning)
    write(store, "r2", 1, batch("b", 2))  # r2's chunk of day 0 only
    code, out, _ = call_main(["shuffle", "--store", str(tmp_path / "s"), "--app", "demo", "--json"])
    doc = json.loads(out)
    assert code == 0 and doc["chunks"] == 2 and doc["duplicates"] == 1
    (w,) = doc["windows"].values()
    assert w["reports"] == 5 and w["replicas"] == 1 and w["segment"].startswith("apps/demo/segments/closed/")


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    for argv, text in ((["--app", "Bad App"], "an app name"), (["--app", "demo", "--store-option", "x"], "KEY=VALUE"),
                       (["--app", "demo", "--store", "s3://"], "protocol://bucket")):
        args = ["shuffle", "--store", str(tmp_path), *argv] if "--store" not in argv else ["shuffle", *argv]
        code, _, err = call_main(args)
        assert code == 2 and text in err and "Traceback" not in err
        assert err.splitlines()[-1].startswith("ldp shuffle: error:")  # after argparse's usage line, if any


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["--grace", "-1", "10", "--dedup-days", "0", "nan", "--keep-originals", "--json",
                                 "--store-option", "a=b", "--app", "demo", "x"]), max_size=6))
def test_option_combinations_never_end_in_an_internal_error(extra: list[str]) -> None:
    code, _, err = call_main(["shuffle", "--store", "/nonexistent/ldp-store", "--app", "demo", *extra])
    assert code in (0, 2) and "internal error" not in err and "Traceback" not in err
