"""The Parquet/Arrow ingestion path at its edges (issue 15, items 1 and 2).

* Grouping rows by dictionary codes never merges different (spec, metric, protocol, params,
  window): a differential property test against the per-line envelope parser (the reference) on
  random Arrow tables — dictionaries with unused words, nulls, several chunks, every kind of bad row.
* A damaged Parquet page is found by its checksum and its row group rejected and counted, never
  folded: seeded byte flips inside the data pages of files written by ``write_parquet``.
"""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from test_server import CANDIDATES, WINDOW, envelopes, make_sections, spec_doc  # noqa: E402

from ldp.jobs import Folder, fold_files, sections_from_envelopes, write_parquet  # noqa: E402
from ldp.jobs.arrow import fold_arrow, read_parquet  # noqa: E402
from ldp.jobs.lines import fold_lines  # noqa: E402
from ldp.jobs.readers import InputError  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402

TEXT = ("spec", "metric", "protocol", "params")


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> dict[str, CollectionSpec]:
    """Two deployed versions of the test spec (same metrics and parameters, other names)."""
    folder = tmp_path_factory.mktemp("specs")
    (folder / "candidates.txt").write_text("\n".join(CANDIDATES) + "\n")
    out = {}
    for name in ("server_test", "server_test_v2"):
        (folder / f"{name}.json").write_text(json.dumps(spec_doc(name)))
        s = CollectionSpec.load(folder / f"{name}.json")
        out[s.fingerprint] = s
    return out


def _first(specs: dict[str, CollectionSpec]) -> CollectionSpec:
    return next(iter(specs.values()))


# -- the reference: each row as its upload envelope, through the full parser ---------------------------


