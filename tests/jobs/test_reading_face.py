"""The server's one reading face (issue 48): every input format read into batches (``ldp.jobs.batches``) by
readers that do not know the fold, and a fold that only consumes batches. Fixtures from test_server.py."""

from __future__ import annotations

import ast
import io
import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from test_server import envelopes, make_sections, server_spec  # noqa: F401  (the spec fixture)

from ldp.encoders import GRREncoder, GRRParams
from ldp.errors import InputError
from ldp.jobs import Folder, Section, read_batches, write_binary, write_csv, write_jsonl, write_parquet
from ldp.jobs.batches import Blank, LineRuns, ReadOptions, record_numbers
from ldp.jobs.lines import fold_lines
from ldp.jobs.store import pack_parts
from ldp.spec import Envelope

SERVER = Path(__file__).resolve().parents[2] / "ldp" / "jobs"
READERS = {"readers", "lines", "binary", "arrow", "jsonl", "junk", "formats", "formats_parquet"}
FORMATS = {"jsonl": "a.jsonl", "csv": "a.csv", "binary": "a.ldpe", "parquet": "a.parquet"}


# -- the direction of imports: readers -> batches <- fold ---------------------------------------------------


def _imports(module: str) -> set[str]:
    """Every module ``ldp/jobs/<module>.py`` imports, at its top or inside a function."""
    tree = ast.parse((SERVER / f"{module}.py").read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            if node.module == "ldp.jobs":  # ``from ldp.jobs import jsonl``
                out |= {f"ldp.jobs.{a.name}" for a in node.names}
    return out


def _names(module: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse((SERVER / f"{module}.py").read_text())) if isinstance(n, ast.Name)}


def test_the_fold_imports_no_reader_and_parses_nothing():
    imported = _imports("fold")
    assert not {m for m in imported if m.removeprefix("ldp.jobs.") in READERS}, imported
    assert "ldp.jobs.batches" in imported  # what it consumes
    assert not _names("fold") & {"parse_envelope", "match_lines", "junk_lines", "scan_frames", "frame_to_batch"}


@pytest.mark.parametrize("module", sorted(READERS | {"batches"}))
def test_no_reader_imports_the_fold(module):
    assert "ldp.jobs.fold" not in _imports(module)
    assert "Folder" not in _names(module)


def test_the_batch_types_import_no_other_server_module():
    assert not {m for m in _imports("batches") if m.startswith("ldp.jobs")}


# -- the same envelopes in every format: the same aggregates and the same rejected records --------------------


def _with_rejects(spec) -> list[Section]:
    """Valid sections of every metric and two windows, and sections every format can carry that the routing
    rejects: an unknown spec, an unknown metric, another protocol's reports, other parameters' reports."""
    secs = make_sections(spec, 40, seed=5)
    by = {s.metric: s.reports for s in secs if s.window == secs[0].window}
    other = GRREncoder(GRRParams(epsilon=2.0, domain_size=4)).encode_batch(np.arange(30) % 4, np.random.default_rng(1))
    bad = [Section("0123456789abcdef", "dark_mode", 5, by["dark_mode"]),
           Section(spec.fingerprint, "nosuch", 5, by["dark_mode"]),
           Section(spec.fingerprint, "app_category", 5, by["dark_mode"]),
           Section(spec.fingerprint, "app_category", 6, other),
           Section(spec.fingerprint, "dark_mode", 7, by["homepage"])]
    return secs[:3] + bad + secs[3:]


def _write(fmt: str, path: Path, sections: list[Section]) -> None:
    """Row i of every format is the same envelope: the sections' reports, in order."""
    envs = [Envelope(s.spec, s.metric, s.window, r) for s in sections for r in s.reports.reports()]
    {"jsonl": lambda: write_jsonl(path, envs), "csv": lambda: write_csv(path, envs),
     "binary": lambda: write_binary(path, sections), "parquet": lambda: write_parquet(path, sections)}[fmt]()


