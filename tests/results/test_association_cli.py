"""Association pairs from deployed data (ldp.jobs.association) and ``ldp associate`` (ldp.cli.associate):
split multi reports made by the TelemetryClient, row-aligned files, rejects, refusals, the CLI contract."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ldp.batch.association import simulate_pairs
from ldp.cli.associate import add_associate_arguments, associate_command
from ldp.client.runtime import TelemetryClient
from ldp.jobs.association import aligned_pairs, multi_pairs
from ldp.jobs.formats import sections_from_envelopes, write_binary, write_csv, write_jsonl
from ldp.spec import CollectionSpec, Envelope

TRUTH = np.array([[0.30, 0.10], [0.05, 0.25], [0.10, 0.20]])  # rows: screen 0..2; columns: dark off, on
N = 3000
CANDS = ["chrome", "firefox", "safari"]


def _multi_doc(mode: str = "split", second: tuple[str, dict[str, Any]] = ("rr", {})) -> dict[str, Any]:
    return {"spec_version": 1, "name": "app", "budget": {"per_window": 1e6, "lifetime": 1e7},
            "upload": {"max_batch": 100_000},
            "metrics": {"usage": {"protocol": "multi",
                                  "params": {"epsilon": 4, "mode": mode,
                                             "attributes": [["screen", "grr", {"domain_size": 3}],
                                                            ["dark", *second], ["lang", "grr", {"domain_size": 2}]]},
                                  "budget": {"per_report": 4}},
                        "other": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 4},
                                  "budget": {"per_report": 1}}}}


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A split multi spec, the uploads of TelemetryClients (one report per client: screen, dark, lang) plus
    reports of another metric and lines the server rejects, and the clients' true cells."""
    d = tmp_path_factory.mktemp("assoc")
    (d / "spec.json").write_text(json.dumps(_multi_doc()))
    spec = CollectionSpec.load(d / "spec.json")
    cells = np.random.default_rng(5).choice(TRUTH.size, size=N, p=TRUTH.ravel())
    lines: list[str] = []
    with TelemetryClient(spec, d / "state.db", rng=11, simulation=True) as client:
        client.record_many([("usage", {"screen": int(c // 2), "dark": bool(c % 2), "lang": int(c % 2)})
                            for c in cells] + [("other", 1)] * 7)
        lines += [item.line for item in client.pending()]
    bad = json.loads(lines[0])
    bad["report"]["payload"]["screen_index"] = 3  # out of range
    lines += ["not json", json.dumps(bad), '{"v": 1}']
    (d / "up.jsonl").write_text("\n".join(lines) + "\n")
    return {"dir": d, "spec": d / "spec.json", "up": d / "up.jsonl", "cells": cells}


def _empirical(cells: np.ndarray) -> np.ndarray:
    return np.bincount(cells, minlength=TRUTH.size).reshape(TRUTH.shape) / cells.size


# -- split multi metrics --------------------------------------------------------------------------------
def test_split_multi_pairs_from_telemetry_clients_cover_the_truth(deployed: dict[str, Any]) -> None:
    pairs = multi_pairs(deployed["spec"], "usage", ["screen", "dark"], [deployed["up"]])
    assert pairs.n == N and pairs.other_metrics == 7 and pairs.unpaired == 0
    assert pairs.rejected == {"not_json": 1, "missing_key": 1, "out_of_range": 1}
    assert pairs.records == N + 7 + 3
    params = CollectionSpec.load(deployed["spec"]).params("usage")
    assert pairs.privacy_cost == params.privacy_cost  # the report's cost: all 3 attributes, sequential composition
    assert "sum of its 3 attributes'" in pairs.cost_note
    want = _empirical(deployed["cells"])
    for se in ("bootstrap", "information"):
        res = pairs.associate(se=se, replicates=100, rng=3, level=0.99)
        assert res.converged and res.n == N and res.labels_b == ["0", "1"]
        assert ((res.lower <= want) & (want <= res.upper)).all(), (se, res.table, want)
        assert res.privacy_cost == params.privacy_cost


def test_rejects_are_counted_as_ldp_aggregate_counts_them(deployed: dict[str, Any], tmp_path: Path) -> None:
    from ldp.jobs.job import fold_files

    summary = fold_files([deployed["up"]], [deployed["spec"]], tmp_path / "out", progress=False).to_dict()
    pairs = multi_pairs(deployed["spec"], "usage", ["screen", "lang"], [deployed["up"]])
    assert pairs.rejected == summary["rejected"] and pairs.records == summary["records"]
    assert pairs.n + pairs.other_metrics == summary["accepted"]


@pytest.mark.parametrize(("doc", "attrs", "needle"), [
    (_multi_doc("sample"), ("screen", "dark"), "sample-mode multi: each report carries ONE attribute"),
    (_multi_doc(second=("piecewise", {"low": 0, "high": 10})), ("screen", "dark"), "uses piecewise"),
    (_multi_doc(), ("screen", "screen"), "two different attributes"),
    (_multi_doc(), ("screen", "nope"), "no attribute 'nope'"),
])
def test_unpairable_multi_metrics_are_refused_with_the_reason(tmp_path: Path, doc: dict[str, Any],
                                                              attrs: tuple[str, str], needle: str) -> None:
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    (tmp_path / "up.jsonl").write_text("")
    with pytest.raises(ValueError, match=needle):
        multi_pairs(tmp_path / "spec.json", "usage", attrs, [tmp_path / "up.jsonl"])


def test_a_metric_that_is_not_multi_points_to_pair(deployed: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a multi metric.*--pair"):
        multi_pairs(deployed["spec"], "other", ["a", "b"], [deployed["up"]])
    with pytest.raises(ValueError, match="no metric 'nope'"):
        multi_pairs(deployed["spec"], "nope", ["a", "b"], [deployed["up"]])


# -- row-aligned files ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def aligned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("aligned")
    (d / "cands.txt").write_text("\n".join(CANDS) + "\n")
    doc = {"spec_version": 1, "name": "app", "budget": {"per_window": 100, "lifetime": 1000},
           "metrics": {"browser": {"protocol": "rappor", "candidates": "cands.txt", "budget": {"per_report": 10},
                                   "params": {"num_bloombits": 16, "num_hashes": 2, "num_cohorts": 4, "p": 0.25,
                                              "q": 0.75, "f": 0.25}},
                       "https": {"protocol": "grr", "budget": {"per_report": 10},
                                 "params": {"epsilon": 2, "domain_size": 2, "labels": ["http", "https"]}},
                       "usage": _multi_doc()["metrics"]["usage"]}}
    (d / "spec.json").write_text(json.dumps(doc))
    spec = CollectionSpec.load(d / "spec.json")
    ra, rb, u, v = simulate_pairs(spec.params("browser"), spec.params("https"), TRUTH, 2000, rng=7, candidates_a=CANDS)
    ea = [Envelope(spec.fingerprint, "browser", 0, r) for r in ra.reports()]
    eb = [Envelope(spec.fingerprint, "https", 0, r) for r in rb.reports()]
    write_jsonl(d / "a.jsonl", ea)
    write_csv(d / "b.csv", eb)
    write_binary(d / "b.ldpe", sections_from_envelopes(eb))
    lines = (d / "a.jsonl").read_text().splitlines()
    lines[3] = "garbage"  # client 3 drops out
    env = json.loads(lines[10])  # keys reordered: the full parser's path, not the vectorized one
    lines[10] = json.dumps({k: env[k] for k in ("report", "window", "metric", "spec")})
    (d / "a_bad.jsonl").write_text("\n".join(lines) + "\n")
    return {"dir": d, "spec": d / "spec.json", "ra": ra, "rb": rb, "cells": u * 2 + v, "eb": eb}


@pytest.mark.parametrize("b_file", ["b.csv", "b.ldpe"])
def test_row_aligned_files_pair_row_i_with_row_i(aligned: dict[str, Any], b_file: str) -> None:
    d = aligned["dir"]
    pairs = aligned_pairs(aligned["spec"], "browser", "https", d / "a_bad.jsonl", d / b_file)
    keep = np.ones(2000, bool)
    keep[3] = False
    assert pairs.n == 1999 and pairs.unpaired == 1 and pairs.rejected == {"not_json": 1}
    assert np.array_equal(pairs.columns_a["bits"], aligned["ra"].columns["bits"][keep])
    assert np.array_equal(pairs.columns_a["cohort"], aligned["ra"].columns["cohort"][keep])
    assert np.array_equal(pairs.columns_b["index"], aligned["rb"].columns["index"][keep])
    res = pairs.associate(se="information", level=0.99)
    want = _empirical(aligned["cells"][keep])
    assert ((res.lower <= want) & (want <= res.upper)).all()
    assert res.labels_a == CANDS and res.labels_b == ["http", "https"]
    spec = CollectionSpec.load(aligned["spec"])
    assert res.privacy_cost.epsilon == pytest.approx(spec.params("browser").privacy_cost.epsilon
                                                     + spec.params("https").privacy_cost.epsilon)


def test_row_aligned_files_of_different_lengths_or_mixed_metrics_are_refused(aligned: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    d, eb = aligned["dir"], aligned["eb"]
    write_jsonl(tmp_path / "short.jsonl", eb[:-1])
    with pytest.raises(ValueError, match="same length .* 2000 records, .* 1999"):
        aligned_pairs(aligned["spec"], "browser", "https", d / "a.jsonl", tmp_path / "short.jsonl")
    write_jsonl(tmp_path / "mixed.jsonl", [*eb, *(Envelope(e.spec, "browser", 0, r) for e, r in
                                                  zip(eb[:1], aligned["ra"].reports(), strict=False))])
    with pytest.raises(ValueError, match="1 report.* of other metrics: a row-aligned file holds one metric"):
        aligned_pairs(aligned["spec"], "browser", "https", d / "a.jsonl", tmp_path / "mixed.jsonl")
    (tmp_path / "blank.jsonl").write_text((d / "a.jsonl").read_text().replace("\n", "\n\n", 1))
    with pytest.raises(ValueError, match="blank line"):
        aligned_pairs(aligned["spec"], "browser", "https", tmp_path / "blank.jsonl", d / "b.csv")
    with pytest.raises(ValueError, match="is a multi: pair two of its attributes"):
        aligned_pairs(aligned["spec"], "usage", "https", d / "a.jsonl", d / "b.csv")
    with pytest.raises(ValueError, match="candidates are for RAPPOR"):
        aligned_pairs(aligned["spec"], "browser", "https", d / "a.jsonl", d / "b.csv", candidates_b=["x"])


# -- the command ----------------------------------------------------------------------------------------
def run(argv: list[str]) -> tuple[int, str, str]:
    """``ldp ARGV`` of the associate command, in this process: (status, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="ldp")
    add_associate_arguments(parser.add_subparsers(dest="command"))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = associate_command(parser.parse_args(argv))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
    return status, out.getvalue(), err.getvalue()


def test_the_command_prints_table_marginals_counts_cost_and_convergence(deployed: dict[str, Any]) -> None:
    argv = ["associate", "--spec", str(deployed["spec"]), "--metric", "usage", "--attributes", "screen", "dark",
            str(deployed["up"]), "--seed", "1", "--replicates", "20"]
    status, out, err = run(argv)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"usage.screen × usage.dark: {N} pairs ({N + 10} records read; 3 rejected: "
                               "missing_key 1, not_json 1, out_of_range 1; 7 reports of other metrics skipped)")
    assert "proportion ± bootstrap SE" in lines[1] and "±" in lines[3]
    assert lines[6].startswith("marginal of usage.screen: 0 0.") and lines[7].startswith("marginal of usage.dark:")
    assert lines[8].startswith("privacy cost per client: ε = 4;") and "sequential composition" in lines[8]
    assert lines[9].startswith("EM: converged after")
    status, out, _ = run([*argv, "--json", "--se", "information"])
    got = json.loads(out)
    assert got["n"] == N and got["rejected"] == {"missing_key": 1, "not_json": 1, "out_of_range": 1}
    assert got["privacy_cost"] == {"epsilon": 4.0, "delta": 0.0} and got["converged"]
    assert np.allclose(np.sum(got["table"]), 1.0) and len(got["se"]) == 3
    status, out, _ = run([*argv, "--csv", "--se", "none"])
    rows = out.splitlines()
    assert rows[0] == "a,b,estimate,se,lower,upper,count" and len(rows) == 7 and rows[1].startswith("0,0,0.")


def test_the_command_with_row_aligned_files(aligned: dict[str, Any]) -> None:
    d = aligned["dir"]
    status, out, err = run(["associate", "--spec", str(aligned["spec"]), "--pair", "browser", "https",
                            "--a-reports", str(d / "a_bad.jsonl"), "--b-reports", str(d / "b.ldpe"),
                            "--se", "information", "--other"])
    assert status == 0, err
    assert out.startswith("browser × https: 1999 pairs (4000 records read; 1 rejected: not_json 1; 1 valid reports "
                          "unpaired")
    assert "(other)" in out and "each client sent two reports" in out


@pytest.mark.parametrize(("extra", "needle"), [
    ([], "give either --metric"),
    (["--metric", "usage", "--pair", "a", "b"], "give either --metric"),
    (["--metric", "usage"], "--metric needs --attributes"),
    (["--metric", "usage", "--attributes", "screen", "dark"], "--metric needs report files"),
    (["--metric", "usage", "--attributes", "screen", "dark", "UP", "--other"], "--other go with --pair"),
    (["--pair", "browser", "https"], "--pair needs --a-reports"),
    (["--pair", "browser", "https", "UP"], "no positional report files"),
    (["--metric", "usage", "--attributes", "screen", "dark", "UP", "--replicates", "1"], "must be an integer >= 2"),
    (["--metric", "usage", "--attributes", "screen", "dark", "/nonexistent.jsonl"], "no such input file"),
])
def test_bad_options_end_with_one_error_line_and_status_2(deployed: dict[str, Any], extra: list[str],
                                                          needle: str) -> None:
    argv = ["associate", "--spec", str(deployed["spec"]), *[str(deployed["up"]) if x == "UP" else x for x in extra]]
    status, out, err = run(argv)
    assert status == 2 and not out
    last = err.rstrip("\n").split("\n")[-1]
    assert last.startswith("ldp associate: error: ") and needle in last, err
    assert "Traceback" not in err


NUMBERS = st.one_of(st.sampled_from(["0", "1", "2", "-1", "0.5", "nan", "inf", "1e400", "x", ""]),
                    st.integers(-3, 60).map(str))


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_the_options_keep_the_contract(deployed: dict[str, Any], aligned: dict[str, Any], data: Any) -> None:
    d = aligned["dir"]
    files = [str(deployed["up"]), str(d / "a_bad.jsonl"), str(d / "b.csv"), str(d / "b.ldpe"), str(d / "cands.txt"),
             str(d / "missing.jsonl"), str(d)]
    path = st.sampled_from(files)
    names = st.sampled_from(["usage", "browser", "https", "other", "screen", "dark", "lang", "nope", ""])
    opts = {"--spec": st.sampled_from([str(deployed["spec"]), str(aligned["spec"]), str(d / "cands.txt")]),
            "--metric": names, "--attributes": st.tuples(names, names), "--pair": st.tuples(names, names),
            "--a-reports": path, "--b-reports": path, "--format": st.sampled_from(["jsonl", "csv", "binary", "x"]),
            "--se": st.sampled_from(["bootstrap", "information", "none", "x"]), "--replicates": NUMBERS,
            "--confidence": st.sampled_from(["0.9", "0", "1", "x", "0.5"]), "--seed": NUMBERS,
            "--candidates-a": path, "--candidates-b": path, "--other": st.none(), "--json": st.none(),
            "--csv": st.none()}
    chosen = data.draw(st.lists(st.sampled_from(sorted(opts)), max_size=8, unique=True), label="options")
    argv = ["associate", *data.draw(st.lists(path, max_size=2), label="reports")]
    for name in chosen:
        value = data.draw(opts[name], label=name)
        argv += [name] if value is None else [name, value] if isinstance(value, str) else [name, *value]
    if "--replicates" in chosen and argv[argv.index("--replicates") + 1].isdigit():
        argv[argv.index("--replicates") + 1] = str(min(int(argv[argv.index("--replicates") + 1]), 30))
    status, _, err = run(argv)
    assert status in (0, 2), (argv, err)
    assert "Traceback" not in err
    if status == 2:
        lines = err.rstrip("\n").split("\n")
        assert lines[-1].startswith("ldp associate: error: "), (argv, err)
        assert sum(line.startswith("ldp associate: error:") for line in lines) == 1, (argv, err)


def test_the_command_module_starts_without_numpy() -> None:
    """``ldp --help`` must not import numpy: the SE choices are spelled out, and checked here."""
    import subprocess
    import sys

    from ldp.cli.associate import SE_CHOICES
    from ldp.decoders.association import SE_METHODS

    assert SE_CHOICES == SE_METHODS
    code = ("import argparse, sys\nfrom ldp.cli.associate import add_associate_arguments\n"
            "add_associate_arguments(argparse.ArgumentParser().add_subparsers())\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy'}))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stderr
