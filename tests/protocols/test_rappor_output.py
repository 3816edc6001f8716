"""Google's results.csv (writer, reader, R's number text), candidate files, and ``ldp rappor-decode``'s
output options and bad input (issue 20 item 3 and "Bad input")."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support import ROOT, call_main

from ldp.decoders.rappor_decode import RapporEstimates
from ldp.decoders.rappor_output import (
    GOOGLE_COLUMNS,
    decode_text,
    detected_only,
    google_results,
    google_results_csv,
    r_number,
    read_candidates,
    read_google_results,
)
from ldp.decoders.results import Estimates, normal_quantile

EXAMPLE = ROOT / "examples" / "rappor"
DEV_CASES = ROOT.parent / "shared" / "rappor-dev-cases"
FAST = settings(max_examples=150, deadline=None, derandomize=True, database=None)

# the first rows of Google's decode of dev-lasso-3k (N = 10^6), with its one number in scientific notation
GOOGLE_EXCERPT = """\
"string","estimate","std_error","proportion","prop_std_error","prop_low_95","prop_high_95"
"v2",42726,2696,0.042726,0.002696,0.03744184,0.04801016
"v3",35131,1525,0.035131,0.001525,0.032142,0.03812
"v224",2934,1446,0.002934,0.001446,9.98399999999999e-05,0.00576816
"""


def estimates(items: list[str], count: list[float], se: list[float], detected: list[bool], n: int,
              confidence: float = 0.95, duplicate_of: list[str | None] | None = None) -> RapporEstimates:
    extra = {"detected": np.array(detected, dtype=bool)}
    if duplicate_of is not None:
        extra["duplicate_of"] = np.array(duplicate_of, dtype=object)
    return RapporEstimates("rappor", items, n, np.array(count, dtype=float), np.array(se, dtype=float),
                           confidence, extra=extra)


# ---- R's number text -------------------------------------------------------------------------------

@pytest.mark.parametrize("x, text", [
    (24981.0, "24981"), (100000.0, "1e+05"), (120000.0, "120000"), (1200000.0, "1200000"), (3e6, "3e+06"),
    (0.000714, "0.000714"), (0.0001, "1e-04"), (0.0001234, "0.0001234"), (7.14e-05, "7.14e-05"),
    (9.98399999999999e-05, "9.98399999999999e-05"), (0.1 + 0.2, "0.3"), (0.0, "0"), (-0.0, "0"), (1.0, "1"),
    (-2.5, "-2.5"), (1 / 3, "0.333333333333333"), (1e100, "1e+100"), (1.5e-300, "1.5e-300"),
    (math.inf, "Inf"), (-math.inf, "-Inf"),
])
def test_r_number_writes_what_r_writes(x: float, text: str) -> None:
    assert r_number(x) == text


@FAST
@given(st.floats(-1e300, 1e300))  # 15 digits of the largest doubles round past the last one
def test_r_number_keeps_15_significant_digits(x: float) -> None:
    text = r_number(x)
    assert math.isclose(float(text), x, rel_tol=5e-15)  # large integers print whole in fixed notation, as in R
    assert len(text) <= len(f"{x:.14e}")  # never wider than R's widest form


# ---- the writer --------------------------------------------------------------------------------------

def test_writer_matches_googles_file_byte_for_byte() -> None:
    google = read_google_results(GOOGLE_EXCERPT)
    # counts with fractions (floored, as Google does), an undetected candidate, rows out of order
    est = estimates(["v3", "absent", "v224", "v2"], [35131.7, 50_000.0, 2934.2, 42726.9],
                    [1525.99, 1.0, 1446.5, 2696.01], [True, False, True, True], 1_000_000)
    assert google_results_csv(est) == GOOGLE_EXCERPT
    assert [(r.string, r.estimate, r.std_error) for r in google_results(est).rows] == \
        [(r.string, r.estimate, r.std_error) for r in google.rows]


@pytest.mark.skipif(not DEV_CASES.is_dir(), reason="the RAPPOR dev cases are not beside the repository")
@pytest.mark.parametrize("case", sorted(p.name for p in DEV_CASES.glob("dev-*")) if DEV_CASES.is_dir() else [])
def test_writer_and_reader_reproduce_the_dev_cases_results(case: str) -> None:
    text = (DEV_CASES / case / "google_results.csv").read_text(encoding="utf-8")
    google = read_google_results(text)
    assert google.to_csv() == text
    n = sum(int(line.split(",")[0]) for line in (DEV_CASES / case / "case_counts.csv").read_text().split())
    rows = google.rows
    est = estimates([r.string for r in rows], [r.estimate + 0.5 for r in rows], [r.std_error + 0.5 for r in rows],
                    [True] * len(rows), n)
    assert google_results_csv(est) == text


def test_other_confidence_levels_name_their_columns() -> None:
    est = estimates(["a"], [500.0], [100.0], [True], 1000, confidence=0.9)
    text = google_results_csv(est)
    assert text.splitlines()[0] == ('"string","estimate","std_error","proportion","prop_std_error",'
                                    '"prop_low_90","prop_high_90"')
    back = read_google_results(text)
    assert back.level == "90" and back.rows[0].prop_low == pytest.approx(0.5 - normal_quantile(0.9) * 0.1, rel=1e-14)
    assert google_results(estimates(["a"], [1.0], [1.0], [True], 10, confidence=0.975)).level == "97.5"
    z95 = google_results(estimates(["a"], [500.0], [100.0], [True], 1000)).rows[0]
    assert (z95.prop_low, z95.prop_high) == (0.5 - 1.96 * 0.1, 0.5 + 1.96 * 0.1)  # Google's 1.96, not 1.95996


def test_intervals_are_clamped_and_duplicates_left_out(caplog: pytest.LogCaptureFixture) -> None:
    est = estimates(["big", "twin", "small"], [990.0, math.nan, 3.0], [50.0, math.nan, 30.0], [True, True, True],
                    1000, duplicate_of=[None, "big", None])
    with caplog.at_level(logging.WARNING, logger="ldp.decoders.rappor_output"):
        rows = google_results(est).rows
    assert [r.string for r in rows] == ["big", "small"] and "1 detected candidate(s) left out" in caplog.text
    assert rows[0].prop_high == 1.0 and rows[1].prop_low == 0.0
    assert google_results_csv(estimates([], [], [], [], 0)) == ",".join(f'"{c}"' for c in GOOGLE_COLUMNS) + "\n"
    with pytest.raises(ValueError, match="'detected' column"):
        google_results(Estimates("grr", ["a"], 10, np.array([1.0]), np.array([1.0])))


STRINGS = st.text(st.characters(codec="utf-8"), max_size=12)


@FAST
@given(st.lists(st.tuples(STRINGS, st.floats(0, 1e9), st.floats(0, 1e7)), max_size=8, unique_by=lambda t: t[0]),
       st.integers(1, 10**10), st.sampled_from([0.95, 0.9, 0.99]))
def test_round_trip(rows: list[tuple[str, float, float]], n: int, confidence: float) -> None:
    est = estimates([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [True] * len(rows), n,
                    confidence)
    written = google_results(est)
    text = written.to_csv()
    back = read_google_results(text)
    assert back.to_csv() == text and back.level == written.level
    assert [r.string for r in back.rows] == [r.string for r in written.rows]
    for a, b in zip(back.rows, written.rows, strict=True):
        assert (a.estimate, a.std_error) == (b.estimate, b.std_error)
        for x, y in [(a.proportion, b.proportion), (a.prop_low, b.prop_low), (a.prop_high, b.prop_high)]:
            assert x == pytest.approx(y, rel=1e-14, abs=1e-300)
    assert back.proportions() == {r.string: r.proportion for r in back.rows}


# ---- the reader --------------------------------------------------------------------------------------

HEADER = ",".join(f'"{c}"' for c in GOOGLE_COLUMNS)


@pytest.mark.parametrize("text, message", [
    ("", "is empty"),
    ('"string","estimate"\n', "line 1: expected the header"),
    (HEADER.replace("high_95", "high_90") + "\n", "line 1: expected the header"),
    (HEADER + '\n"a",1,2\n', "line 2: expected 7 fields, got 3"),
    (HEADER + '\n"a",1,1,0.1,0.1,0,0.3\n"b",x,1,0.1,0.1,0,0.3\n', "line 3: estimate 'x' is not a number"),
    (HEADER + '\n"a",1,1,0.1,0.1,0,0.3\n"a",1,1,0.1,0.1,0,0.3\n', "line 3: string 'a' repeats line 2"),
    (HEADER + '\n"a",1,1,0.1,0.1,0,1_0\n', "prop_high_95 '1_0' is not a number"),
])
def test_reader_names_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_google_results(text)


def test_reader_accepts_a_bom_and_r_missing_values() -> None:
    res = read_google_results("\ufeff" + HEADER + '\n"a",NA,1,0.1,0.1,0,Inf\n')
    assert math.isnan(res.rows[0].estimate) and res.rows[0].prop_high == math.inf and res.level == "95"


@FAST
@given(st.text(max_size=200))
def test_reader_fuzz_parses_or_says_why(tail: str) -> None:
    for text in (tail, HEADER + "\n" + tail):
        try:
            res = read_google_results(text)
        except ValueError:
            continue
        assert len({r.string for r in res.rows}) == len(res.rows)


# ---- candidate files ---------------------------------------------------------------------------------

def test_candidate_files() -> None:
    assert read_candidates("\ufeffa\r\n\r\n  \nb c \rd\x85e\n".encode()) == ["a", "b c ", "d\x85e"]
    assert read_candidates("x\u2028y\nz".encode()) == ["x\u2028y", "z"]  # only \n, \r\n and \r end lines
    assert read_candidates(b"") == [] and read_candidates(b"\n \n") == []
    with pytest.raises(ValueError, match=r"c.txt line 4: candidate 'a' repeats line 1"):
        read_candidates(b"a\nb\n\na\n", "c.txt")
    with pytest.raises(ValueError, match=r"c.txt is not UTF-8 text: byte 8 \(line 2\) is b'\\xe9'"):
        read_candidates("abc\r\ncaf\u00e9\n".encode("latin-1"), "c.txt")
    with pytest.raises(ValueError, match="UTF-16 byte-order mark"):
        read_candidates("a\nb\n".encode("utf-16"), "c.txt")
    assert decode_text(b"\xef\xbb\xbfk,h\r\n1,2\r", "p.csv") == "k,h\n1,2\n"


LINE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"),
               min_size=1, max_size=10).filter(lambda s: bool(s.strip()) and not s.startswith("\ufeff"))


@FAST
@given(st.lists(LINE, max_size=10, unique=True), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans(),
       st.lists(st.sampled_from(["", " ", "\t"]), max_size=3), st.booleans())
def test_candidate_file_round_trip(cands: list[str], newline: str, bom: bool, blanks: list[str], last: bool) -> None:
    lines = blanks + cands[:1] + blanks + cands[1:]
    data = (b"\xef\xbb\xbf" if bom else b"") + (newline.join(lines) + (newline if last else "")).encode()
    assert read_candidates(data) == cands


@FAST
@given(st.binary(max_size=80))
def test_candidate_file_fuzz(data: bytes) -> None:
    try:
        cands = read_candidates(data, "f")
    except ValueError as exc:
        assert str(exc).startswith("f ")
        return
    assert len(set(cands)) == len(cands) and all(c.strip() and "\n" not in c and "\r" not in c for c in cands)


# ---- the command -------------------------------------------------------------------------------------

GOOGLE_ARGS = ("--params", str(EXAMPLE / "params.csv"), "--counts", str(EXAMPLE / "counts.csv"))


def test_google_csv_and_detected_only() -> None:
    base = ("rappor-decode", *GOOGLE_ARGS, "--map", str(EXAMPLE / "map.csv"))
    status, out, _ = call_main([*base, "--json"])
    assert status == 0
    everything = json.loads(out)["estimates"]
    detected = [r["item"] for r in everything if r["detected"]]
    assert 0 < len(detected) < len(everything)
    status, out, _ = call_main([*base, "--json", "--detected-only"])
    assert status == 0 and [r["item"] for r in json.loads(out)["estimates"]] == detected
    status, out, _ = call_main([*base, "--csv", "--detected-only"])
    assert status == 0 and [line.split(",")[0] for line in out.splitlines()[1:]] == detected
    status, out, _ = call_main([*base, "--google-csv"])
    res = read_google_results(out)
    assert status == 0 and [r.string for r in res.rows] == detected and res.to_csv() == out
    assert res.rows[0].estimate == math.floor(everything[0]["count"]) and res.rows[0].string == "www.site1.example"
    status, out, _ = call_main([*base, "--google-csv", "--confidence", "0.9"])
    assert status == 0 and read_google_results(out).level == "90"
    status, out, err = call_main([*base, "--google-csv", "--all"])
    assert status == 2 and out == "" and "detected candidates only" in err
    status, out, err = call_main([*base, "--csv", "--all", "--detected-only"])
    assert status == 2 and "not allowed with argument" in err


@pytest.fixture(scope="module")
def aggregate_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ldp.decoders.rappor import RapporAggregate
    from ldp.encoders.rappor import RapporParams

    params = RapporParams(16, 2, 8, 0.25, 0.75, 0.5, mode="google")
    agg = RapporAggregate.simulate(params, {"heavy": 20_000, "médium": 10_000}, rng=1)
    path = tmp_path_factory.mktemp("agg") / "agg.bin"
    path.write_bytes(agg.to_bytes())
    return path


@pytest.mark.parametrize("data, message", [
    (b"heavy\nm\xc3\xa9dium\nheavy\n", "line 3: candidate 'heavy' repeats line 1"),
    ("heavy\nmédium\n".encode("latin-1"), "is not UTF-8 text: byte 7 (line 2)"),
    (b"\n  \n", "holds no candidates"),
])
def test_bad_candidate_files_are_refused(aggregate_file: Path, tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "cands.txt"
    path.write_bytes(data)
    status, out, err = call_main(["rappor-decode", "--aggregate", str(aggregate_file), "--candidates", str(path)])
    assert status == 2 and out == "" and message in err and str(path) in err


def test_bom_and_blank_lines_decode_as_the_plain_file(aggregate_file: Path, tmp_path: Path) -> None:
    outs = []
    for name, data in [("plain", b"heavy\nm\xc3\xa9dium\nabsent\n"),
                       ("bom", b"\xef\xbb\xbf\r\nheavy\r\n\r\nm\xc3\xa9dium\r\n \r\nabsent")]:
        (tmp_path / name).write_bytes(data)
        status, out, _ = call_main(["rappor-decode", "--aggregate", str(aggregate_file), "--candidates",
                                    str(tmp_path / name), "--json"])
        assert status == 0
        outs.append(json.loads(out)["estimates"])
    assert outs[0] == outs[1] and {r["item"] for r in outs[0] if r["detected"]} == {"heavy", "médium"}


def test_map_rows_of_the_wrong_length_name_the_line(tmp_path: Path) -> None:
    lines = (EXAMPLE / "map.csv").read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0]
    (tmp_path / "map.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    status, out, err = call_main(["rappor-decode", *GOOGLE_ARGS, "--map", str(tmp_path / "map.csv")])
    assert status == 2 and out == "" and "map.csv line 3: expected 1 + m·h" in err
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + (EXAMPLE / "map.csv").read_bytes())
    status, out, _ = call_main(["rappor-decode", *GOOGLE_ARGS, "--map", str(tmp_path / "bom.csv"), "--google-csv"])
    assert status == 0 and out == call_main(["rappor-decode", *GOOGLE_ARGS, "--map", str(EXAMPLE / "map.csv"),
                                             "--google-csv"])[1]


# ---- the table ---------------------------------------------------------------------------------------

def test_table_leaves_out_empty_columns() -> None:
    est = estimates(["a", "b"], [10.0, 2.0], [1.0, 1.0], [True, False], 100, duplicate_of=[None, None])
    est = RapporEstimates("rappor", est.items, 100, est.count, est.std_error,
                          extra={**est.extra, "p_value": np.array([1.2e-8, 0.3]), "z": np.array([np.nan, np.nan])})
    header = est.table().split("\n")[2].split()
    assert "duplicate_of" not in header and "z" not in header and "p_value" in header
    assert "1.2e-08" in est.table()
    twin = estimates(["a", "b"], [10.0, math.nan], [1.0, math.nan], [True, True], 100, duplicate_of=[None, "a"])
    assert "duplicate_of" in twin.table().split("\n")[2].split()
    empty = Estimates("grr", [], 0, np.array([]), np.array([]))
    assert empty.table().split("\n")[1].split()[:2] == ["item", "count"]
    assert detected_only(twin).items == ["a", "b"] and detected_only(est).items == ["a"]