def _fold(path: Path, fmt: str, spec, by_window: bool) -> tuple[dict, dict[int, str], bytes, np.ndarray]:
    """Counts, ``{record: reason}`` of every rejected report, the aggregates' bytes (their rejection counts in
    sorted order) and the record numbers of the batches read."""
    out = io.StringIO()
    folder = Folder({spec.fingerprint: spec}, by_window=by_window, rejects=out, source="input")
    batches = list(read_batches(path, fmt, folder.options))
    folder.consume(batches)
    folder.close()
    reasons: dict[int, str] = {}
    for e in map(json.loads, out.getvalue().splitlines()):
        for r in range(e["record"], e["record"] + e["records"]):
            assert r not in reasons, (fmt, r)
            reasons[r] = e["reason"]
    for agg in folder.aggregates.values():
        agg.rejected = Counter(dict(sorted(agg.rejected.items())))
    stats = folder.stats()
    del stats["rejects_written"]  # a binary frame rejected whole is one entry for its reports
    numbers = np.concatenate([record_numbers(b) for b in batches])
    return stats, reasons, pack_parts(folder.aggregates), numbers


@pytest.mark.parametrize("by_window", [False, True])
def test_every_format_folds_and_rejects_the_same_records(spec, tmp_path, by_window):
    sections = _with_rejects(spec)
    n = sum(len(s.reports) for s in sections)
    results = {}
    for fmt, name in FORMATS.items():
        _write(fmt, tmp_path / name, sections)
        results[fmt] = _fold(tmp_path / name, fmt, spec, by_window)
    stats, reasons, blob, numbers = results["jsonl"]
    assert stats["records"] == n and stats["accepted"] == n - len(reasons)
    assert set(Counter(reasons.values())) == {"unknown_spec", "unknown_metric", "wrong_protocol", "wrong_fingerprint"}
    assert np.array_equal(np.sort(numbers), np.arange(1, n + 1))  # every record in one batch, once
    for fmt, (s, r, b, nums) in results.items():
        assert (s, r, b) == (stats, reasons, blob), fmt
        assert np.array_equal(np.sort(nums), np.arange(1, n + 1)), fmt


def test_the_full_parser_and_the_fast_path_agree_through_the_face(spec, tmp_path):
    sections = _with_rejects(spec)
    _write("jsonl", tmp_path / "a.jsonl", sections)
    slow = Folder({spec.fingerprint: spec}, fast=False)
    slow.consume(read_batches(tmp_path / "a.jsonl", None, slow.options))
    fast = Folder({spec.fingerprint: spec})
    fast.consume(read_batches(tmp_path / "a.jsonl", None, fast.options))
    assert (slow.stats(), pack_parts(slow.aggregates)) == (fast.stats(), pack_parts(fast.aggregates))


# -- the cap on the rejects file: junk lines written in record order while there is room -----------------------


def test_junk_lines_are_written_in_record_order_and_the_rest_counted_after_the_parsed_lines(spec):
    """``x``, ``y``, ``z``, ``w`` are junk (rejected in bulk), ``{"a"}`` goes through the full parser: with room
    for two entries, x and y are written, and the first report not written is the parsed line (record 4), as
    before the reading face (the junk past the room is counted after the chunk's parsed lines)."""
    out = io.StringIO()
    folder = Folder({spec.fingerprint: spec}, rejects=out, cap=2)
    fold_lines(folder, b'x\ny\nz\n{"a"}\nw\n', 1)
    folder.close()
    rejects = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(r["record"], r["records"], r.get("omitted", False)) for r in rejects] == [(1, 1, False), (2, 1, False),
                                                                                     (4, 3, True)]


# -- arbitrary bytes: an InputError or every record folded or rejected exactly once ---------------------------


@pytest.fixture(scope="module")
def clean(spec, tmp_path_factory) -> dict[str, bytes]:
    """A small valid file of every format."""
    folder = tmp_path_factory.mktemp("clean")
    sections = make_sections(spec, 6, seed=2, windows=1)
    out = {}
    for fmt, name in FORMATS.items():
        _write(fmt, folder / name, sections)
        out[fmt] = (folder / name).read_bytes()
    return out