def _bits_text(value: bytes, size: int | None) -> str:
    """Packed bits as a bit string: ``size`` bits when the bytes are exactly that field's (padding
    clean), else all ``8*len`` bits (what the Parquet layout says those bytes are)."""
    bits = "".join(str(value[i // 8] >> (i % 8) & 1) for i in range(8 * len(value)))
    if size is not None and len(value) == (size + 7) // 8 and "1" not in bits[size:]:
        return bits[:size]
    return bits


def envelope_line(row: dict, specs: dict[str, CollectionSpec]) -> str:
    """A row of the Parquet layout as the JSON envelope it stands for (null: key absent; payload
    fields in the order of the columns, which :func:`build_table` sorts by name)."""
    metric = specs[row["spec"]].metrics.get(row["metric"]) if row["spec"] in specs else None
    sizes = {f.name: f.size for f in metric.params.schema if f.kind == "bits"} if metric else {}
    payload = {k: (v if isinstance(v, int) else _bits_text(v, sizes.get(k))) for k, v in sorted(row["payload"].items())}
    report = {k: row[k] for k in ("v", "protocol", "params") if row[k] is not None}
    obj = {k: row[k] for k in ("spec", "metric", "window") if row[k] is not None}
    obj["report"] = {**report, "payload": payload}
    return json.dumps({**obj, **row["extra"]}, separators=(",", ":"))


def reference(rows: list[dict], specs: dict[str, CollectionSpec], by_window: bool) -> Folder:
    folder = Folder(specs, by_window=by_window, rejects=io.StringIO(), fast=False)
    fold_lines(folder, ("\n".join(envelope_line(r, specs) for r in rows) + "\n").encode(), 1)
    return folder


def outcome(folder: Folder) -> tuple:
    """Counts, every rejected record with its reason, and the aggregates byte for byte (their
    rejection counts in sorted order: ``to_bytes`` keeps the order they were first counted in)."""
    for agg in folder.aggregates.values():
        agg.rejected = Counter(dict(sorted(agg.rejected.items())))
    rejects = sorted((e["record"], e["reason"]) for e in map(json.loads, folder.out.getvalue().splitlines()))
    return (folder.stats(), rejects, {k: a.to_bytes() for k, a in sorted(folder.aggregates.items())})


# -- building Arrow tables ---------------------------------------------------------------------------


def _text_column(values: list, unused: list[str], rnd: random.Random, plain: bool) -> pa.Array:
    if plain:
        return pa.array(values, pa.string())
    inserted: list[list] = []  # [where, word]: each value among the unused words, once or twice
    for w in dict.fromkeys(v for v in values if v is not None):
        for _ in range(rnd.choice([1, 1, 2])):
            at = rnd.randrange(len(unused) + len(inserted) + 1)  # as words.insert(at, w) into the words so far
            for item in inserted:
                item[0] += item[0] >= at
            inserted.append([at, w])
    words: list[str] = []
    taken = 0  # the unused words in order around the inserted ones: no insert into a list of 70,000
    for at, w in sorted(inserted):
        words += unused[taken:(taken := taken + at - len(words))]
        words.append(w)
    words += unused[taken:]
    wanted = {v for v in values if v is not None}
    where: dict[str, list[int]] = {}
    for i, w in enumerate(words):
        if w in wanted:
            where.setdefault(w, []).append(i)
    indices = [None if v is None else rnd.choice(where[v]) for v in values]
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(words, pa.string()))


def _int_type(values: list) -> pa.DataType:
    present = [v for v in values if v is not None]
    if any(v < 0 for v in present):
        return pa.int64()
    top = max(present, default=0)
    return next(t for t, m in ((pa.uint8(), 255), (pa.uint16(), 65535), (pa.uint64(), 2**64 - 1)) if top <= m)


def build_table(rows: list[dict], cuts: list[int], unused: list[str], seed: int, plain: bool) -> pa.Table:
    """The rows as an Arrow table of ``len(cuts) + 1`` record batches, each with its own
    dictionaries (its words shuffled among ``unused`` ones)."""
    rnd = random.Random(seed)
    payload = sorted({k for r in rows for k in r["payload"]})
    extra = sorted({k for r in rows for k in r["extra"]})
    types: dict[str, pa.DataType] = {k: pa.dictionary(pa.int32(), pa.string()) if not plain else pa.string()
                                     for k in TEXT}
    for k in ("window", "v"):
        types[k] = _int_type([r[k] for r in rows])
    for k in payload:
        values = [r["payload"].get(k) for r in rows]
        if any(isinstance(v, bytes) for v in values):
            sizes = {len(v) for v in values if v is not None}
            types[f"payload.{k}"] = (pa.binary(min(sizes)) if len(sizes) == 1 and min(sizes) and seed % 3 == 0
                                     else pa.large_binary() if seed % 3 == 1 else pa.binary())
        else:
            types[f"payload.{k}"] = _int_type(values)
    for k in extra:
        types[k] = pa.string()
    schema = pa.schema([(k, t) for k, t in types.items()])
    batches = []
    for lo, hi in zip([0] + cuts, cuts + [len(rows)], strict=True):
        part = rows[lo:hi]
        arrays = []
        for name in schema.names:
            if name in TEXT:
                arrays.append(_text_column([r[name] for r in part], unused, rnd, plain))
            elif name in ("window", "v"):
                arrays.append(pa.array([r[name] for r in part], types[name]))
            elif name.startswith("payload."):
                arrays.append(pa.array([r["payload"].get(name[8:]) for r in part], types[name]))
            else:
                arrays.append(pa.array([r["extra"].get(name) for r in part], types[name]))
        batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return pa.Table.from_batches(batches, schema=schema)


# -- random rows: valid envelopes, mutated ------------------------------------------------------------

MUTATIONS = ("null_spec", "null_metric", "null_window", "null_v", "null_protocol", "null_params", "spec_unknown",
             "spec_bad", "spec_other", "metric_unknown", "metric_bad", "metric_other", "window_negative",
             "window_big", "window_other", "version", "protocol_bad", "protocol_other", "params_bad",
             "params_other", "drop_field", "extra_field", "out_of_range", "negative", "bits_length", "bits_padding",
             "bits_empty", "empty_payload", "extra_column", "bad_field_name", "random_text")
FIELDS = {"index": 0, "bit": 1, "hash": 2, "cohort": 3, "position": 1, "word_hash": 0, "fragment_hash": 1, "row": 5,
          "bits": b"\x01\x02", "word_bits": b"\x03\x00", "fragment_bits": b"\x00\x01"}


def _pool(specs: dict[str, CollectionSpec]) -> list[dict]:
    out = []
    for fp, spec in specs.items():
        for env in envelopes(make_sections(spec, 2, seed=len(out) + 5, windows=2)):
            payload = {k: (v if isinstance(v, int) else v.tobytes()) for k, v in env.report.payload.items()}
            out.append({"spec": fp, "metric": env.metric, "window": env.window, "v": 1,
                        "protocol": env.report.protocol, "params": env.report.fingerprint, "payload": payload,
                        "extra": {}})
    return out


def mutate(row: dict, kinds: list[str], rnd: random.Random, specs: dict[str, CollectionSpec]) -> dict:
    row = {**row, "payload": dict(row["payload"]), "extra": dict(row["extra"])}
    spec = _first(specs)
    for kind in kinds:
        p = row["payload"]
        uints = [k for k, v in p.items() if isinstance(v, int)]
        bits = [k for k, v in p.items() if isinstance(v, bytes)]
        if kind.startswith("null_"):
            row[kind[5:]] = None
        elif kind == "spec_unknown":
            row["spec"] = "0123456789abcdef"
        elif kind == "spec_bad":
            row["spec"] = "0123456789ABCDEF"
        elif kind == "spec_other":
            row["spec"] = rnd.choice(list(specs))
        elif kind in ("metric_unknown", "metric_bad", "metric_other"):
            row["metric"] = {"metric_unknown": "nope", "metric_bad": "Dark",
                             "metric_other": rnd.choice(list(spec.metrics))}[kind]
        elif kind.startswith("window_"):
            row["window"] = {"window_negative": -1, "window_big": 2**53 + 1,
                             "window_other": WINDOW + rnd.randrange(3)}[kind]
        elif kind == "version":
            row["v"] = rnd.choice([0, 2, 255])
        elif kind == "protocol_bad":
            row["protocol"] = "Grr"
        elif kind == "protocol_other":
            row["protocol"] = rnd.choice([m.protocol for m in spec.metrics.values()])
        elif kind == "params_bad":
            row["params"] = "c96a633c"
        elif kind == "params_other":
            row["params"] = rnd.choice([m.params_fingerprint for m in spec.metrics.values()])
        elif kind == "drop_field" and p:
            del p[rnd.choice(list(p))]
        elif kind == "extra_field":
            name = rnd.choice(sorted(set(FIELDS) - set(p)))
            p[name] = FIELDS[name]
        elif kind == "out_of_range" and uints:
            p[rnd.choice(uints)] = rnd.choice([4, 8, 32, 255, 2**64 - 1])
        elif kind == "negative" and uints:
            p[rnd.choice(uints)] = -rnd.randrange(1, 5)
        elif kind == "bits_length" and bits:
            k = rnd.choice(bits)
            p[k] = p[k] + b"\x00" if rnd.random() < 0.5 else p[k][:-1]
        elif kind == "bits_padding" and any(p[k] for k in bits):  # not a field bits_empty emptied
            k = rnd.choice([k for k in bits if p[k]])
            p[k] = p[k][:-1] + bytes([p[k][-1] | 0x80])
        elif kind == "bits_empty" and bits:
            p[rnd.choice(bits)] = b""
        elif kind == "empty_payload":
            p.clear()
        elif kind == "extra_column":
            row["extra"]["user"] = "u1"
        elif kind == "bad_field_name":
            p["Bad"] = 1
        elif kind == "random_text":
            row[rnd.choice(TEXT)] = "".join(rnd.choice("abcXYZ09_-é \n") for _ in range(rnd.randrange(0, 20)))
    return row


def _fit(rows: list[dict]) -> list[dict]:
    """One integer column cannot hold both -1 and 2**64 - 1: the large values become 2**63 - 1."""
    for name in {k for r in rows for k in r["payload"]}:
        if any(isinstance(r["payload"].get(name), int) and r["payload"][name] < 0 for r in rows):
            for r in rows:
                if isinstance(r["payload"].get(name), int) and r["payload"][name] >= 2**63:
                    r["payload"][name] = 2**63 - 1
    return rows


@st.composite
def tables(draw: st.DrawFn, pool: list[dict], specs: dict[str, CollectionSpec]) -> tuple:
    picks = draw(st.lists(st.tuples(st.integers(0, len(pool) - 1),
                                    st.lists(st.sampled_from(MUTATIONS), max_size=2),
                                    st.integers(0, 2**16)), min_size=1, max_size=40))
    rows = [mutate(pool[i], kinds if draw(st.integers(0, 3)) else [], random.Random(s), specs)
            for i, kinds, s in picks]
    _fit(rows)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(len(rows) - 1, 1)), max_size=3)))) if len(rows) > 1 else []
    unused = [f"w{i}" for i in range(draw(st.sampled_from([0, 3, 300, 300, 70_000])))]
    unused += draw(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), max_size=4))
    return rows, cuts, unused, draw(st.integers(0, 2**16)), draw(st.booleans()), draw(st.integers(0, 9)) == 0


