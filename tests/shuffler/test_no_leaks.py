"""The shuffler leaks nothing its guarantees do not allow (issue 57, items 1 and 2, the shuffler's side).

* **Canonical bytes.** Chunks written before the ingest service stored lines canonically (older data) reach the shuffler
  in any formatting: every line it mixes comes out in the clients' canonical bytes — the same report in five
  formattings is five identical lines of the segment — exactly (payload in schema order) for the specs it is given,
  in the envelope's shape for the others (counted ``unverified``); a line that is no report is dropped (it stays in
  the replica that rejected it, issue 70). The
  one-match fast path agrees with the line-by-line rule on any mix (a differential property test).
* **Thresholds per metric.** With ``min_reports: 100``, metric b of 30 reports in W1 is withheld on its own: none of
  its lines reaches a segment, its window's other metric is released, ``ldp shuffle --spec`` gives it no central ε;
  in W2 (200) it is released. A property over random counts and thresholds: no metric below its threshold is
  ever written, every metric at or above it is, a window is held only when nothing in it could be released.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from ingest.test_canonical_door import EXAMPLE, HOMEPAGE, five_formattings, random_formatting
from support import ROOT

from ldp.pipeline.canonical import canonical_line
from ldp.shuffler import ChunkBatch, chunk_key, encode_chunk, shuffle_app
from ldp.shuffler.lines import LineRules
from ldp.shuffler.plan import Thresholds, plan_run
from ldp.spec import CollectionSpec
from ldp.storage import Store, open_store

DAY = 86400
W1, W2 = 20000 * DAY, 20001 * DAY
SPEC_DOC = json.loads((ROOT / "examples" / "collection.json").read_text())
SPEC = CollectionSpec.from_dict(SPEC_DOC)
STRICT = CollectionSpec.from_dict({**SPEC_DOC, "release": {"min_reports": 100}})
CLOSED = "apps/demo/segments/closed/"


def of_metric(name: str, spec: CollectionSpec = SPEC) -> list[bytes]:
    """The example reports of one metric, as lines of ``spec``."""
    return [ln.replace(SPEC.fingerprint.encode(), spec.fingerprint.encode()) + b"\n" for ln in EXAMPLE
            if f'"metric":"{name}"'.encode() in ln]


def put(store: Store, replica: str, seq: int, *batches: ChunkBatch, at: float = W1 + 60) -> None:
    store.put(chunk_key("demo", replica, at, seq), encode_chunk(batches))


def segments(store: Store) -> list[bytes]:
    return [ln for k in store.list(CLOSED) for ln in store.get(k).splitlines(keepends=True)]


# -- canonical bytes -----------------------------------------------------------------------------------------------


def test_five_formattings_are_five_identical_lines_of_the_segment(store: Store) -> None:
    variants = five_formattings(HOMEPAGE)
    put(store, "r1", 1, *(ChunkBatch(f"b{i}", W1, DAY, v) for i, v in enumerate(variants)))
    run = shuffle_app(store, "demo", now=W1 + DAY + 400, specs={SPEC.fingerprint: SPEC}, min_reports=1)
    assert segments(store) == [HOMEPAGE + b"\n"] * 5
    (w,) = run.windows.values()
    assert w["lines"] == {"rewritten": 4} and w["by_metric"] == {f"{SPEC.fingerprint}/homepage": 5}


def test_without_the_spec_the_shape_is_made_canonical_and_counted_unverified(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    variants = five_formattings(HOMEPAGE)
    junk = b"not a report at all\n"
    put(store, "r1", 1, ChunkBatch("a", W1, DAY, b"".join(variants) + junk + b"\n"))
    run = shuffle_app(store, "demo", now=W1 + DAY + 400, min_reports=1)
    obj = json.loads(HOMEPAGE)  # the reordered variant: its payload order cannot be known without the schema
    obj["report"]["payload"] = dict(reversed(obj["report"]["payload"].items()))
    swapped = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    assert Counter(segments(store)) == Counter({HOMEPAGE + b"\n": 4, swapped: 1})  # the junk line dropped
    (w,) = run.windows.values()
    assert w["lines"] == {"rewritten": 4, "unverified": 5, "rejected": 1, "blank": 1}
    assert w["by_metric"] == {f"{SPEC.fingerprint}/homepage": 5}  # nothing unparsed reaches a segment


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(EXAMPLE) - 1), st.integers(0, 3), st.integers(0, 2**32)), max_size=12),
       st.booleans())
def test_the_fast_path_agrees_with_the_line_by_line_rule(picks: list[tuple[int, int, int]], with_spec: bool) -> None:
    """Any mix of canonical lines, other formattings, junk, blank lines and lines of another spec: the batch's result
    is the concatenation of each line's (the fast path taken when all are canonical)."""
    rules = LineRules({SPEC.fingerprint: SPEC} if with_spec else {})
    lines = []
    for i, kind, seed in picks:
        line = EXAMPLE[i]
        lines.append([line, random_formatting(line, random.Random(seed)), b"{junk", b" ",
                      ][kind] + b"\n")
    whole, found = rules.canonical(b"".join(lines))
    each = [rules.canonical(ln) for ln in lines]
    assert whole == b"".join(out for out, _ in each)
    assert found.to_dict() == Counter(c for _, f in each for c, n in f.to_dict().items() for _ in range(n))
    for out, f in each:
        if out and not f.rejected:
            assert rules.canonical(out)[0] is out  # canonical: a fixed point, taken by the fast path
            if with_spec:
                assert out == canonical_line(out[:-1], {SPEC.fingerprint: SPEC}) + b"\n"