_PIECES = st.sampled_from([b"\n", b"\r\n", b"{", b"}", b'"', b",", b"x", b"LDPE\x01", b"LDPR", b"PAR1", b"\x00",
                           b'{"spec":', b"spec,metric,window,report\n", b" "])


@st.composite
def damaged(draw, clean: dict[str, bytes]) -> tuple[str, bytes]:
    """A format and bytes: arbitrary, or a valid file with pieces cut, replaced and inserted."""
    fmt = draw(st.sampled_from(sorted(FORMATS)))
    if draw(st.booleans()):
        return fmt, draw(st.binary(max_size=400) | st.lists(_PIECES | st.binary(max_size=8)).map(b"".join))
    data = bytearray(clean[fmt])
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        cut = draw(st.integers(0, 40))
        data[at:at + cut] = draw(_PIECES | st.binary(max_size=16))
    return fmt, bytes(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])
@given(data=st.data())
def test_any_bytes_read_into_batches_every_record_once(spec, clean, data):
    fmt, raw = data.draw(damaged(clean))
    by_window = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / FORMATS[fmt]
        path.write_bytes(raw)
        options = ReadOptions({spec.fingerprint: spec}, by_window=by_window, source="input")
        try:
            batches = list(read_batches(path, fmt, options))
        except InputError:
            assert fmt in ("csv", "parquet")  # not a CSV file (its header) or not a Parquet file
            return
    numbers = np.concatenate([record_numbers(b) for b in batches] + [np.zeros(0, np.int64)])
    assert len(np.unique(numbers)) == len(numbers) and (numbers >= 1).all()
    blank = sum(b.lines for b in batches if isinstance(b, Blank))
    blank += sum(s.lines for b in batches if isinstance(b, LineRuns) for _, s in b.steps if isinstance(s, Blank))
    if fmt == "jsonl":  # line i is record i, blank or not
        lines = raw.count(b"\n") + (not raw.endswith(b"\n") and len(raw) > 0)
        assert len(numbers) + blank == lines and (numbers <= lines).all()
    elif fmt in ("binary", "parquet"):  # numbered from 1 without a gap
        assert np.array_equal(np.sort(numbers), np.arange(1, len(numbers) + 1))
    folder = Folder(options.specs, by_window=by_window, rejects=io.StringIO(), cap=3)
    folder.consume(batches)
    folder.close()
    assert folder.records == len(numbers) == folder.accepted + sum(folder.rejected.values())
    assert folder.blank == blank
    written = [json.loads(x) for x in folder.out.getvalue().splitlines()]
    assert sum(r["records"] for r in written) == sum(folder.rejected.values())


def test_the_generator_reaches_damage_in_every_format(spec, clean):
    """A generator check: the damaged files above do reject records in every format."""
    rnd = random.Random(4)
    seen: Counter[str] = Counter()
    for fmt in FORMATS:
        for _ in range(30):
            data = bytearray(clean[fmt])
            at = rnd.randrange(len(data))
            data[at:at + rnd.randrange(1, 30)] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 9)))
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / FORMATS[fmt]
                path.write_bytes(bytes(data))
                folder = Folder({spec.fingerprint: spec})
                try:
                    folder.consume(read_batches(path, fmt, folder.options))
                except InputError:
                    continue
            if folder.rejected:
                seen[fmt] += 1
    assert set(seen) == set(FORMATS), seen


def test_a_parquet_file_without_a_text_key_column_is_an_input_error(spec, tmp_path):
    """It was a ``KeyError`` from pyarrow (asked for the dictionary of a column that is not there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"spec": [spec.fingerprint]}), tmp_path / "a.parquet", write_page_checksum=True)
    with pytest.raises(InputError, match=r"Parquet columns \['metric', 'window', 'v', 'protocol', 'params'\] missing"):
        list(read_batches(tmp_path / "a.parquet", None, {spec.fingerprint: spec}))
