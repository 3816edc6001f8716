"""The `ldp` error contract (issue 15, item 5): every command on bad input exits with status 2 and ends
stderr with one line ``ldp <command>: error: ...``; never a traceback. Regression tests for the failures
found, the exception mapping, the exact format and a closed pipe in a subprocess, and a hypothesis fuzz
test that drives every command with generated options and files."""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support import ROOT, call_main

from ldp.cli.command import main
from ldp.plan.rappor_ngrams import ngrams_default_params

EXAMPLE = ROOT / "examples" / "collection.json"
WINDOW = 20000


def prog_of(argv: list[str]) -> str:
    return "ldp " + " ".join(argv[:2] if argv[0] == "spec" else argv[:1])


def assert_contract(argv: list[str], status: int, err: str) -> None:
    """Status 0 or 2, no traceback; on 2 the last stderr line is the only ``ldp <command>: error:`` one."""
    assert status in (0, 2), (argv, status, err[-2000:])
    assert "Traceback" not in err, (argv, err[-2000:])
    if status == 2:
        prog = prog_of(argv)
        assert err.endswith("\n"), (argv, err)
        lines = err.rstrip("\n").split("\n")
        assert lines[-1].startswith(f"{prog}: error: ") and len(lines[-1]) > len(prog) + 9, (argv, err)
        assert sum(line.startswith(f"{prog}: error:") for line in lines) == 1, (argv, err)


def assert_bad_input(argv: list[str], *needles: str) -> str:
    """``argv`` fails as bad input; returns the error line (which contains every needle)."""
    status, _, err = call_main(argv)
    assert status == 2, (argv, status, err)
    assert_contract(argv, status, err)
    last = err.rstrip("\n").split("\n")[-1]
    for needle in needles:
        assert needle in last, (needle, last)
    return last


# --------------------------------------------------------------------------------------------
# files: valid ones, and damaged ones
# --------------------------------------------------------------------------------------------