def test_a_payload_out_of_schema_order_is_caught_only_with_the_spec() -> None:
    obj = json.loads(HOMEPAGE)
    obj["report"]["payload"] = dict(reversed(obj["report"]["payload"].items()))
    swapped = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    assert LineRules().canonical(swapped) == (swapped, LineRules().canonical(swapped)[1])
    out, found = LineRules({SPEC.fingerprint: SPEC}).canonical(swapped)
    assert out == HOMEPAGE + b"\n" and found.rewritten == 1


# -- thresholds per metric -----------------------------------------------------------------------------------------


def test_a_metric_below_its_threshold_is_withheld_on_its_own(store: Store, tmp_path: Path) -> None:
    """The issue's case: b (dark_mode) has 30 reports in W1, 200 in W2; min_reports 100; a (homepage) 200 in W1."""
    a, b = of_metric("homepage", STRICT), of_metric("dark_mode", STRICT)
    put(store, "r1", 1, ChunkBatch("a1", W1, DAY, b"".join(a)), ChunkBatch("b1", W1, DAY, b"".join(b[:30])))
    put(store, "r2", 1, ChunkBatch("b2", W2, DAY, b"".join(b)), at=W2 + 60)
    run = shuffle_app(store, "demo", now=W2 + DAY + 400, specs={STRICT.fingerprint: STRICT}, min_reports=1)
    w1, w2 = run.windows[f"{W1}:{DAY}"], run.windows[f"{W2}:{DAY}"]
    key_a, key_b = f"{STRICT.fingerprint}/homepage", f"{STRICT.fingerprint}/dark_mode"
    assert w1["by_metric"] == {key_a: 200} and w1["withheld_metrics"] == {key_b: [30, 100]}
    assert w2["by_metric"] == {key_b: 200} and "withheld_metrics" not in w2
    w1_lines = store.get(w1["segment"]).splitlines(keepends=True)
    assert Counter(w1_lines) == Counter(a) and not set(b[:30]) & set(w1_lines)
    assert Counter(segments(store)) == Counter(a + b)  # b's W1 reports reach no segment at all
    assert store.list("apps/demo/incoming/") == []  # consumed: withheld for good, not kept anywhere


def test_the_threshold_counts_devices_not_reports(store: Store) -> None:
    """``min_reports: 2`` with homepage's cap of 2 reports per device and window: 2 reports may be one device's
    (withheld), 3 are at least 2 devices (released); dark_mode (one report per device): 2 reports are 2 devices."""
    two = CollectionSpec.from_dict({**SPEC_DOC, "release": {"min_reports": 2}})
    home, dark = of_metric("homepage", two), of_metric("dark_mode", two)
    put(store, "r1", 1, ChunkBatch("a", W1, DAY, b"".join(home[:2])), ChunkBatch("b", W1, DAY, b"".join(dark[:2])))
    put(store, "r1", 2, ChunkBatch("c", W2, DAY, b"".join(home[:3])), at=W2 + 60)
    run = shuffle_app(store, "demo", now=W2 + DAY + 400, specs={two.fingerprint: two})
    w1, w2 = run.windows[f"{W1}:{DAY}"], run.windows[f"{W2}:{DAY}"]
    assert w1["withheld_metrics"] == {f"{two.fingerprint}/homepage": [1, 2]}  # 2 reports, 1 device
    assert w1["by_metric"] == {f"{two.fingerprint}/dark_mode": 2}
    assert w2["by_metric"] == {f"{two.fingerprint}/homepage": 3} and "withheld_metrics" not in w2


