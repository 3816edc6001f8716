"""Tests of ldp.jobs: formats, validation with rejects, the job's manifest (idempotent, resumable),
merge exactness, streaming with bounded memory, decoding and the CLI functions.

Envelopes come from the encoders (fixed seeds); "fuzzed" lines are valid lines mutated at random
(byte flips, truncation, spacing, wrong fingerprints, out-of-range values, extra keys...). The
oracle for every line is :func:`ldp.spec.parse_envelope` with the specs."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from support import ROOT

import ldp.jobs.job as job_module
from ldp.jobs import (
    Folder,
    InputChangedError,
    JobError,
    Section,
    add_job_arguments,
    decode_file,
    fold_files,
    job_command,
    merge_files,
    read_aggregate,
    sections_from_envelopes,
    spec_index,
    write_binary,
    write_csv,
    write_jsonl,
    write_parquet,
)
from ldp.jobs.fold import SERVER_REASONS
from ldp.jobs.lines import fold_lines
from ldp.jobs.readers import iter_line_chunks, read_jsonl
from ldp.protocols import get_protocol
from ldp.spec import ENVELOPE_REASONS, CollectionSpec, Envelope, EnvelopeError, parse_envelope

WINDOW = 20000
CANDIDATES = ["example.com", "example.org", "news.example.net", "search.example", "mail.example"]


def spec_doc(name: str = "server_test") -> dict:
    return {
        "spec_version": 1, "name": name, "budget": {"per_window": 100, "lifetime": 1000},
        "metrics": {
            "app_category": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 4},
                             "budget": {"per_report": 1}},
            "dark_mode": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
            "homepage": {"protocol": "rappor", "params": {"num_bloombits": 12, "num_hashes": 2, "num_cohorts": 8,
                                                          "p": 0.5, "q": 0.75, "f": 0.5},
                         "candidates": "candidates.txt", "budget": {"per_report": 1.1}},
            "emoji": {"protocol": "cms", "params": {"epsilon": 4, "num_hashes": 4, "width": 32},
                      "candidates": "candidates.txt", "budget": {"per_report": 4}},
            "word": {"protocol": "hcms", "params": {"epsilon": 4, "num_hashes": 4, "width": 32},
                     "candidates": "candidates.txt", "budget": {"per_report": 4}},
            "typed": {"protocol": "sfp", "params": {"word_epsilon": 4, "fragment_epsilon": 4, "word_num_hashes": 4,
                                                    "word_width": 16, "fragment_num_hashes": 4, "fragment_width": 16},
                      "budget": {"per_report": 8}},
        },
    }


@pytest.fixture(scope="module", name="spec")
def server_spec(tmp_path_factory) -> CollectionSpec:
    """The test spec (fixture ``spec``; other test modules import it as ``server_spec``)."""
    folder = tmp_path_factory.mktemp("spec")
    (folder / "candidates.txt").write_text("\n".join(CANDIDATES) + "\n")
    (folder / "spec.json").write_text(json.dumps(spec_doc()))
    return CollectionSpec.load(folder / "spec.json")


def make_sections(spec: CollectionSpec, n: int, seed: int, windows: int = 2) -> list[Section]:
    """Reports of every metric, ``n`` per metric and window, as columnar sections."""
    rng = np.random.default_rng(seed)
    out = []
    for w in range(windows):
        for name, m in spec.metrics.items():
            enc = get_protocol(m.protocol).encoder_type(m.params)
            if m.protocol in ("grr", "rr"):
                batch = enc.encode_batch(rng.integers(0, m.params.domain_size, n), rng)
            elif m.protocol == "sfp":
                batch = enc.encode_batch(rng.integers(0, 3, n), rng, candidates=["hello", "world", "ldp"])
            else:
                batch = enc.encode_batch(rng.integers(0, len(CANDIDATES), n), rng, candidates=CANDIDATES)
            out.append(Section(spec.fingerprint, name, WINDOW + w, batch))
    return out


def envelopes(sections: list[Section]) -> list[Envelope]:
    return [Envelope(s.spec, s.metric, s.window, r) for s in sections for r in s.reports.reports()]


def agg_bytes(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "aggregates").glob("*.agg"))}


# -- formats ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("by_window", [False, True])
def test_every_format_gives_the_same_aggregates(spec, tmp_path, by_window):
    secs = make_sections(spec, 300, seed=1)
    envs = envelopes(secs)
    write_jsonl(tmp_path / "a.jsonl", envs)
    write_csv(tmp_path / "a.csv", envs)
    write_binary(tmp_path / "a.ldpe", secs)
    write_parquet(tmp_path / "a.parquet", sections_from_envelopes(envs))
    results = {}
    for fmt in ("jsonl", "csv", "ldpe", "parquet"):
        s = fold_files([tmp_path / f"a.{fmt}"], spec, tmp_path / f"out-{fmt}", by_window=by_window)
        assert (s.records, s.accepted, s.rejected) == (len(envs), len(envs), {})
        results[fmt] = agg_bytes(tmp_path / f"out-{fmt}")
    assert len(results["jsonl"]) == len(spec.metrics) * (2 if by_window else 1)
    assert all(r == results["jsonl"] for r in results.values())
    reference = {}  # the aggregates built directly from the reports
    for s in secs:
        agg = reference.setdefault((s.metric, s.window if by_window else None),
                                   get_protocol(s.reports.protocol).aggregate_type(spec.params(s.metric)))
        agg.add(s.reports)
    for (metric, window), agg in reference.items():
        name = f"{metric}.{spec.metrics[metric].params_fingerprint}" + (f".w{window}" if by_window else "") + ".agg"
        assert results["jsonl"][name] == agg.to_bytes()


def test_client_lines_take_the_fast_path_and_other_spellings_the_full_parser(spec):
    lines = [e.to_json() for e in envelopes(make_sections(spec, 50, seed=2, windows=1))]
    chunk = ("\n".join(lines) + "\n").encode()
    from ldp.jobs.jsonl import match_lines, templates_for

    _, _, _, accepted = match_lines(chunk, templates_for({spec.fingerprint: spec}))
    assert accepted.all()
    spaced = [json.dumps(json.loads(x)) for x in lines]  # spaces after ':' and ','
    _, _, _, accepted = match_lines(("\n".join(spaced) + "\n").encode(), templates_for({spec.fingerprint: spec}))
    assert not accepted.any()
    fast, slow = Folder({spec.fingerprint: spec}), Folder({spec.fingerprint: spec}, fast=False)
    fold_lines(fast, ("\n".join(spaced) + "\r\n").encode(), 1)
    fold_lines(slow, chunk, 1)
    assert fast.stats() == slow.stats() and fast.accepted == len(lines)
    assert {k: a.to_bytes() for k, a in fast.aggregates.items()} == {
        k: a.to_bytes() for k, a in slow.aggregates.items()}


# -- validation and rejects -------------------------------------------------------------------------------


def _mutate(line: str, rng: np.random.Generator, other_fp: str) -> str:
    kind = rng.integers(0, 18)
    b = line
    if kind < 5:
        return line
    if kind == 5:
        i = int(rng.integers(0, len(b)))
        return b[:i] + str(rng.choice(list('0123456789{}[]",:01 abcx\\'))) + b[i + 1:]
    if kind == 6:
        return b[:int(rng.integers(0, len(b)))]
    if kind == 7:
        return b.replace(",", ", ", 1).replace(":", ": ", int(rng.integers(1, 4)))
    if kind == 8:
        for field in ('"index":', '"bit":', '"cohort":', '"hash":', '"row":', '"position":'):
            if field in b:
                return b.replace(field, field + str(rng.choice(["9", "99", "-1", "1.0", "07", "18446744073709551616"])),
                                 1)
        return b
    if kind == 9:
        return b.replace(b[9:25], f"{int(rng.integers(0, 2**62)):016x}", 1)
    if kind == 10:
        return b.replace('"metric":"', '"metric":"x', 1)
    if kind == 11:
        return b[:-1] + ',"user":"u1"}'
    if kind == 12:
        return b + "\r"
    if kind == 13:
        return str(rng.choice(["", "   ", "\t"]))
    if kind == 14:
        return b.replace('"window":', '"window":0', 1) if rng.random() < 0.5 else \
            b.replace(f'"window":{WINDOW}', f'"window":{2**53 + 1}', 1)
    if kind == 15:
        return b.replace('"bits":"0', '"bits":"', 1).replace('"bits":"1', '"bits":"2', 1)
    if kind == 16:
        return b.replace(b[b.index('"params":"') + 10:b.index('"params":"') + 26], other_fp, 1)
    return b.replace('"spec":', '"spec":"x","spec":', 1) if rng.random() < 0.5 else "\udcff\x00garbage{"


def fuzzed_lines(spec: CollectionSpec, seed: int, n: int = 40) -> list[str]:
    rng = np.random.default_rng(seed)
    lines = [e.to_json() for e in envelopes(make_sections(spec, n, seed=seed, windows=2))]
    rng.shuffle(lines)
    other = spec.metrics["dark_mode"].params_fingerprint
    return [_mutate(x, rng, other) for x in lines]


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_fuzzed_lines_are_each_aggregated_or_rejected(spec, tmp_path, seed):
    lines = fuzzed_lines(spec, seed)
    data = "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"
    (tmp_path / "in.jsonl").write_bytes(data)
    expected, reasons, blank, want = Counter(), Counter(), 0, {}
    for line in data.split(b"\n")[:-1]:  # the oracle: parse_envelope with the spec, line by line
        if not line.strip():
            blank += 1
            continue
        try:
            env = parse_envelope(line, spec)
        except EnvelopeError as err:
            reasons[err.reason] += 1
            continue
        expected[env.metric] += 1
        want.setdefault(env.metric, []).append(env.report)
    summaries = {}
    for fast in (True, False):
        summaries[fast] = fold_files([tmp_path / "in.jsonl"], spec, tmp_path / f"out{fast}", fast=fast)
    s = summaries[True]
    assert (s.records + s.blank, s.blank) == (len(lines), blank)
    assert s.records == s.accepted + sum(s.rejected.values())
    assert s.rejected == dict(sorted(reasons.items())) and s.accepted == sum(expected.values())
    assert set(s.rejected) <= ENVELOPE_REASONS | SERVER_REASONS and len(s.rejected) >= 5
    rejects = [json.loads(x) for x in (tmp_path / "outTrue" / "rejects.jsonl").read_text().splitlines()]
    assert Counter(r["reason"] for r in rejects) == reasons and all(r["source"].endswith("in.jsonl") for r in rejects)
    assert (tmp_path / "outTrue" / "rejects.jsonl").read_bytes() == (
        tmp_path / "outFalse" / "rejects.jsonl").read_bytes()
    assert agg_bytes(tmp_path / "outTrue") == agg_bytes(tmp_path / "outFalse")
    for metric, reports in want.items():  # the accepted reports are exactly those the oracle accepts
        agg = read_aggregate(next((tmp_path / "outTrue" / "aggregates").glob(f"{metric}.*.agg")))
        ref = get_protocol(agg.params.protocol).aggregate_type(agg.params)
        ref.add(reports)
        assert agg.n == ref.n
        assert all(np.array_equal(a, b) for a, b in zip(agg._state().values(), ref._state().values(), strict=True))


def test_rejects_name_the_reason_record_and_raw_line(spec, tmp_path):
    good = envelopes(make_sections(spec, 1, seed=3, windows=1))[0].to_json()
    lines = [good, "not json", good[:9] + "0123456789abcdef" + good[25:],
             good.replace('"metric":"app_category"', '"metric":"nope"'), good[:-1] + ',"ip":"1.2.3.4"}',
             good.replace('"index":', '"index":4') if '"index":' in good else good, "x" * 3000]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    s = fold_files([tmp_path / "r.jsonl"], spec, tmp_path / "out")
    rejects = [json.loads(x) for x in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert [(r["record"], r["reason"]) for r in rejects] == [
        (2, "not_json"), (3, "unknown_spec"), (4, "unknown_metric"), (5, "unknown_key"), (6, "out_of_range"),
        (7, "not_json")]
    assert rejects[-1]["raw_truncated"] and len(rejects[-1]["raw"]) == 1000 and rejects[0]["raw"] == "not json"
    assert s.accepted == 1 and s.aggregates[f"app_category.{spec.metrics['app_category'].params_fingerprint}"] == {
        "metric": "app_category", "protocol": "grr", "params": spec.metrics["app_category"].params_fingerprint,
        "window": None, "n": 1, "rejected": 1}  # out_of_range is counted in the metric's aggregate too


def test_csv_rows_and_parquet_rows_are_validated(spec, tmp_path):
    envs = envelopes(make_sections(spec, 20, seed=4, windows=1))
    buf = io.StringIO()
    write_csv(buf, envs)
    rr_fp = spec.metrics["dark_mode"].params_fingerprint  # the last row: a newline inside the report's JSON
    text = buf.getvalue() + 'a,b\n\n0123456789abcdef,dark_mode,x,{}\n' + \
        f'{spec.fingerprint},dark_mode,{WINDOW},"{{""v"":1,\n""protocol"":""rr"",""params"":""{rr_fp}"",' \
        '""payload"":{""bit"":1}}"\n'
    (tmp_path / "a.csv").write_text(text)
    s = fold_files([tmp_path / "a.csv"], spec, tmp_path / "out")
    assert (s.accepted, s.rejected, s.blank) == (len(envs) + 1, {"bad_row": 1, "bad_window": 1}, 1)
    (tmp_path / "bad.csv").write_text("spec,metric\n")
    with pytest.raises(ValueError, match="header"):
        fold_files([tmp_path / "bad.csv"], spec, tmp_path / "out2")

    import pyarrow as pa
    import pyarrow.parquet as pq

    write_parquet(tmp_path / "a.parquet", sections_from_envelopes(envs))
    t = pq.read_table(tmp_path / "a.parquet")
    n = t.num_rows
    d = {name: t.column(name).to_pylist() for name in t.column_names}
    d["window"][0] = None                                      # missing_key
    d["spec"][1] = "0123456789abcdef"                          # unknown_spec
    d["window"][2] = -1                                        # bad_window
    i = n - 1 - d["metric"][::-1].index("app_category")  # the last row of each metric
    d["payload.index"][i] = 7                                  # out_of_range
    j = n - 1 - d["metric"][::-1].index("homepage")
    d["payload.bits"][j] = b"\x01"                             # bad_length
    k = n - 1 - d["metric"][::-1].index("dark_mode")
    d["params"][k] = "0" * 16                                  # wrong_fingerprint
    d["payload.hash"][k] = 1                                   # (ignored: routed first)
    types = {"window": pa.int64(), **{c: t.schema.field(c).type for c in t.column_names if c.startswith("payload.")}}
    table = pa.table({c: pa.array(v, types.get(c, pa.string()) if c != "v" else pa.uint8()) for c, v in d.items()})
    pq.write_table(table, tmp_path / "b.parquet", write_page_checksum=True)
    s = fold_files([tmp_path / "b.parquet"], spec, tmp_path / "out3")
    assert s.rejected == {"bad_length": 1, "bad_window": 1, "missing_key": 1, "out_of_range": 1, "unknown_spec": 1,
                          "wrong_fingerprint": 1}
    assert s.records == n and s.accepted == n - 6


def test_damaged_binary_sections_are_counted_and_the_rest_read(spec, tmp_path):
    secs = make_sections(spec, 50, seed=5, windows=1)
    write_binary(tmp_path / "a.ldpe", secs)
    data = bytearray((tmp_path / "a.ldpe").read_bytes())
    total = sum(len(s.reports) for s in secs)
    second = data.find(b"LDPE", 1)
    data[second + 6] ^= 0xFF  # damage the second section's header (spec fingerprint byte): its CRC fails
    last_frame = data.rfind(b"LDPB")
    data[last_frame + 60] ^= 0x55  # damage a byte of the last frame's columns: its CRC fails
    (tmp_path / "b.ldpe").write_bytes(bytes(data) + b"LDPE\x01garbage")
    s = fold_files([tmp_path / "b.ldpe"], spec, tmp_path / "out")
    assert s.records == s.accepted + sum(s.rejected.values())
    assert s.rejected["bad_checksum"] == 100 and s.rejected["truncated"] == 1 and s.accepted == total - 100
    rejects = [json.loads(x) for x in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert rejects[0]["offset"] == second and rejects[0]["records"] == 50


def test_spec_versions_fold_together_and_binary_rows_are_checked(spec, tmp_path):
    v2 = CollectionSpec.from_dict({**spec.to_dict(), "description": "version 2"}, base_dir=spec.base_dir)
    v3 = CollectionSpec.from_dict({**spec.to_dict(), "description": "version 3"})
    secs = make_sections(spec, 30, seed=21, windows=1)
    old = envelopes(secs)
    new = [Envelope(v2.fingerprint, e.metric, e.window, e.report) for e in old]
    unknown = [Envelope(v3.fingerprint, e.metric, e.window, e.report) for e in old[:5]]
    write_jsonl(tmp_path / "a.jsonl", old + new + unknown)
    s = fold_files([tmp_path / "a.jsonl"], [spec, v2], tmp_path / "out")
    assert (s.accepted, s.rejected) == (2 * len(old), {"unknown_spec": 5})
    for path in (tmp_path / "out" / "aggregates").glob("*.agg"):
        assert read_aggregate(path).n == 2 * 30  # both versions, same parameters: one aggregate
    grr = spec.params("app_category")
    from ldp.reports import Report

    reports = [Report("grr", grr.fingerprint, {"index": i}) for i in (0, 3, 4, 9, 1)]
    write_binary(tmp_path / "b.ldpe", [Section(spec.fingerprint, "app_category", WINDOW, reports),
                                       Section(spec.fingerprint, "nothing", WINDOW, reports[:2])])
    s = fold_files([tmp_path / "b.ldpe"], spec, tmp_path / "out2")
    assert (s.records, s.accepted, s.rejected) == (7, 3, {"out_of_range": 2, "unknown_metric": 2})
    rejects = [json.loads(x) for x in (tmp_path / "out2" / "rejects.jsonl").read_text().splitlines()]
    assert [(r["record"], r["raw"]) for r in rejects[:2]] == [(3, '{"index":4}'), (4, '{"index":9}')]


# -- the job: idempotent, resumable, exact ------------------------------------------------------------------


@pytest.fixture
def inputs(spec, tmp_path):
    """Five JSONL inputs and the output of one clean run over them."""
    paths = []
    (tmp_path / "in").mkdir()
    for i in range(5):
        paths.append(tmp_path / "in" / f"in{i}.jsonl")
        write_lines(paths[-1], fuzzed_lines(spec, 100 + i, n=10))
    fold_files(paths, spec, tmp_path / "clean", by_window=True)
    return paths


def test_rerun_counts_nothing_twice(spec, tmp_path, inputs):
    first = (tmp_path / "clean" / "rejects.jsonl").read_bytes(), agg_bytes(tmp_path / "clean")
    (tmp_path / "in" / "notes.txt").write_text("not an input")
    s = fold_files(inputs + [tmp_path / "in"], spec, tmp_path / "clean", by_window=True)  # listed twice
    assert s.processed == [] and len(s.skipped) == 5 and s.inputs == 5
    assert s.warnings == [f"1 file(s) in {tmp_path / 'in'} not read (unknown extension): notes.txt"]
    assert ((tmp_path / "clean" / "rejects.jsonl").read_bytes(), agg_bytes(tmp_path / "clean")) == first
    with pytest.raises(JobError, match="by_window"):
        fold_files(inputs, spec, tmp_path / "clean")


def test_the_output_folder_inside_an_input_folder_is_not_read(spec, tmp_path, inputs):
    first = fold_files([tmp_path / "in"], spec, tmp_path / "in" / "job", by_window=True)
    again = fold_files([tmp_path / "in"], spec, tmp_path / "in" / "job", by_window=True)
    assert first.inputs == again.inputs == 5 and again.processed == []
    assert agg_bytes(tmp_path / "in" / "job") == agg_bytes(tmp_path / "clean")


def test_a_changed_input_is_an_error_or_folded_again_in_place(spec, tmp_path, inputs):
    write_lines(inputs[0], fuzzed_lines(spec, 999, n=10))
    with pytest.raises(InputChangedError, match="reprocess"):
        fold_files(inputs, spec, tmp_path / "clean", by_window=True)
    s = fold_files(inputs, spec, tmp_path / "clean", by_window=True, on_change="reprocess")
    assert s.processed == [os.fspath(inputs[0])]
    fold_files(inputs, spec, tmp_path / "fresh", by_window=True)
    assert agg_bytes(tmp_path / "clean") == agg_bytes(tmp_path / "fresh")
    assert len(list((tmp_path / "clean" / "parts").iterdir())) == 5


@pytest.mark.parametrize("point", ["part_written", "input_done"])
def test_an_interrupted_run_resumes_to_the_single_run_result(spec, tmp_path, inputs, monkeypatch, point):
    done = []

    def crash(where, entry):
        if where == point:
            done.append(entry["source"])
            if len(done) == 3:
                raise KeyboardInterrupt

    monkeypatch.setattr(job_module, "_hook", crash)
    with pytest.raises(KeyboardInterrupt):
        fold_files(inputs, spec, tmp_path / "out", by_window=True)
    monkeypatch.setattr(job_module, "_hook", None)
    s = fold_files(inputs, spec, tmp_path / "out", by_window=True)
    assert len(s.skipped) == (3 if point == "input_done" else 2)
    assert agg_bytes(tmp_path / "out") == agg_bytes(tmp_path / "clean")
    assert (tmp_path / "out" / "rejects.jsonl").read_bytes() == (tmp_path / "clean" / "rejects.jsonl").read_bytes()


def test_a_killed_process_resumes_and_a_torn_journal_line_is_ignored(spec, tmp_path, inputs):
    code = (f"import os, signal, sys\nimport ldp.jobs.job as j\nseen = []\n"
            "def hook(where, entry):\n    seen.append(where)\n"
            "    if seen.count('input_done') == 2 and where == 'part_written': os.kill(os.getpid(), signal.SIGKILL)\n"
            f"j._hook = hook\nj.fold_files({[os.fspath(p) for p in inputs]!r}, "
            f"{os.fspath(spec.base_dir / 'spec.json')!r}, {os.fspath(tmp_path / 'out')!r}, by_window=True, "
            "progress=False)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert res.returncode == -9, res.stderr.decode()
    with open(tmp_path / "out" / "journal.jsonl", "ab") as fh:
        fh.write(b'{"path": "/torn')
    s = fold_files(inputs, spec, tmp_path / "out", by_window=True)
    assert len(s.skipped) == 2 and not (tmp_path / "out" / "journal.jsonl").exists()
    assert agg_bytes(tmp_path / "out") == agg_bytes(tmp_path / "clean")


def test_a_second_job_on_the_same_folder_is_refused(spec, tmp_path):
    from ldp.jobs.manifest import Manifest

    m = Manifest(tmp_path / "out", [spec.fingerprint], False)
    try:
        with pytest.raises(JobError, match="another job"):
            fold_files([], spec, tmp_path / "out")
    finally:
        m.close()


def test_merge_is_associative_and_commutative(spec, tmp_path, inputs):
    for name, group in {"a": inputs[:2], "b": inputs[2:3], "c": inputs[3:]}.items():
        fold_files(group, spec, tmp_path / name, by_window=True)
    whole = agg_bytes(tmp_path / "clean")
    merge_files([tmp_path / "c", tmp_path / "a", tmp_path / "b"], tmp_path / "m1")
    merge_files([tmp_path / "a", tmp_path / "b"], tmp_path / "ab")
    merge_files([tmp_path / "ab", tmp_path / "c"], tmp_path / "m2")
    merge_files([tmp_path / "b", tmp_path / "c"], tmp_path / "bc")
    merge_files([tmp_path / "bc", tmp_path / "a"], tmp_path / "m3")
    for m in ("m1", "m2", "m3"):
        assert {p.name: p.read_bytes() for p in sorted((tmp_path / m).glob("*.agg"))} == whole
    daily = merge_files([tmp_path / "clean"], tmp_path / "total", all_windows=True, specs=spec)
    assert all(not left for left in daily.left_out.values())  # no release threshold: every window merged
    with pytest.raises(ValueError, match="--all-windows needs --spec"):
        merge_files([tmp_path / "clean"], tmp_path / "total", all_windows=True)
    fold_files(inputs, spec, tmp_path / "undivided")
    assert {f"{k}.agg": p.read_bytes() for k, p in daily.items()} == agg_bytes(tmp_path / "undivided")
    one = sorted((tmp_path / "a" / "aggregates").glob("dark_mode*"))[0]
    merge_files([one, tmp_path / "b" / "aggregates" / one.name], tmp_path / "one.agg")
    assert read_aggregate(tmp_path / "one.agg").n == read_aggregate(one).n + read_aggregate(
        tmp_path / "b" / "aggregates" / one.name).n
    with pytest.raises(ValueError, match="give a folder"):
        merge_files([tmp_path / "a"], tmp_path / "x.agg")


# -- streaming with bounded memory ------------------------------------------------------------------------


class LazyLines(io.RawIOBase):
    """A stream of ``n`` copies of ``line``, made as it is read (never held whole)."""

    def __init__(self, line: bytes, n: int) -> None:
        self.line, self.left, self.pos = line, n * len(line), 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        size = min(len(buf), self.left)
        if size <= 0:
            return 0
        start = self.pos % len(self.line)
        reps = (start + size) // len(self.line) + 1
        buf[:size] = (self.line * reps)[start:start + size]
        self.pos += size
        self.left -= size
        return size


def test_reading_streams_in_chunks_with_memory_flat_in_the_input_size(spec):
    line = (envelopes(make_sections(spec, 1, seed=6, windows=1))[2].to_json() + "\n").encode()
    chunk = 1 << 16
    sizes = [len(c) for _, c in iter_line_chunks(io.BufferedReader(LazyLines(line, 20_000)), chunk, max_line=4096)]
    assert max(sizes) <= chunk + 4096 and sum(sizes) == 20_000 * len(line)
    peaks = []
    for n in (10_000, 80_000):  # ~1.4 MB and ~11 MB of lines
        folder = Folder({spec.fingerprint: spec})
        tracemalloc.start()
        read_jsonl(io.BufferedReader(LazyLines(line, n)), folder, chunk_bytes=chunk)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert folder.accepted == n
    assert peaks[1] < peaks[0] * 1.5 + (1 << 20) and peaks[1] < 8 * chunk + (4 << 20)


def test_an_endless_line_is_rejected_without_being_held(spec):
    stream = io.BufferedReader(LazyLines(b"x" * 1000, 10_000))  # 10 MB, no newline
    items = list(iter_line_chunks(stream, 1 << 16, max_line=1 << 20))
    assert len(items) == 1 and items[0][1].length == 10_000_000 and len(items[0][1].head) <= 4000


# -- decode and the CLI ------------------------------------------------------------------------------------


def test_decode_every_protocol(spec, tmp_path):
    secs = make_sections(spec, 400, seed=7, windows=1)
    write_binary(tmp_path / "a.ldpe", secs)
    fold_files([tmp_path / "a.ldpe"], spec, tmp_path / "out")
    specs = spec_index(spec)
    for path in sorted((tmp_path / "out" / "aggregates").glob("*.agg")):
        metric, est = decode_file(path, specs)
        assert est.n == 400 and metric.name == path.name.split(".")[0]
        if metric.protocol in ("rappor", "cms"):
            assert est.items == CANDIDATES
    agg = read_aggregate(next((tmp_path / "out" / "aggregates").glob("homepage*")))
    (tmp_path / "x.agg").write_bytes(agg.to_bytes())
    assert decode_file(tmp_path / "x.agg", specs)[0].name == "homepage"  # found by its parameters
    with pytest.raises(ValueError, match="candidate"):
        decode_file(tmp_path / "x.agg", specs, candidates=tmp_path / "missing.txt")


def _run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_job_arguments(parser.add_subparsers(dest="command"))
    return job_command(parser.parse_args(argv))


def test_cli_aggregate_merge_decode(spec, tmp_path, capsys):
    secs = make_sections(spec, 100, seed=8)
    write_jsonl(tmp_path / "day.jsonl", envelopes(secs))
    specfile = os.fspath(spec.base_dir / "spec.json")
    assert _run_cli("aggregate", os.fspath(tmp_path / "day.jsonl"), "--spec", specfile, "--out",
                    os.fspath(tmp_path / "out"), "--by-window") == 0
    out = capsys.readouterr().out
    assert "reports read: 1,200; aggregated: 1,200; rejected: 0" in out
    assert _run_cli("merge", os.fspath(tmp_path / "out"), "--all-windows", "--out", os.fspath(tmp_path / "m")) == 2
    assert "--all-windows needs --spec" in capsys.readouterr().err
    assert _run_cli("merge", os.fspath(tmp_path / "out"), "--all-windows", "--spec", specfile, "--out",
                    os.fspath(tmp_path / "m")) == 0
    agg = next((tmp_path / "m").glob("app_category.*.agg"))
    argv = ["decode", os.fspath(agg), "--spec", specfile]
    try:
        import matplotlib  # noqa: F401
        argv += ["--plot", os.fspath(tmp_path / "e.png")]
    except ImportError:
        pass
    capsys.readouterr()
    assert _run_cli(*argv) == 0
    assert "app_category (grr" in capsys.readouterr().out
    assert _run_cli(*argv, "--json") == 0
    assert json.loads(capsys.readouterr().out)["n"] == 200
    assert _run_cli(*argv, "--csv") == 0
    assert capsys.readouterr().out.count("\n") == 5
    assert "--plot" not in argv or (tmp_path / "e.png").read_bytes()[:4] == b"\x89PNG"
    write_jsonl(tmp_path / "day.jsonl", envelopes(secs[:3]))
    assert _run_cli("aggregate", os.fspath(tmp_path / "day.jsonl"), "--spec", specfile, "--out",
                    os.fspath(tmp_path / "out"), "--by-window", "-q") == 2
    assert "changed since it was aggregated" in capsys.readouterr().err


def test_progress_bar_is_optional(spec, tmp_path, monkeypatch, capsys):
    write_jsonl(tmp_path / "a.jsonl", envelopes(make_sections(spec, 5, seed=9, windows=1)))
    monkeypatch.setitem(sys.modules, "tqdm", None)  # tqdm not installed: no bar, no error
    assert fold_files([tmp_path / "a.jsonl"], spec, tmp_path / "o1", progress=True).accepted == 30
    monkeypatch.delitem(sys.modules, "tqdm")
    pytest.importorskip("tqdm")
    fold_files([tmp_path / "a.jsonl"], spec, tmp_path / "o2", progress=True)
    assert "aggregate" in capsys.readouterr().err