def _spec_doc() -> dict[str, Any]:
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["metrics"]["emoji"] = {"protocol": "cms", "params": {"epsilon": 2.0, "num_hashes": 4, "width": 16},
                               "candidates": "homepage_candidates.txt", "budget": {"per_report": 2.0}}
    doc["budget"]["per_window"] = 8.0
    return doc


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Named files for the fuzz test: valid inputs of every command, and empty, garbage, truncated,
    missing and folder stand-ins."""
    from ldp.decoders.pem import PEMAggregate
    from ldp.decoders.rappor import RapporAggregate
    from ldp.decoders.rappor_decode import CandidateMap
    from ldp.decoders.sfp import SfpAggregate
    from ldp.encoders.pem import PEMEncoder, PEMParams
    from ldp.encoders.rappor import RapporParams
    from ldp.encoders.sfp import SfpEncoder, SfpParams
    from ldp.jobs.formats import sections_from_envelopes, write_binary, write_csv, write_jsonl
    from ldp.protocols import get_protocol
    from ldp.spec import CollectionSpec, Envelope

    d = tmp_path_factory.mktemp("contract")
    f: dict[str, Path] = {"missing": d / "missing.agg", "dir": d / "folder"}
    f["dir"].mkdir()
    (d / "empty").write_bytes(b"")
    f["empty"] = d / "empty"
    f["garbage"] = d / "garbage.bin"
    f["garbage"].write_bytes(bytes(np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8)))
    f["utf16"] = d / "utf16.txt"
    f["utf16"].write_text("hello,1\nworld,2\n", encoding="utf-16")
    f["deep"] = d / "deep.json"
    f["deep"].write_text("[" * 100_000)

    params = RapporParams(16, 2, 4, 0.25, 0.75, 0.5, mode="google")
    agg = RapporAggregate.simulate(params, {"heavy": 3000, "medium": 1500}, rng=1)
    cands = ["heavy", "medium", "absent"]
    f["params.csv"], f["counts.csv"], f["map.csv"] = d / "params.csv", d / "counts.csv", d / "map.csv"
    f["params.csv"].write_text(params.to_google_csv())
    f["counts.csv"].write_text(agg.to_google_counts())
    good_map = CandidateMap.from_candidates(params, cands).to_google_map()
    f["map.csv"].write_text(good_map)
    f["map_bigint.csv"] = d / "map_bigint.csv"
    f["map_bigint.csv"].write_text("heavy," + ",".join([str(2**63)] * 8) + "\n")
    f["map_cr.csv"] = d / "map_cr.csv"
    f["map_cr.csv"].write_bytes(good_map.replace("heavy,", "hea\rvy,").encode())
    f["cands.txt"] = d / "cands.txt"
    f["cands.txt"].write_text("\n".join(cands) + "\n")
    f["rappor.agg"] = d / "rappor.agg"
    f["rappor.agg"].write_bytes(agg.to_bytes())
    sfp = SfpParams(4.0, 6.0, word_num_hashes=4, word_width=64, fragment_num_hashes=4, fragment_width=64)
    batch = SfpEncoder(sfp).encode_batch(np.repeat([0, 1], [300, 200]), rng=1, candidates=["hello", "world"])
    f["sfp.bin"] = d / "sfp.bin"
    f["sfp.bin"].write_bytes(batch.to_bytes())
    f["sfp.jsonl"] = d / "sfp.jsonl"
    f["sfp.jsonl"].write_text("\n".join(r.to_json() for r in batch.reports()) + "\n")
    sagg = SfpAggregate(sfp)
    sagg.add_bytes(batch.to_bytes())
    f["sfp.agg"] = d / "sfp.agg"
    f["sfp.agg"].write_bytes(sagg.to_bytes())
    pem = PEMParams(4.0, max_length=3, top_k=4)
    batch = PEMEncoder(pem).encode_batch(np.repeat([0, 1], [300, 200]), rng=1, candidates=["cat", "dog"])
    f["pem.bin"] = d / "pem.bin"
    f["pem.bin"].write_bytes(batch.to_bytes())
    f["pem.jsonl"] = d / "pem.jsonl"
    f["pem.jsonl"].write_text("\n".join(r.to_json() for r in batch.reports()) + "\n")
    pagg = PEMAggregate(pem)
    pagg.add_bytes(batch.to_bytes())
    f["pem.agg"] = d / "pem.agg"
    f["pem.agg"].write_bytes(pagg.to_bytes())

    from ldp.decoders.rappor_ngrams import RapporNgramsAggregate
    from ldp.encoders.rappor_ngrams import RapporNgramsEncoder

    ngrams = ngrams_default_params(8.0, max_length=4, alphabet="abcd")
    batch = RapporNgramsEncoder(ngrams, simulation=True).encode_batch(np.repeat([0, 1], [300, 200]), rng=1,
                                                                      candidates=["abcd", "dab"])
    f["ngrams.bin"] = d / "ngrams.bin"
    f["ngrams.bin"].write_bytes(batch.to_bytes())
    f["ngrams.jsonl"] = d / "ngrams.jsonl"
    f["ngrams.jsonl"].write_text("\n".join(r.to_json() for r in batch.reports()) + "\n")
    nagg = RapporNgramsAggregate(ngrams)
    nagg.add_bytes(batch.to_bytes())
    f["ngrams.agg"] = d / "ngrams.agg"
    f["ngrams.agg"].write_bytes(nagg.to_bytes())

    spec_dir = d / "spec"
    spec_dir.mkdir()
    shutil.copy(ROOT / "examples" / "homepage_candidates.txt", spec_dir)
    f["spec.json"] = spec_dir / "spec.json"
    f["spec.json"].write_text(json.dumps(_spec_doc()))
    spec = CollectionSpec.load(f["spec.json"])
    rng = np.random.default_rng(2)
    homepages = (ROOT / "examples" / "homepage_candidates.txt").read_text().split()
    envs = []
    for name, m in spec.metrics.items():
        enc = get_protocol(m.protocol).encoder_type(m.params)
        if m.protocol in ("grr", "rr"):
            b = enc.encode_batch(rng.integers(0, m.params.domain_size, 20), rng)
        else:
            b = enc.encode_batch(rng.integers(0, 3, 20), rng, candidates=homepages[:3])
        envs += [Envelope(spec.fingerprint, name, WINDOW, r) for r in b.reports()]
    for ext, write in (("jsonl", write_jsonl), ("csv", write_csv)):
        f[f"up.{ext}"] = d / f"up.{ext}"
        write(f[f"up.{ext}"], envs)
    f["up.ldpe"] = d / "up.ldpe"
    write_binary(f["up.ldpe"], sections_from_envelopes(envs))
    status, _, err = call_main(["fold", str(f["up.jsonl"]), "--spec", str(f["spec.json"]), "--out", str(d / "agg"),
                                "-q"])
    assert status == 0, err
    for p in sorted((d / "agg" / "aggregates").glob("*.agg")):
        f[p.name.split(".")[0] + ".agg"] = p
    for name in [k for k in f if k.endswith((".agg", ".ldpe", ".csv", ".jsonl", ".bin"))]:
        data = f[name].read_bytes()
        f[name + ".trunc"] = d / (name + ".trunc")
        f[name + ".trunc"].write_bytes(data[: len(data) * 2 // 3])
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x41
        f[name + ".flip"] = d / (name + ".flip")
        f[name + ".flip"].write_bytes(bytes(flipped))
    return f


# --------------------------------------------------------------------------------------------
# the failures found (issue 15, item 5)
# --------------------------------------------------------------------------------------------


def _spec_with(tmp_path: Path, protocol: str, epsilon: float) -> Path:
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["budget"] = {"per_window": 4000.0, "lifetime": 20000.0}
    doc["metrics"] = {"m": {"protocol": protocol, "params": {"epsilon": epsilon, "num_hashes": 4, "width": 16},
                            "budget": {"per_report": epsilon}}}
    path = tmp_path / f"{protocol}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("argv", [
    ["privacy", "grr", "--epsilon", "800", "--d", "4"],
    ["simulate", "--protocol", "grr", "--epsilon", "800", "--d", "4", "--n", "100", "--trials", "2"],
    ["plan", "--recommend", "--epsilon", "800", "--d", "10"],
    ["privacy", "rr", "--epsilon", "800"],
    ["privacy", "cms", "--param", "epsilon=2000", "--param", "num_hashes=4", "--param", "width=16"],
    ["privacy", "grr", "--param", "epsilon=1e400", "--param", "domain_size=4"],
])
def test_huge_epsilon_is_bad_input(argv):
    assert_bad_input(argv, "epsilon")


@pytest.mark.parametrize("protocol, epsilon", [("cms", 2000.0), ("hcms", 800.0)])
def test_spec_and_aggregate_with_a_huge_sketch_epsilon(tmp_path, protocol, epsilon):
    spec = _spec_with(tmp_path, protocol, epsilon)
    assert_bad_input(["spec", "validate", str(spec)], str(spec), "epsilon")
    (tmp_path / "up.jsonl").write_text("{}\n")
    assert_bad_input(["fold", str(tmp_path / "up.jsonl"), "--spec", str(spec), "--out", str(tmp_path / "o")],
                     "epsilon")


def test_simulate_with_no_users_is_refused_by_the_option():
    assert_bad_input(["simulate", "--protocol", "grr", "--epsilon", "1", "--d", "16", "--n", "0"],
                     "argument --n: must be an integer >= 1, got '0'")


@pytest.mark.parametrize("argv", [
    ["rappor-decode", "--aggregate", "{missing}", "--candidates", "x.txt"],
    ["sfp-discover", "--aggregate", "{missing}"],
    ["sfp-discover", "--reports", "{missing}", "--param", "word_epsilon=2"],
    ["pem-discover", "--aggregate", "{missing}"],
    ["pem-discover", "--reports", "{missing}", "--param", "epsilon=2"],
    ["ngrams-discover", "--aggregate", "{missing}"],
    ["rappor-decode", "--params", "{folder}", "--counts", "x", "--map", "y"],
    ["decode", "{missing}", "--spec", "s.json"],
])
def test_missing_files_are_named(tmp_path, argv):
    (tmp_path / "folder").mkdir()
    argv = [a.format(missing=tmp_path / "missing.agg", folder=tmp_path / "folder") for a in argv]
    assert_bad_input(argv, str(tmp_path))


def _closed_pipe(argv: list[str], read_first_line: bool) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "ldp", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    if read_first_line:  # like `| head -1`
        assert proc.stdout.readline()
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


def test_a_closed_pipe_is_a_quiet_success():
    """`ldp plan --recommend ... --json | head`: the reader closed stdout; no traceback, status 0."""
    assert _closed_pipe(["plan", "--recommend", "--epsilon", "1", "--d", "200", "--json"], False) == (0, "")
    assert _closed_pipe(["privacy", "rr", "--json"], True) == (0, "")
    assert _closed_pipe(["privacy", "rr", "--json"], False) == (0, "")


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_in_process_returns_0_quietly():
    err = io.StringIO()
    with contextlib.redirect_stdout(_ClosedPipe()), contextlib.redirect_stderr(err):
        assert main(["plan", "--recommend", "--epsilon", "1", "--d", "20", "--json"]) == 0
        assert main(["privacy", "rr"]) == 0
    assert err.getvalue() == ""


def test_the_exact_stderr_lines_in_a_subprocess():
    def ldp(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ldp", *argv], capture_output=True, text=True, timeout=120)

    res = ldp("privacy", "grr", "--epsilon", "nan", "--d", "4")  # argparse: usage, then the error line
    assert res.returncode == 2 and res.stdout == "" and res.stderr.startswith("usage: ldp privacy ")
    assert res.stderr.endswith("\nldp privacy: error: argument --epsilon: must be a finite number, got 'nan'\n")
    res = ldp("privacy", "grr", "--epsilon", "800", "--d", "4")  # deeper code: exactly one line
    assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1
    assert res.stderr.startswith("ldp privacy: error: ") and "epsilon" in res.stderr


def test_map_csv_big_integers_and_stray_cr_name_the_line():
    from ldp.decoders.rappor_decode import CandidateMap
    from ldp.encoders.rappor import RapporParams

    params = RapporParams(16, 2, 2, 0.25, 0.75, 0.5)
    good = CandidateMap.from_candidates(params, ["a", "b"]).to_google_map()
    with pytest.raises(ValueError, match="map.csv line 3: row index outside 1..m·k = 32"):
        CandidateMap.from_google_map(params, good + "c," + ",".join([str(2**63)] * 4) + "\n")
    with pytest.raises(ValueError, match="map.csv line 1: row index outside"):
        CandidateMap.from_google_map(params, "c," + ",".join([str(-(2**63))] * 4) + "\n")
    with pytest.raises(ValueError, match="map.csv line 2: expected 1 \\+ m·h = 5 fields, got 1"):
        CandidateMap.from_google_map(params, good.replace("b,", "b\r,"))
    with pytest.raises(ValueError, match="map.csv line 1: not valid CSV"):
        CandidateMap.from_google_map(params, "x" * 200_000 + ",1,1,1,1\n")
    for newline in ("\r\n", "\r"):  # whole lines ending in CR LF or CR are fine
        again = CandidateMap.from_google_map(params, good.replace("\n", newline))
        assert again.candidates == ["a", "b"] and again.to_google_map() == good


def test_rappor_decode_with_a_bad_map_names_the_line(files):
    base = ["rappor-decode", "--params", str(files["params.csv"]), "--counts", str(files["counts.csv"])]
    assert call_main([*base, "--map", str(files["map.csv"]), "--json"])[0] == 0
    assert_bad_input([*base, "--map", str(files["map_bigint.csv"])], "map.csv line 1")
    assert_bad_input([*base, "--map", str(files["utf16"])], "not UTF-8")


@pytest.mark.parametrize("argv", [
    ["merge", "{missing}", "--out", "{out}"],
    ["fold", "{missing}", "--spec", "{missing}", "--out", "{out}"],
    ["decode", "{garbage}", "--spec", "{garbage}"],
    ["fold", "{garbage}", "--spec", "{garbage}", "--out", "{out}"],
])
def test_server_commands_name_themselves(tmp_path, argv):
    (tmp_path / "garbage").write_bytes(b"\x00\xff junk")
    argv = [a.format(missing=tmp_path / "none", out=tmp_path / "out", garbage=tmp_path / "garbage") for a in argv]
    assert_bad_input(argv, f"ldp {argv[0]}: error: ")


def test_a_spec_with_several_errors_lists_them_then_ends_with_the_error_line(tmp_path):
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["window_seconds"], doc["metrics"]["app_category"]["params"]["epsilon"] = "day", 0
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    for argv in (["spec", "validate", str(tmp_path / "bad.json")],
                 ["fold", str(tmp_path), "--spec", str(tmp_path / "bad.json"), "--out", str(tmp_path / "o")]):
        status, out, err = call_main(argv)
        assert status == 2 and out == ""
        lines = err.splitlines()
        assert len(lines) == 3 and all(line.startswith("  ") for line in lines[:2])
        assert lines[2] == f"{prog_of(argv)}: error: {tmp_path / 'bad.json'}: 2 error(s), listed above"


# --------------------------------------------------------------------------------------------
# the mapping in main(): whatever deeper code raises
# --------------------------------------------------------------------------------------------


def _raiser(exc: BaseException) -> Callable[..., Any]:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return boom


BAD = [
    (OverflowError("math range error"), "too large or too small to compute with (OverflowError: math range error)"),
    (ZeroDivisionError("float division by zero"), "must not be zero"),
    (FileNotFoundError(2, "No such file or directory", "x.agg"), "x.agg: No such file or directory"),
    (PermissionError(13, "Permission denied", "/root/x"), "/root/x: Permission denied"),
    (IsADirectoryError(21, "Is a directory", "d"), "d: Is a directory"),
    (__import__("csv").Error("new-line character seen in unquoted field"), "malformed input (Error: new-line"),
    (b"\xff".decode("utf-8", "replace") and UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
     "not UTF-8 text (invalid start byte at byte 0)"),
    (json.JSONDecodeError("Expecting value", "x", 0), "Expecting value: line 1 column 1"),
    (MemoryError("Unable to allocate 8.00 TiB"), "not enough memory: Unable to allocate 8.00 TiB"),
    (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
    (SyntaxError("'(' was never closed"), "malformed input (SyntaxError"),
    (TypeError("epsilon must be a number"), "epsilon must be a number"),
    (ValueError("two\nlines\x1b[31m"), "two lines\\x1b[31m"),
    (ImportError("--plot needs matplotlib"), "--plot needs matplotlib"),
]


@pytest.mark.parametrize("exc, message", BAD, ids=[type(e).__name__ for e, _ in BAD])
def test_every_bad_input_exception_is_one_line_and_status_2(monkeypatch, exc, message):
    import ldp.cli.jobs
    import ldp.cli.privacy
    import ldp.spec.collection

    monkeypatch.setattr(ldp.cli.privacy, "privacy_summary", _raiser(exc))
    monkeypatch.setattr(ldp.cli.jobs, "_merge", _raiser(exc))
    monkeypatch.setattr(ldp.spec.collection.CollectionSpec, "load", _raiser(exc))
    for argv in (["privacy", "rr"], ["merge", "x", "--out", "y"], ["spec", "validate", "x"]):
        status, out, err = call_main(argv)
        assert (status, out) == (2, "") and err == f"{prog_of(argv)}: error: " + err.split(": error: ", 1)[1]
        assert err.count("\n") == 1 and message in err, err


def test_a_bug_is_one_line_with_status_1_and_a_traceback_on_request(monkeypatch):
    import ldp.cli.privacy

    monkeypatch.setattr(ldp.cli.privacy, "privacy_summary", _raiser(KeyError("p_star")))
    status, _, err = call_main(["privacy", "rr"])
    assert status == 1 and err == ("ldp privacy: internal error: KeyError: 'p_star' "
                                   "(run with LDP_DEBUG=1 for the traceback)\n")
    monkeypatch.setenv("LDP_DEBUG", "1")
    status, _, err = call_main(["privacy", "rr"])
    assert status == 1 and err.startswith("Traceback") and "KeyError" in err
    assert err.splitlines()[-1].startswith("ldp privacy: internal error: KeyError")


def test_debug_shows_the_traceback_of_bad_input_too(monkeypatch):
    monkeypatch.setenv("LDP_DEBUG", "1")
    status, _, err = call_main(["privacy", "grr", "--param", "epsilon=1"])
    assert status == 2 and err.startswith("Traceback")
    assert err.splitlines()[-1].startswith("ldp privacy: error: grr parameters: ")


def test_missing_protocol_parameters_say_how_to_give_them():
    assert_bad_input(["privacy", "rappor"], "rappor parameters: ", "give --epsilon (the planner chooses the rest), "
                                                                    "or the fields as --param KEY=VALUE)")
    assert_bad_input(["privacy", "oue", "--epsilon", "1"], "give --d (the planner chooses the rest)")
    assert_bad_input(["privacy", "duchi"], "(give --epsilon, --param low=VALUE, --param high=VALUE)")


_NOT_A_REFUSAL = ("NoneType", "unsupported operand", "must be an int, got", "object has no attribute")
"""Python's own words for a value that was never given: a refusal must name the option instead."""