# -- item 1: grouping ------------------------------------------------------------------------------------


def _colliding_table(specs: dict[str, CollectionSpec], words: int = 65_536) -> tuple[pa.Table, list[dict]]:
    """The issue's 2 rows: a GRR ``app_category`` report, and a spec-v2 ``dark_mode`` row of protocol
    rr whose payload is GRR's (``payload_mismatch``), at dictionary positions whose old group codes
    ((s*R + m)*R + p)*R + f, R = 65,537, differ by exactly 2**64 (digits 65533, 6, -4, 1)."""
    v1, v2 = list(specs)
    grr, rr = (_first(specs).metrics[m] for m in ("app_category", "dark_mode"))
    rows = [{"spec": v1, "metric": "app_category", "window": WINDOW, "v": 1, "protocol": "grr",
             "params": grr.params_fingerprint, "payload": {"index": 1}, "extra": {}},
            {"spec": v2, "metric": "dark_mode", "window": WINDOW, "v": 1, "protocol": "rr",
             "params": rr.params_fingerprint, "payload": {"index": 2}, "extra": {}}]
    at = {"spec": (0, 65533), "metric": (0, 6), "protocol": (4, 0), "params": (0, 1)}
    arrays = []
    for name in TEXT:
        dictionary = [f"unused{i}" for i in range(words)]
        for row, pos in zip(rows, at[name], strict=True):
            dictionary[pos] = row[name]
        arrays.append(pa.DictionaryArray.from_arrays(pa.array(at[name], pa.int32()), pa.array(dictionary)))
    arrays += [pa.array([WINDOW] * 2, pa.uint16()), pa.array([1, 1], pa.uint8()), pa.array([1, 2], pa.uint8()),
               pa.array([None, None], pa.uint8())]
    names = list(TEXT) + ["window", "v", "payload.index", "payload.bit"]
    return pa.table(dict(zip(names, arrays, strict=True))), rows