def test_ldp_shuffle_gives_no_central_epsilon_for_a_withheld_metric(tmp_path: Path) -> None:
    from support import call_main

    store = open_store(tmp_path / "s")
    a, b = of_metric("homepage", STRICT), of_metric("dark_mode", STRICT)
    put(store, "r1", 1, ChunkBatch("a1", W1, DAY, b"".join(a)), ChunkBatch("b1", W1, DAY, b"".join(b[:30])))
    spec_path = tmp_path / "strict.json"
    spec_path.write_text(json.dumps(STRICT.to_dict()))
    code, out, err = call_main(["shuffle", "--min-reports", "1",
                                "--store", str(tmp_path / "s"), "--app", "demo", "--spec", str(spec_path),
                                "--json"])
    assert code == 0, err
    (central,) = json.loads(out)["central"].values()
    withheld = central[f"{STRICT.fingerprint}/dark_mode"]
    assert withheld["central"] is None and withheld["withheld"] == [30, 100] and withheld["n"] == 0
    assert central[f"{STRICT.fingerprint}/homepage"]["central"] is not None
    put(store, "r1", 2, ChunkBatch("a2", W1, DAY, b"".join(a)), ChunkBatch("b2", W1, DAY, b"".join(b[:30])))
    code, text, _ = call_main(["shuffle", "--min-reports", "1",
                               "--store", str(tmp_path / "s"), "--app", "demo", "--spec", str(spec_path)])
    assert code == 0 and "dark_mode: withheld: 30 of 100 devices" in text
    assert not re.search(r"dark_mode: central ε", text)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.tuples(st.integers(0, 3), st.sampled_from("abc")), st.integers(1, 50), max_size=10),
       st.dictionaries(st.sampled_from("abc"), st.integers(0, 40)), st.integers(0, 30), st.integers(0, 3),
       st.integers(1, 4))
def test_no_metric_below_its_threshold_is_ever_released(counts: dict[tuple[int, str], int], own: dict[str, int],
                                                         floor: int, days_on: int, k: int) -> None:
    """Random per-(window, metric) counts, thresholds and reports per device: a released window writes exactly its
    metrics from at least their threshold in devices (reports over the k one device may send, rounded up); a window
    is held only while every metric in it is below, withheld whole after the hold."""
    specs = [_Spec(own, k)]
    threshold = Thresholds(specs, floor)
    per: dict[tuple[int, int], dict[str, int]] = {}
    for (w, m), n in counts.items():
        per.setdefault((w * DAY, DAY), {})[f"fp/{m}"] = n
    index = {f"chunk{w}": {w_: len(ms)} for w, (w_, ms) in enumerate(per.items())}
    now = 4 * DAY + 10 + days_on * DAY
    plan = plan_run(index, lambda ready: {w: per[w] for w in ready}, now, 0, 2 * DAY, threshold)
    for w, ms in per.items():
        below = {m for m, n in ms.items() if (n + k - 1) // k < threshold(m)}
        if w in plan.released and w not in plan.withheld:
            assert set(plan.drop.get(w, {})) == below and below != set(ms)
            assert all(plan.drop[w][m] == [(ms[m] + k - 1) // k, threshold(m)] for m in below)
        elif w in plan.withheld:
            assert below == set(ms)
        else:
            assert below == set(ms) and now < w[0] + w[1] + 2 * DAY  # held, within its hold
        for m in ms:
            assert threshold(m) == max(floor, own.get(m.split("/")[1], 0))


def test_a_metric_without_a_threshold_is_withheld_and_one_of_an_unknown_spec_is_one_device() -> None:
    """No floor and no spec threshold: withheld whatever its count; a spec not given: at most one device, however
    many reports (released only under a threshold of 1)."""
    none = Thresholds([_Spec({}, 1)])
    assert none("fp/a") is None and none.below("fp/a", 10**6) == [10**6, None] and none.missing() == [
        "fp/a", "fp/b", "fp/c"]
    assert none("other/x") is None and none.below("other/x", 5) == [1, None]
    one = Thresholds([], 1)
    assert one.below("other/x", 10**6) is None and one.devices("other/x", 0) == 0
    two = Thresholds([], 2)
    assert two.below("other/x", 10**6) == [1, 2]  # a thousand reports of an unknown metric may be one device's


class _Spec:
    """The part of a spec :class:`~ldp.shuffler.plan.Thresholds` reads: fingerprint, metrics, release thresholds,
    and the budgets that say how many reports one device may send in a window (``k``)."""

    fingerprint = "fp"

    def __init__(self, own: dict[str, int], k: int) -> None:
        self.own, self.k = own, k
        self.metrics = {m: None for m in "abc"}

    def reports_per_window(self, name: str) -> int:
        return self.k

    def release_for(self, name: str) -> Any:
        return type("R", (), {"min_reports": self.own.get(name)})()



def test_a_bad_floor_is_refused() -> None:
    for bad in (-1, True, 2.5):
        with pytest.raises(ValueError, match="min_reports"):
            Thresholds([], bad)  # type: ignore[arg-type]