def _registered() -> list[str]:
    from ldp.protocols import protocols

    return list(protocols())


@pytest.mark.parametrize("protocol", _registered())
def test_a_missing_domain_or_field_is_refused_by_naming_the_option(protocol):
    """Every protocol, `ldp simulate P --epsilon 1` without --d and `ldp privacy P` without options: done, or a
    refusal that names the option to give (the d of the simulated domain, the fields), never a Python type error."""
    for argv in (["simulate", protocol, "--epsilon", "1", "--n", "200", "--trials", "1"], ["privacy", protocol]):
        status, _, err = call_main(argv)
        assert_contract(argv, status, err)
        if status == 2:
            last = err.rstrip("\n").split("\n")[-1]
            assert not any(word in last for word in _NOT_A_REFUSAL), last
            assert "--d" in last or "--param" in last or "--epsilon" in last, last


# the corners a new user hit in issue 28


def test_plan_takes_epsilon_and_d_beside_a_param():
    status, out, err = call_main(["plan", "lgrr", "--epsilon", "1", "--d", "8", "--param", "epsilon_perm=2",
                                  "--n", "1e4", "--json"])
    assert status == 0, err
    assert json.loads(out)[0]["params"] == {"epsilon_perm": 2.0, "epsilon": 1.0, "domain_size": 8, "labels": None}
    status, out, err = call_main(["privacy", "lgrr", "--epsilon", "1", "--d", "8", "--param", "epsilon_perm=2",
                                  "--json"])
    assert status == 0 and json.loads(out)["epsilon"] == 1.0, err
    # a --param that moves what --epsilon set is refused, not silently planned at another ε
    assert_bad_input(["plan", "rappor", "--epsilon", "1", "--d", "8", "--param", "num_hashes=4", "--n", "1e4"],
                     "cost ε=2 per report, not 1")