def test_rows_whose_old_group_codes_wrap_to_the_same_int64_are_not_merged(specs, tmp_path):
    table, rows = _colliding_table(specs)
    want = outcome(reference(rows, specs, False))
    assert want[0]["accepted"] == 1 and want[0]["rejected"] == {"payload_mismatch": 1}
    folder = Folder(specs, rejects=io.StringIO())
    fold_arrow(folder, table, 1)
    assert outcome(folder) == want
    pq.write_table(table, tmp_path / "c.parquet", write_page_checksum=True)
    folder = Folder(specs, rejects=io.StringIO())
    read_parquet(tmp_path / "c.parquet", folder)
    assert outcome(folder) == want
    s = fold_files([tmp_path / "c.parquet"], list(specs.values()), tmp_path / "out")
    assert (s.accepted, s.rejected) == (1, {"payload_mismatch": 1})


def test_the_dask_partition_fold_keeps_them_apart_too(specs):
    pytest.importorskip("pandas")
    from ldp.jobs.dask_engine import _fold_frame

    table, rows = _colliding_table(specs)
    _, stats, _ = _fold_frame(table.to_pandas(), 0, [s.to_dict() for s in specs.values()], False, False)
    assert (stats["accepted"], stats["rejected"]) == (1, {"payload_mismatch": 1})


