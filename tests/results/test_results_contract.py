"""Every result class is a first-class citizen (issue 28, item 4): one contract, parametrised over every
subclass of :class:`~ldp.decoders.tabular.ResultTable` — the text table (with ``max_rows``), CSV, JSON,
pandas and the notebook's HTML all show the same rows, and ``repr()`` stays one short line. A new result
class without an example here fails :func:`test_every_result_class_has_an_example`."""

from __future__ import annotations

import csv
import html
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ldp.plan.oracles  # noqa: F401  (registers Ranking)
import ldp.simulation.histogram  # noqa: F401  (registers HistogramAccuracyResult)
import ldp.simulation.multi  # noqa: F401  (registers MultiAccuracyResult)
import ldp.simulation.pem  # noqa: F401
import ldp.simulation.rappor_ngrams  # noqa: F401
from ldp.cli.command import main
from ldp.decoders import Association, MultiAggregate, RapporAggregate, Variable, associate
from ldp.decoders.pem import PEMAggregate
from ldp.decoders.rappor_ngrams import RapporNgramsAggregate
from ldp.decoders.sfp import SfpAggregate
from ldp.decoders.tabular import HTML_MAX_ROWS, ResultTable
from ldp.encoders import (
    DuchiParams,
    GRRParams,
    HybridParams,
    MemoMeanParams,
    MultiParams,
    PiecewiseParams,
    RapporParams,
)
from ldp.encoders.histogram import BucketGRRParams, BucketOUEParams
from ldp.encoders.multi import MultiEncoder
from ldp.encoders.pem import PEMParams
from ldp.encoders.range_tree import HHParams
from ldp.encoders.sfp import SfpParams
from ldp.jobs.store import write_aggregate
from ldp.plan.frequency import plan
from ldp.plan.multi import plan_multi
from ldp.plan.numeric import plan_mean
from ldp.plan.oracles import recommend
from ldp.plan.rappor_ngrams import ngrams_default_params
from ldp.simulation.collect import accuracy, make_population, simulate, zipf
from ldp.simulation.numeric import simulate_mean, uniform_values
from ldp.spec import CollectionSpec

pd = pytest.importorskip("pandas")

MULTI_ATTRS = (("app", "grr", {"domain_size": 3}), ("minutes", "duchi", {"low": 0, "high": 60}))


def _estimates() -> ResultTable:
    return simulate(GRRParams(1.0, 60), np.arange(60) * 10, rng=1).estimate().with_truth(np.arange(60) * 10)