@pytest.mark.parametrize("protocol, extra", [("rappor-ngrams", ["--epsilon", "8", "--d", "4"]),
                                             ("grr", ["--epsilon", "1", "--d", "4"]),
                                             ("pem", ["--epsilon", "4", "--d", "4"])])
def test_simulate_one_trial_has_a_finite_rmse(protocol, extra):
    argv = ["simulate", "--protocol", protocol, *extra, "--n", "3000", "--trials", "1", "--seed", "1"]
    status, out, err = call_main(argv)
    assert status == 0, err
    assert_sound_output(argv, out)
    status, out, err = call_main([*argv, "--json"])
    summary = json.loads(out)["summary"]
    assert status == 0 and np.isfinite(summary["rmse_count"]) and summary["rmse_count"] > 0


def test_plan_help_says_d_is_for_every_protocol():
    status, out, _ = call_main(["plan", "--help"])
    assert status == 0 and "domain size (grr)" not in out and "domain_size field" in " ".join(out.split())


def test_no_documented_aggregate_command_nests_aggregates_in_aggregates():
    """``ldp fold --out DIR`` writes ``DIR/aggregates/*.agg``: no page may name ``DIR`` ``aggregates``."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    commands = [line for page in pages for line in page.read_text(encoding="utf-8").splitlines()
                if "ldp fold " in line and "--out" in line]
    assert len(commands) >= 3
    for line in commands:
        target = line.split("--out", 1)[1].split()[0].strip("`").rstrip("/")
        assert not target.endswith("aggregates"), line


def test_a_huge_chunk_size_is_refused_by_the_option(files, tmp_path):
    assert_bad_input(["fold", str(files["up.jsonl"]), "--spec", str(files["spec.json"]), "--out",
                      str(tmp_path / "o"), "--chunk-mb", "4200710195165199"], "argument --chunk-mb: ", "<= 1024")


def test_a_spec_with_a_huge_integer_budget_is_bad_input(tmp_path):
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["budget"]["lifetime"] = 10**400  # ldp/spec/schema.py: math.isfinite(int) overflows
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    assert_bad_input(["spec", "validate", str(tmp_path / "spec.json")])


@pytest.mark.parametrize("argv", [
    ["demo", "--n", "3"], ["demo", "--epsilon", "nan"], ["demo", "--epsilon", "1e400"], ["demo", "--seed", "-1"],
    ["demo", "--n", "x"], ["demo", "--epsilon", "-1", "--n", "10"], ["demo", "--epsilon", "800", "--n", "10"],
    ["compare", "--trials", "1"], ["compare", "--seed", "-3"], ["compare", "--plots"], ["compare", "--trials", "nan"],
])
def test_demo_and_compare_refuse_bad_options_quickly(argv):
    status, _, err = call_main(argv)
    assert status == 2
    assert_contract(argv, status, err)


# --------------------------------------------------------------------------------------------
# the fuzz test
# --------------------------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.sampled_from(["0", "-1", "1", "2", "3", "0.5", "0.05", "0.95", "1e400", "-1e400", "nan", "NaN", "inf", "-inf",
                     "", " ", "abc", "1e6", "1e-320", str(2**63), str(-(2**63) - 1), str(10**30), "0x10", "1_0",
                     "ε", "1,5", "5" * 5000]),
    st.integers(-3, 40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
JSON_VALUES = st.one_of(NUMBERS, st.sampled_from(["null", "true", "[]", "[1, 2]", "{}", '"x"', "[" * 3000,
                                                  "1e400", "-1e400", "NaN", "Infinity", "99999999999999999999"]))
PARAM_KEYS = ["epsilon", "domain_size", "p", "q", "f", "num_bloombits", "num_hashes", "num_cohorts", "width",
              "hash_seed", "word_epsilon", "fragment_epsilon", "word_num_hashes", "word_width",
              "fragment_num_hashes", "fragment_width", "mode", "labels", "max_length", "start_bits", "step_bits",
              "top_k", "epsilon_perm", "nope"]
PROTOCOLS = st.sampled_from(["rr", "grr", "rappor", "cms", "hcms", "sfp", "pem", "lgrr", "rappor-ngrams", "nope", ""])
COUNTER = itertools.count()


def options(spec: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[list[str]]:
    """Any subset of the options, each with a value drawn from its strategy (``None`` = a flag)."""
    def build(chosen: list[tuple[str, Any]]) -> list[str]:
        out: list[str] = []
        for name, value in chosen:
            out += [name] if value is None else [name, value] if isinstance(value, str) else [name, *value]
        return out

    pairs = [st.tuples(st.just(k), v) for k, v in spec.items()]
    return st.lists(st.one_of(*pairs), max_size=len(spec), unique_by=lambda t: t[0]).map(build)


FLAG = st.none()
PARAM_OPTS = {"--epsilon": NUMBERS, "--d": st.one_of(st.integers(-1, 12).map(str), NUMBERS.filter(
    lambda s: s not in ("5" * 5000,))), "--p": NUMBERS, "--q": NUMBERS, "--truth-prob": NUMBERS,
    "--yes-prob": NUMBERS}


def param_values() -> st.SearchStrategy[list[str]]:
    return st.lists(st.tuples(st.sampled_from(PARAM_KEYS), JSON_VALUES).map(lambda kv: f"--param={kv[0]}={kv[1]}"),
                    max_size=4)


def _small_count(limit: int) -> st.SearchStrategy[str]:
    """Valid small counts mostly (cheap runs), and the invalid values; never a valid huge count that
    would make a run long (the contract is about bad input, not about time)."""
    return st.one_of(st.integers(1, limit).map(str), NUMBERS.filter(lambda s: not _valid_int_over(s, limit)))


def _valid_int_over(text: str, limit: int) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return value == value and limit < value < 1e20


def argv_for(command: str, files: dict[str, Path], tmp: Path) -> st.SearchStrategy[list[str]]:
    """Generated argument vectors for one command."""
    pool = sorted(files)
    path = st.one_of(st.sampled_from(pool).map(lambda k: str(files[k])), st.binary(max_size=120).map(
        lambda b: _write(tmp, b)))
    if command == "privacy":
        return st.tuples(PROTOCOLS, options({**PARAM_OPTS, "--seed": NUMBERS, "--json": FLAG}), param_values()).map(
            lambda t: ["privacy", t[0], *t[1], *t[2]])
    if command == "simulate":
        opts = {**PARAM_OPTS, "--d": st.one_of(st.integers(-1, 12).map(str), st.sampled_from(["0", str(2**63),
                                                                                              str(10**30), "x"])),
                "--population": st.sampled_from(["uniform", "zipf", "exponential", "gaussian", "pareto", ""]),
                "--s": NUMBERS, "--n": _small_count(2000), "--trials": _small_count(5),
                "--method": st.sampled_from(["aggregate", "per_report", "x"]), "--confidence": NUMBERS,
                "--seed": NUMBERS, "--json": FLAG}
        return st.tuples(st.sampled_from(["rr", "grr", "cms", "pem", "lgrr", "nope"]), options(opts),
                         param_values()).map(
            lambda t: ["simulate", "--protocol", t[0], *t[1], *t[2]])
    if command == "plan":
        opts = {**PARAM_OPTS, "--n": NUMBERS, "--frequency": NUMBERS, "--alpha": NUMBERS, "--candidates": NUMBERS,
                "--power": NUMBERS, "--reports": NUMBERS, "--distinct-values": NUMBERS, "--target-se": NUMBERS,
                "--recommend": FLAG, "--json": FLAG}
        return st.tuples(st.one_of(PROTOCOLS.map(lambda p: [p]), st.just([])), options(opts), param_values()).map(
            lambda t: ["plan", *t[0], *t[1], *t[2]])
    if command == "rappor-decode":
        opts = {"--params": path, "--counts": path, "--aggregate": path, "--map": path, "--candidates": path,
                "--alpha": NUMBERS, "--confidence": NUMBERS,
                "--correction": st.sampled_from(["bh", "holm", "bonferroni"]),
                "--selection": st.sampled_from(["auto", "lasso", "none"]),
                "--all": FLAG, "--json": FLAG, "--csv": FLAG, "--google-csv": FLAG, "--detected-only": FLAG}
        good = st.just(["--params", str(files["params.csv"]), "--counts", str(files["counts.csv"])])
        return st.tuples(st.one_of(good, st.just([])), options(opts)).map(
            lambda t: ["rappor-decode", *t[0], *t[1]])
    if command == "sfp-discover":
        reports = st.lists(path, min_size=1, max_size=3)
        opts = {"--aggregate": path, "--reports": reports, "--top": _small_count(50), "--alpha": NUMBERS,
                "--max-candidates": NUMBERS, "--confidence": NUMBERS, "--all": FLAG, "--csv": FLAG}
        return st.tuples(options(opts), param_values()).map(lambda t: ["sfp-discover", *t[0], *t[1]])
    if command == "pem-discover":
        reports = st.lists(path, min_size=1, max_size=3)
        good = st.just([f"--param={k}={json.dumps(v)}" for k, v in
                        {"epsilon": 4.0, "max_length": 3, "top_k": 4}.items()])
        save = st.builds(lambda: str(tmp / f"pem{next(COUNTER)}.agg"))
        opts = {"--aggregate": path, "--reports": reports, "--save": save,
                "--top-k": _small_count(50), "--alpha": NUMBERS, "--false-prefixes": NUMBERS,
                "--alphabet": st.sampled_from(["abcdefghijklmnopqrstuvwxyz", "cat", "é€", "", "\x00"]),
                "--confidence": NUMBERS, "--all": FLAG, "--json": FLAG, "--csv": FLAG}
        return st.tuples(options(opts), st.one_of(good, param_values())).map(
            lambda t: ["pem-discover", *t[0], *t[1]])
    if command == "ngrams-discover":
        reports = st.lists(path, min_size=1, max_size=3)
        good = st.just([f"--param={k}={json.dumps(v)}" for k, v in
                        ngrams_default_params(8.0, max_length=4, alphabet="abcd").to_dict().items()])
        save = st.builds(lambda: str(tmp / f"ngrams{next(COUNTER)}.agg"))
        opts = {"--aggregate": path, "--reports": reports, "--save": save, "--alpha": NUMBERS,
                "--gram-alpha": NUMBERS, "--pair-alpha": NUMBERS, "--max-grams": _small_count(50),
                "--max-candidates": NUMBERS, "--max-maps": _small_count(50),
                "--se": st.sampled_from(["auto", "information", "bootstrap", "x"]), "--seed": NUMBERS,
                "--confidence": NUMBERS, "--all": FLAG, "--json": FLAG, "--csv": FLAG}
        return st.tuples(options(opts), st.one_of(good, param_values())).map(
            lambda t: ["ngrams-discover", *t[0], *t[1]])
    if command == "spec validate":
        return st.one_of(path, _spec_files(tmp)).map(lambda p: ["spec", "validate", p])
    if command in ("serve", "watch"):
        # a valid config only for ``watch --once``: ``ldp serve`` with one would run until stopped
        configs = st.one_of(path, _collector_configs(tmp, files["spec.json"], valid=command == "watch"))
        if command == "watch":
            opts = {"--every": NUMBERS, "--json": FLAG}
            return st.tuples(configs, options(opts)).map(lambda t: ["watch", "--config", t[0], "--once", *t[1]])
        token = st.tuples(options({"--app": st.text(max_size=12)})).map(lambda t: ["serve", "token", *t[0]])
        run_ = st.tuples(configs, options({"--host": st.sampled_from(["127.0.0.1", "::1", "", "nowhere."]),
                                          "--port": NUMBERS})).map(lambda t: ["serve", "--config", t[0], *t[1]])
        return st.one_of(token, run_)
    if command == "associate":
        assoc = _association_files(tmp)
        names = st.sampled_from(["usage", "screen", "dark", "app_category", "dark_mode", "homepage", "nope", ""])
        opts = {"--metric": names, "--attributes": st.tuples(names, names), "--pair": st.tuples(names, names),
                "--a-reports": path, "--b-reports": path,
                "--format": st.sampled_from(["jsonl", "csv", "parquet", "binary"]),
                "--se": st.sampled_from(["bootstrap", "information", "none"]), "--replicates": _small_count(30),
                "--confidence": NUMBERS, "--seed": NUMBERS, "--candidates-a": path, "--candidates-b": path,
                "--other": FLAG, "--json": FLAG, "--csv": FLAG}
        reports = st.lists(st.one_of(st.just(str(assoc["up"])), path), max_size=3)
        specs_ = st.one_of(st.sampled_from([str(assoc["spec"]), str(files["spec.json"])]), path)
        good = st.just(["--metric", "usage", "--attributes", "screen", "dark"])
        return st.tuples(reports, specs_, st.one_of(good, st.just([])), options(opts)).map(
            lambda t: ["associate", *t[0], "--spec", t[1], *t[2], *t[3]])
    out = st.builds(lambda: str(tmp / f"out{next(COUNTER)}"))
    specs = st.one_of(st.just(str(files["spec.json"])), _spec_files(tmp), path)
    if command == "fold":
        opts = {"--format": st.sampled_from(["jsonl", "csv", "parquet", "binary"]), "--by-window": FLAG,
                "--on-change": st.sampled_from(["error", "reprocess"]), "--chunk-mb": NUMBERS.filter(
                    lambda s: not _valid_float_under(s, 1e-4)), "--json": FLAG, "-q": FLAG}
        return st.tuples(st.lists(path, min_size=1, max_size=3), specs, out, options(opts)).map(
            lambda t: ["fold", *t[0], "--spec", t[1], "--out", t[2], *t[3]])
    if command == "merge":
        return st.tuples(st.lists(path, min_size=1, max_size=3), out, options({"--all-windows": FLAG})).map(
            lambda t: ["merge", *t[0], "--out", t[1], *t[2]])
    assert command == "decode"
    opts = {"--metric": st.sampled_from(["app_category", "homepage", "emoji", "dark_mode", "nope", ""]),
            "--candidates": path, "--confidence": NUMBERS, "--alpha": NUMBERS,
            "--selection": st.sampled_from(["lasso", "none"]), "--top": _small_count(50), "--max-rows": NUMBERS,
            "--csv": FLAG}
    return st.tuples(path, specs, options(opts)).map(lambda t: ["decode", t[0], "--spec", t[1], *t[2]])


def _association_files(tmp: Path) -> dict[str, Path]:
    """A spec with a split multi metric and 300 of its reports (written once per folder)."""
    from ldp.encoders.multi import MultiEncoder
    from ldp.jobs.formats import write_jsonl
    from ldp.spec import CollectionSpec, Envelope

    out = {"spec": tmp / "assoc_spec.json", "up": tmp / "assoc_up.jsonl"}
    if not out["up"].exists():
        doc = {"spec_version": 1, "name": "assoc", "budget": {"per_window": 4, "lifetime": 40},
               "metrics": {"usage": {"protocol": "multi", "budget": {"per_report": 4},
                                     "params": {"epsilon": 4, "mode": "split",
                                                "attributes": [["screen", "grr", {"domain_size": 3}],
                                                               ["dark", "rr", {}]]}}}}
        out["spec"].write_text(json.dumps(doc))
        spec = CollectionSpec.load(out["spec"])
        values = np.random.default_rng(3).integers(0, 6, 300)
        batch = MultiEncoder(spec.params("usage"), simulation=True).encode_batch(
            {"screen": values // 2, "dark": values % 2}, rng=4)
        write_jsonl(out["up"], [Envelope(spec.fingerprint, "usage", 0, r) for r in batch.reports()])
    return out


CONFIG_FAULTS = {"data_dir": ["3", '""'], "specs": ['["missing.json"]', "[]", '"x"'],
                 "token_sha256": ['"ab"', f'"{"zz" * 32}"', "1"], "every_seconds": ["-1", '"x"', "inf"],
                 "max_lines": ["0", "-5", "1e99", "true"]}
CONFIG_EXTRAS = ["", "unknown = 1", "[apps.x]", "data_dir = 1"]


def _collector_config(tmp: Path, spec: Path, fault: tuple[str, str], extra: str) -> str:
    """An ingest service config (TOML) file with ``fault`` (key, value; ``("", "")``: none) and an ``extra`` line."""
    v = {"data_dir": f'"{tmp / "collector-data"}"', "specs": f'["{spec}"]', "token_sha256": f'"{"ab" * 32}"',
         "every_seconds": "60", "max_lines": "100", **({fault[0]: fault[1]} if fault[0] else {})}
    text = (f"data_dir = {v['data_dir']}\n{extra}\n[limits]\nmax_lines = {v['max_lines']}\n"
            f"[fold]\nevery_seconds = {v['every_seconds']}\n"
            f"[apps.demo]\ntoken_sha256 = {v['token_sha256']}\nspecs = {v['specs']}\n")
    path = tmp / f"collector{next(COUNTER)}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _collector_configs(tmp: Path, spec: Path, *, valid: bool) -> st.SearchStrategy[str]:
    """Collector config files with one fault each, and (``valid``) a good one. ``ldp serve`` is fuzzed
    with the faulty ones only (a good one would serve until stopped):
    :func:`test_every_config_fault_is_refused` keeps them all faulty."""
    choices = [st.sampled_from([(k, v) for k, vs in CONFIG_FAULTS.items() for v in vs])]
    if valid:
        choices.append(st.just(("", "")))
    return st.builds(lambda fault, extra: _collector_config(tmp, spec, fault, extra), st.one_of(*choices),
                     st.sampled_from(CONFIG_EXTRAS))


def test_every_config_fault_is_refused(files, tmp_path):
    from ldp.ingest.config import ConfigError, load_config

    load_config(_collector_config(tmp_path, files["spec.json"], ("", ""), ""))  # the base is valid
    for key, values in CONFIG_FAULTS.items():
        for value, extra in itertools.product(values, CONFIG_EXTRAS):
            with pytest.raises(ConfigError):
                load_config(_collector_config(tmp_path, files["spec.json"], (key, value), extra))


def _valid_float_under(text: str, limit: float) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return 0 < value < limit  # tiny chunks are valid but slow


def _write(tmp: Path, data: bytes, suffix: str = ".bin") -> str:
    path = tmp / f"gen{next(COUNTER)}{suffix}"
    path.write_bytes(data)
    return str(path)


def _spec_files(tmp: Path) -> st.SearchStrategy[str]:
    """The example spec with one value anywhere replaced by an odd one."""
    doc = _spec_doc()
    paths: list[tuple[str, ...]] = []

    def walk(node: Any, at: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((*at, k))
                walk(v, (*at, k))

    walk(doc, ())
    odd = st.sampled_from([0, -1, 0.5, 1e308, 10**400, 2**63, 2**64, -(2**63), 1e-320, float("nan"), float("inf"),
                           "x", "", None, True, [], {}, [1], {"epsilon": 800.0}, 800.0, 2000.0, 10**20])

    def build(where: tuple[str, ...], value: Any) -> str:
        d = copy.deepcopy(doc)
        node = d
        for k in where[:-1]:
            node = node[k]
        node[where[-1]] = value
        spec_dir = tmp / f"spec{next(COUNTER)}"
        spec_dir.mkdir()
        shutil.copy(ROOT / "examples" / "homepage_candidates.txt", spec_dir)
        (spec_dir / "spec.json").write_text(json.dumps(d))
        return str(spec_dir / "spec.json")

    return st.builds(build, st.sampled_from(paths), odd)


COMMANDS = ["privacy", "simulate", "plan", "rappor-decode", "sfp-discover", "pem-discover", "spec validate",
            "fold", "merge", "decode", "serve", "watch", "associate", "ngrams-discover"]
FUZZ_EXAMPLES = int(os.environ.get("LDP_FUZZ_EXAMPLES", "40"))


@pytest.mark.parametrize("command", COMMANDS)
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzz_every_command_keeps_the_contract(files, tmp_path_factory, command, data):
    tmp = tmp_path_factory.getbasetemp() / "fuzz"
    tmp.mkdir(exist_ok=True)
    argv = data.draw(argv_for(command, files, tmp), label="argv")
    status, out, err = call_main(argv)
    assert_contract(argv, status, err)
    if status == 0:
        assert_sound_output(argv, out)


def assert_sound_output(argv: list[str], out: str) -> None:
    """What a successful run prints holds no undefined summary: a simulation's RMSE is a number, one
    trial or many (only a per-item SD of one trial is undefined)."""
    if argv[0] == "simulate" and "RMSE (counts)" in out:
        assert "RMSE (counts) nan" not in out, (argv, out[-2000:])
    if argv[0] == "simulate" and "--json" in argv:
        summary = json.loads(out)["summary"]
        for key in ("rmse_count", "rmse_fraction", "theoretical_rmse_count"):
            if key in summary:
                assert np.isfinite(summary[key]), (argv, key, summary)


def test_fuzz_compare_options_with_the_run_stubbed(monkeypatch):
    """``ldp compare`` takes seconds to run; its options are checked with the run replaced by a stub
    that applies the real run's own argument checks."""
    import ldp.compare.report as report

    def stub(*, quick: bool, seed: Any, out_dir: Any, plots: bool, trials: Any) -> dict[str, Any]:
        report.settings(quick, trials)
        np.random.SeedSequence(seed)
        if plots and out_dir is None:
            raise ValueError("plots need an output folder (out_dir)")
        return {"text": "ok", "summary": {}, "settings": {}, "tables": {}, "files": [], "seconds": 0.0}

    monkeypatch.setattr(report, "run_compare", stub)
    opts = options({"--quick": FLAG, "--seed": NUMBERS, "--trials": NUMBERS, "--plots": FLAG, "--no-plots": FLAG,
                    "--json": FLAG})

    @settings(max_examples=60, deadline=None, derandomize=True, database=None)
    @given(opts)
    def check(argv: list[str]) -> None:
        status, out, err = call_main(["compare", *argv])
        assert_contract(["compare", *argv], status, err)
        assert "error:" not in err or err.rstrip("\n").split("\n")[-1].startswith("ldp compare: error:")

    check()