@pytest.fixture(scope="module")
def pool(specs) -> list[dict]:
    return _pool(specs)


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fast_path_matches_the_envelope_parser_row_for_row(specs, pool, tmp_path, data):
    rows, cuts, unused, seed, by_window, via_parquet = data.draw(tables(pool, specs))
    table = build_table(rows, cuts, unused, seed, plain=seed % 7 == 0)
    want = outcome(reference(rows, specs, by_window))
    folder = Folder(specs, by_window=by_window, rejects=io.StringIO())
    fold_arrow(folder, table, 1)
    assert outcome(folder) == want
    if via_parquet:  # and through a checksummed Parquet file of small row groups
        path = tmp_path / f"t{seed}.parquet"
        pq.write_table(table, path, row_group_size=7 if len(unused) < 1000 else None, write_page_checksum=True)
        folder = Folder(specs, by_window=by_window, rejects=io.StringIO())
        read_parquet(path, folder)
        assert outcome(folder) == want


def test_a_bits_field_emptied_then_given_padding_is_mutated_without_error(specs, pool):
    """The generator's own bug, found by hypothesis in CI: ``bits_padding`` after ``bits_empty`` indexed the emptied
    value; it now pads a field that still has a byte, and leaves the row alone when none has."""
    row = next(r for r in pool if sum(isinstance(v, bytes) for v in r["payload"].values()) == 1)
    out = mutate(row, ["bits_empty", "bits_padding"], random.Random(0), specs)
    assert [v for v in out["payload"].values() if isinstance(v, bytes)] == [b""]
    two = next(r for r in pool if sum(isinstance(v, bytes) for v in r["payload"].values()) == 2)
    for seed in range(8):
        out = mutate(two, ["bits_empty", "bits_padding"], random.Random(seed), specs)
        kept = [v for v in out["payload"].values() if isinstance(v, bytes) and v]
        assert len(kept) == 1 and kept[0][-1] & 0x80


def test_every_reason_is_reached_by_the_generator(specs, pool):
    """The property test's rows reach every reason the fast path can give (a generator check)."""
    rnd = random.Random(3)
    reasons: Counter[str] = Counter()
    for _ in range(40):
        rows = _fit([mutate(pool[rnd.randrange(len(pool))], rnd.sample(MUTATIONS, rnd.randrange(0, 2)), rnd, specs)
                     for _ in range(40)])
        want = outcome(reference(rows, specs, True))
        folder = Folder(specs, by_window=True, rejects=io.StringIO())
        fold_arrow(folder, build_table(rows, [13, 29], ["u"], rnd.randrange(99), False), 1)
        assert outcome(folder) == want
        reasons.update(want[0]["rejected"])
    assert set(reasons) >= {"missing_key", "unknown_key", "bad_spec", "bad_metric", "bad_window", "bad_version",
                            "bad_protocol", "bad_fingerprint", "bad_payload", "bad_field", "bad_value",
                            "unknown_spec", "unknown_metric", "wrong_protocol", "wrong_fingerprint",
                            "payload_mismatch", "out_of_range", "bad_length"}, reasons


# -- item 2: damaged pages -------------------------------------------------------------------------------


def _pages(path: Path) -> list[tuple[int, int, int]]:
    """(row group, first byte, end) of every column chunk's pages."""
    meta = pq.read_metadata(path)
    out = []
    for rg in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            ch = meta.row_group(rg).column(c)
            start = min([ch.data_page_offset] + ([ch.dictionary_page_offset] if ch.has_dictionary_page else []))
            out.append((rg, start, start + ch.total_compressed_size))
    return out