def _rappor() -> ResultTable:
    params = RapporParams(16, 2, 8, 0.25, 0.75, 0.25)
    truth = {f"site{i}": 4000 // (i + 1) for i in range(6)}
    return RapporAggregate.simulate(params, truth, rng=2).estimate([*truth, "absent"])


def _mean() -> ResultTable:
    params = DuchiParams(1.0, 0.0, 10.0)
    return simulate_mean(params, np.linspace(0, 10, 2000), rng=3).estimate().with_truth(5.0)


def _multi() -> ResultTable:
    return _multi_aggregate(MultiParams(2.0, "split", MULTI_ATTRS)).estimate()


def _sfp() -> ResultTable:
    truth = {"privacy": 40000, "sketch": 25000, "puzzle": 15000}
    return SfpAggregate.simulate(SfpParams(4.0, 6.0), truth, rng=5).discover(top=5)


def _pem() -> ResultTable:
    params = PEMParams(6.0, max_length=2, top_k=4)
    truth = {"ab": 6000, "cd": 4000, "ef": 3000}
    return PEMAggregate.simulate(params, truth, rng=6).discover()


def _ngrams() -> ResultTable:
    params = ngrams_default_params(10.0, max_length=4, alphabet="abc")
    truth = {"abca": 3000, "bcab": 2000, "cabc": 1500}
    return RapporNgramsAggregate.simulate(params, truth, rng=7).discover(rng=7)


def _association() -> ResultTable:
    from ldp.batch.association import simulate_pairs

    a, b = Variable(GRRParams(2.0, 3)), Variable(GRRParams(2.0, 2))
    joint = np.array([[0.3, 0.1], [0.2, 0.1], [0.2, 0.1]])
    ra, rb, _, _ = simulate_pairs(a.params, b.params, joint, 5000, 8)
    return associate(a, b, ra, rb, se="information")


def _accuracy() -> ResultTable:
    return accuracy(GRRParams(1.0, 8), zipf(8, 1.1), 5000, trials=3, rng=9)


def _accuracy_one_trial() -> ResultTable:
    return accuracy(GRRParams(1.0, 8), zipf(8, 1.1), 5000, trials=1, rng=9)


def _pem_accuracy() -> ResultTable:
    return accuracy(PEMParams(6.0, max_length=2, top_k=4), make_population("zipf", 5), 20000, trials=2, rng=10)


def _ngrams_accuracy() -> ResultTable:
    params = ngrams_default_params(10.0, max_length=4, alphabet="abc")
    return accuracy(params, make_population("zipf", 4), 20000, trials=1, rng=11)


def _mean_accuracy() -> ResultTable:
    return accuracy(DuchiParams(1.0, 0.0, 1.0), uniform_values(0.0, 1.0), 2000, trials=3, rng=12)


def _multi_accuracy() -> ResultTable:
    return accuracy(MultiParams(2.0, "sample", MULTI_ATTRS), None, 2000, trials=2, rng=13)


def _histogram() -> Any:
    return simulate(BucketOUEParams(1.0, (0, 10, 20, 50, 100)), [4000, 3000, 2000, 1000], rng=14).estimate()


def _hh() -> Any:
    return simulate(HHParams(1.0, 0.0, 16.0, branching=2, depth=4), list(range(100, 1700, 100)), rng=16).estimate()


EXAMPLES: dict[str, Callable[[], ResultTable]] = {
    "Estimates": _estimates, "RapporEstimates": _rappor, "MeanEstimate": _mean, "MultiEstimates": _multi,
    "SfpDiscovery": _sfp, "PEMDiscovery": _pem, "NgramDiscovery": _ngrams, "Association": _association,
    "Plan": lambda: plan("grr", n=10_000, domain_size=8, epsilon=1.0),
    "MeanPlan": lambda: plan_mean("duchi", n=10_000, epsilon=1.0, low=0.0, high=10.0),
    "MultiPlan": lambda: plan_multi(2.0, [("app", "grr", {"domain_size": 3}),
                                          ("minutes", "duchi", {"low": 0, "high": 60})], 10_000),
    "Ranking": lambda: recommend(1.0, 16, n=100_000),
    "AccuracyResult": _accuracy, "PEMAccuracyResult": _pem_accuracy, "NgramsAccuracyResult": _ngrams_accuracy,
    "MeanAccuracyResult": _mean_accuracy, "MultiAccuracyResult": _multi_accuracy,
    "HistogramEstimates": _histogram, "QuantileTable": lambda: _histogram().quantiles(),
    "RangeFraction": lambda: _histogram().range_fraction(5, 50), "CdfTable": lambda: _histogram().cdf(),
    "HistogramAccuracyResult": lambda: accuracy(BucketGRRParams(2.0, tuple(range(9))), zipf(8, 1.1), 5000, trials=3,
                                                rng=15),
    "HHEstimates": _hh, "RangeAnswers": lambda: _hh().ranges([0, 2], [7, 15]),
}
CASES = [*EXAMPLES, "AccuracyResult-one-trial"]
EXAMPLES["AccuracyResult-one-trial"] = _accuracy_one_trial


def _all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _all_subclasses(sub)
    return out


def test_every_result_class_has_an_example():
    concrete = {c.__name__ for c in _all_subclasses(ResultTable) if c.__module__ != "ldp.decoders.tabular"}
    assert concrete == set(EXAMPLES) - {"AccuracyResult-one-trial"}


@pytest.fixture(scope="module")
def results() -> dict[str, ResultTable]:
    return {}


def _example(results: dict[str, ResultTable], name: str) -> ResultTable:
    if name not in results:
        results[name] = EXAMPLES[name]()
    result = results[name]
    assert type(result).__name__ == name.split("-")[0]
    return result


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN and to a missing value, a float equal to its shortest text."""
    if isinstance(a, float) and math.isnan(a):
        return b is None or (isinstance(b, float) and math.isnan(b)) or b in ("", "nan", "NaN")
    if a is None:
        return b is None or b == "" or (isinstance(b, float) and math.isnan(b)) or b is pd.NA
    if isinstance(b, str) and not isinstance(a, str):
        if isinstance(a, bool):
            return b == str(a)
        return float(b) == float(a)
    if isinstance(a, float) or isinstance(b, float):
        return float(a) == float(b)
    return bool(a == b)


@pytest.mark.parametrize("name", CASES)
def test_every_view_shows_the_same_rows(results, name):
    result = _example(results, name)
    cols = list(result.columns())
    rows = result.to_dicts()
    assert len(rows) == result.row_count() and all(list(r) == cols for r in rows)
    assert all(isinstance(v, (str, int, float, bool, type(None))) for r in rows for v in r.values())

    # CSV: the header is the columns, every cell the row's value
    read = list(csv.DictReader(io.StringIO(result.to_csv())))
    assert csv.reader(io.StringIO(result.to_csv())).__next__() == cols
    assert len(read) == len(rows)
    for got, want in zip(read, rows, strict=True):
        assert all(_same(want[k], got[k]) for k in cols), (got, want)

    # JSON: the metadata, and the rows under json_rows (a one-row result: its fields beside the metadata)
    doc = json.loads(result.to_json())
    meta = json.loads(json.dumps(result.metadata()))
    assert {k: doc[k] for k in meta} == meta
    got_rows = [{k: doc[k] for k in cols}] if result.json_rows is None else doc[result.json_rows]
    assert len(got_rows) == len(rows)
    for got, want in zip(got_rows, rows, strict=True):
        assert all(_same(want[k], got[k]) for k in cols), (got, want)

    # pandas: the same columns and values, the metadata in attrs
    frame = result.to_pandas()
    assert list(frame.columns) == cols and len(frame) == len(rows)
    assert json.loads(json.dumps(frame.attrs)) == meta
    for i, want in enumerate(rows):
        assert all(_same(want[k], frame[k].iloc[i] if frame[k].iloc[i] is not pd.NA else None) for k in cols)

    # HTML: the title, every column, at most HTML_MAX_ROWS rows, everything escaped
    page = result._repr_html_()
    assert page.startswith('<div class="ldp-result">') and page.endswith("</div>")
    assert html.escape(result.title()) in page
    if result.json_rows is None and len(rows) == 1:
        assert all(f"<th>{html.escape(k)}</th>" for k in cols)
        assert page.count("<tr>") == 1 + len(cols)
    else:
        assert all(f"<th>{html.escape(k)}</th>" in page for k in cols)
        assert page.count("<tr>") == 1 + min(len(rows), HTML_MAX_ROWS)
        if len(rows) > HTML_MAX_ROWS:
            assert f"{len(rows) - HTML_MAX_ROWS} more rows" in page
    for note in result.result_notes():
        assert html.escape(note) in page

    # text: str() is the text view; a table takes max_rows; repr is one short line
    text = str(result)
    assert all(f"note: {n}" in text for n in result.result_notes())
    if result.json_rows is None:  # a one-row sheet (a plan, a mean) names its protocol on its own lines
        assert rows[0]["protocol" if "protocol" in rows[0] else "mean"] is not None
        assert str(rows[0].get("protocol", getattr(result, "protocol", ""))) in text
    else:
        assert result.title() in text
    if not isinstance(result, Association):
        assert text == result.table()
        shown = result.table(max_rows=2)
        assert shown.startswith(text.split("\n")[0])
    short = repr(result)
    assert "\n" not in short and len(short) < 400 and short.startswith(f"<{type(result).__name__}: ")


def test_html_escapes_what_a_report_controls():
    """Items come from clients (a RAPPOR candidate, a discovered string): the page shows them as text."""
    result = simulate(GRRParams.from_labels(1.0, ["<script>alert(1)</script>", "a&b"]), [10, 20], rng=1).estimate()
    page = result._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "a&amp;b" in page


def test_a_one_trial_simulation_has_a_defined_rmse(results):
    result = _example(results, "AccuracyResult-one-trial")
    summary = json.loads(result.to_json())["summary"]
    assert math.isfinite(summary["rmse_count"]) and summary["trials"] == 1
    assert all(math.isnan(r["empirical_sd"]) for r in result.to_dicts())  # undefined for one trial, not 0


MEAN_METRICS = {
    "duchi": DuchiParams(1.0, 0.0, 10.0),
    "piecewise": PiecewiseParams(1.0, 0.0, 10.0, cells=16),
    "hybrid": HybridParams(1.0, 0.0, 10.0, cells=16),
    "memo-mean": MemoMeanParams(1.0, 0.0, 10.0),
}


def _aggregate_file(tmp_path: Path, protocol: str) -> tuple[Path, Path]:
    """A spec with one metric of ``protocol`` and an aggregate file of 500 simulated reports for it."""
    if protocol == "multi":
        params: Any = MultiParams(2.0, "split", MULTI_ATTRS)
        agg: Any = _multi_aggregate(params)
    else:
        params = MEAN_METRICS[protocol]
        agg = simulate_mean(params, np.linspace(0.0, 10.0, 500), rng=1)
    doc = {"spec_version": 1, "name": "means", "budget": {"per_window": 100, "lifetime": 1000},
           "metrics": {"m": {"protocol": protocol, "params": params.to_dict(),
                             "budget": {"per_report": params.privacy_cost.epsilon}}}}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(doc))
    spec = CollectionSpec.load(spec_path)
    path = tmp_path / f"m.{spec.metrics['m'].params_fingerprint}.agg"
    write_aggregate(path, agg)
    return path, spec_path


def _multi_aggregate(params: MultiParams) -> MultiAggregate:
    agg = MultiAggregate(params)
    enc = MultiEncoder(params, rng=4, simulation=True)
    agg.add([enc.encode({"app": i % 3, "minutes": float(i % 60)}) for i in range(300)])
    return agg


@pytest.mark.parametrize("protocol", [*MEAN_METRICS, "multi"])
def test_ldp_decode_prints_every_result_type(tmp_path, protocol, capsys):
    """`ldp decode AGG` as a table, --csv and --json, for the result types that crashed (issue 28)."""
    path, spec = _aggregate_file(tmp_path, protocol)
    assert main(["decode", str(path), "--spec", str(spec)]) == 0
    table = capsys.readouterr().out
    assert "std_error" in table and "Traceback" not in table
    assert main(["decode", str(path), "--spec", str(spec), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and all(math.isfinite(float(r["std_error"])) for r in rows)
    assert main(["decode", str(path), "--spec", str(spec), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert ("rows" in doc) if protocol == "multi" else doc["protocol"] == protocol