def _fold_row_groups(path: Path, specs: dict, keep: set[int]) -> Folder:
    """The truth: the row groups in ``keep`` of the intact file, folded with their own record numbers."""
    pf = pq.ParquetFile(path, read_dictionary=list(TEXT))
    folder, record = Folder(specs), 1
    for rg in range(pf.metadata.num_row_groups):
        if rg in keep:
            fold_arrow(folder, pf.read_row_group(rg), record)
        record += pf.metadata.row_group(rg).num_rows
    return folder


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_flipped_bytes_in_pages_reject_their_row_group_and_never_fold_wrong(specs, tmp_path, compression):
    spec = _first(specs)
    path = tmp_path / "clean.parquet"
    envs = envelopes(make_sections(spec, 150, seed=21, windows=1))
    write_parquet(path, sections_from_envelopes(envs), row_group_size=100, compression=compression)
    meta = pq.read_metadata(path)
    sizes = [meta.row_group(rg).num_rows for rg in range(meta.num_row_groups)]
    assert meta.num_row_groups == 12 and sum(sizes) == len(envs)
    clean, pages = path.read_bytes(), _pages(path)
    rnd = random.Random(f"flips-{compression}")
    seen: Counter[str] = Counter()
    truths: dict[frozenset, Folder] = {}
    for trial in range(100):
        data = bytearray(clean)
        hit = set()
        for _ in range(rnd.choice([1, 1, 2, 5])):
            rg, lo, hi = rnd.choice(pages)
            at = rnd.randrange(lo, hi)
            data[at] ^= rnd.randrange(1, 256)
            hit.add(rg)
        bad = tmp_path / "bad.parquet"
        bad.write_bytes(bytes(data))
        folder = Folder(specs, rejects=io.StringIO(), source="bad.parquet")
        try:
            read_parquet(bad, folder)
        except InputError:
            seen["input_error"] += 1
            continue
        rejects = [json.loads(x) for x in folder.out.getvalue().splitlines()]
        damaged = {r["record"]: r["records"] for r in rejects if r["reason"] == "damaged_row_group"}
        firsts = list(np.cumsum([1] + sizes[:-1]))
        lost = {firsts.index(rec) for rec in damaged}
        assert all(damaged[firsts[rg]] == sizes[rg] for rg in lost)
        assert lost <= hit, (trial, lost, hit)
        if frozenset(lost) not in truths:
            truths[frozenset(lost)] = _fold_row_groups(path, specs, set(range(len(sizes))) - lost)
        truth = truths[frozenset(lost)]
        assert folder.records == len(envs) and folder.rejected == Counter({"damaged_row_group": sum(damaged.values())}
                                                                          if damaged else {})
        assert folder.accepted == truth.accepted == len(envs) - sum(damaged.values())
        assert {k: a.to_bytes() for k, a in folder.aggregates.items()} == {
            k: a.to_bytes() for k, a in truth.aggregates.items()}
        seen["rejected" if lost else "unchanged"] += 1
    assert seen["rejected"] >= 80 and seen["input_error"] <= 5, seen


def test_files_without_page_checksums_are_refused_unless_allowed(specs, tmp_path):
    envs = envelopes(make_sections(_first(specs), 20, seed=22, windows=1))
    write_parquet(tmp_path / "ok.parquet", sections_from_envelopes(envs))
    table = pq.read_table(tmp_path / "ok.parquet")
    pq.write_table(table, tmp_path / "plain.parquet")  # pyarrow's default: no page checksums
    with pytest.raises(InputError, match="without checksums"):
        read_parquet(tmp_path / "plain.parquet", Folder(specs))
    with pytest.raises(ValueError, match="without checksums"):
        fold_files([tmp_path / "plain.parquet"], list(specs.values()), tmp_path / "out")
    folder = Folder(specs)
    read_parquet(tmp_path / "plain.parquet", folder, unverified=True)
    assert folder.accepted == len(envs)


def test_a_damaged_footer_makes_the_whole_input_an_error(specs, tmp_path):
    envs = envelopes(make_sections(_first(specs), 20, seed=23, windows=1))
    write_parquet(tmp_path / "ok.parquet", sections_from_envelopes(envs))
    data = (tmp_path / "ok.parquet").read_bytes()
    for name, bad in {"cut": data[:-100], "magic": data[:-4] + b"PAR0", "length": data[:-8] + b"\xff\xff\xff\x7f"
                      + data[-4:], "empty": b""}.items():
        (tmp_path / f"{name}.parquet").write_bytes(bad)
        with pytest.raises(InputError, match="footer is damaged"):
            read_parquet(tmp_path / f"{name}.parquet", Folder(specs))
