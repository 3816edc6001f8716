"""``to_pandas()`` of every result type: column names, dtypes, values equal to ``to_dicts()``,
metadata in ``attrs``, and a clear ImportError when pandas is missing."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from support import ROOT

from ldp.decoders.randomized_response import GRRAggregate, RRAggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, decode
from ldp.decoders.results import to_frame
from ldp.decoders.sfp import SfpAggregate
from ldp.decoders.sketch import SketchAggregate
from ldp.encoders.cms import CmsParams
from ldp.encoders.hcms import HcmsParams
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.encoders.rappor import RapporParams, bloom_filter
from ldp.encoders.sfp import SfpParams

pd = pytest.importorskip("pandas")

BASE = {"item": "string", "count": "float64", "std_error": "float64", "ci_low": "float64", "ci_high": "float64",
        "fraction": "float64"}
SKETCH = {**BASE, "threshold": "float64", "detected": "bool"}
RAPPOR = {**BASE, "z": "float64", "p_value": "float64", "detected": "bool", "selected": "bool",
          "adjusted_ci_low": "float64", "adjusted_ci_high": "float64", "duplicate_of": "string"}


def _plain_rows(frame: Any) -> list[dict[str, Any]]:
    """The frame's rows with missing values (NaN, NA) as None, for comparison with ``to_dicts()``."""
    rows = frame.astype(object).to_dict("records")
    return [{k: None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v
             for k, v in r.items()} for r in rows]


def _nan_to_none(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows]


def _check(frame: Any, dtypes: dict[str, str], rows: list[dict[str, Any]]) -> None:
    assert {k: str(v) for k, v in frame.dtypes.items()} == dtypes
    assert isinstance(frame.index, pd.RangeIndex) and len(frame) == len(rows)
    assert _plain_rows(frame) == _nan_to_none(rows)


# -- GRR / RR --------------------------------------------------------------------------------------------
def test_grr_estimates_with_truth():
    agg = GRRAggregate.simulate(GRRParams.from_labels(1.0, ["a", "b", "c"]), [500, 300, 200], rng=1)
    est = agg.estimate(0.9).with_truth([500, 300, 200])
    frame = est.to_pandas()
    _check(frame, {**BASE, "true_count": "float64", "error": "float64", "covered": "bool"}, est.to_dicts())
    assert frame.attrs == {"protocol": "grr", "n": 1000, "confidence": 0.9, "privacy": {"epsilon": 1.0, "delta": 0.0},
                           "notes": []}
    assert frame["item"].tolist() == ["a", "b", "c"]


def test_binary_rr_estimates():
    est = RRAggregate.simulate(BinaryRRParams.from_epsilon(1.0), [700, 300], rng=2).estimate()
    _check(est.to_pandas(), BASE, est.to_dicts())


# -- sketches --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("params", [CmsParams(4.0, 16, 256), HcmsParams(4.0, 16, 256)])
def test_sketch_estimates_and_heavy_hitters(params):
    agg = SketchAggregate.simulate(params, {"apple": 6000, "pear": 3000, "fig": 10}, rng=3)
    est = agg.estimate(["apple", "pear", "fig", "kiwi"])
    frame = est.to_pandas()
    _check(frame, SKETCH, est.to_dicts())
    assert frame.attrs["protocol"] == params.protocol and frame.attrs["notes"] == list(est.notes)
    hh = agg.heavy_hitters(["apple", "pear", "fig", "kiwi"])
    _check(hh.to_pandas(), SKETCH, hh.to_dicts())


def test_empty_estimates_keep_their_dtypes():
    frame = SketchAggregate(CmsParams(1.0, 4, 64)).estimate([]).to_pandas()
    _check(frame, SKETCH, [])


# -- RAPPOR ----------------------------------------------------------------------------------------------
def test_rappor_estimates_with_duplicates_and_summary():
    params = RapporParams(4, 1, 1, 0.25, 0.75, 0.5)
    groups: dict[Any, list[str]] = {}
    for i in range(50):
        groups.setdefault(bloom_filter(params, f"d{i}", 0), []).append(f"d{i}")
    twins = next(g for g in groups.values() if len(g) >= 2)[:2]
    est = decode(RapporAggregate.simulate(params, {twins[0]: 5000}, rng=1),
                 CandidateMap.from_candidates(params, twins + ["other"]))
    frame = est.to_pandas()
    _check(frame, RAPPOR, est.to_dicts())
    assert frame["duplicate_of"].isna().tolist() == [True, False, True] and frame["duplicate_of"][1] == twins[0]
    assert math.isnan(frame["count"][1])  # the twin's count is on its first member
    assert frame.attrs == est.metadata() and frame.attrs["summary"]["detected"] == est.summary["detected"]
    assert set(frame.attrs) == {"protocol", "n", "confidence", "privacy", "notes", "summary"}
    assert json.loads(est.to_json())["summary"].keys() == est.summary.keys()
    sorted_frame = est.sorted().to_pandas()
    assert sorted_frame.dtypes.equals(frame.dtypes)


# -- SFP -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def discovery():
    params = SfpParams(4.0, 6.0, length=6, hash_bits=4)
    return SfpAggregate.simulate(params, {"abcdef": 20000, "ghij": 10000}, rng=3).discover(top=3)


@pytest.mark.parametrize("part", ["words", "candidates"])
def test_sfp_words_and_candidates(discovery, part):
    frame = discovery.to_pandas(part)
    _check(frame, SKETCH, discovery.to_dicts(part))
    assert discovery.to_dicts(part) == getattr(discovery, part).to_dicts()
    assert frame.attrs["protocol"] == "sfp" and frame.attrs["stats"] == discovery.stats


def test_sfp_fragments(discovery):
    frame = discovery.to_pandas("fragments")
    rows = discovery.to_dicts("fragments")
    _check(frame, {"position": "int64", "hash": "int64", "fragment": "string", "count": "float64",
                   "std_error": "float64"}, rows)
    assert len(rows) == sum(len(f["count"]) for f in discovery.fragments)
    assert frame["fragment"][frame["position"] == 0].tolist() == discovery.fragments[0]["fragment"]
    with pytest.raises(ValueError, match="part must be 'words', 'candidates' or 'fragments', got 'word'"):
        discovery.to_pandas("word")


# -- the column typing itself ----------------------------------------------------------------------------
def test_object_columns_with_missing_values_become_nullable():
    frame = to_frame({"s": np.array(["a", None], dtype=object), "b": np.array([True, None], dtype=object),
                      "i": np.array([np.int64(3), None], dtype=object), "f": [1.5, None], "e": [None, None],
                      "u": np.array([1, 2], np.uint8)}, {"k": 1})
    assert {k: str(v) for k, v in frame.dtypes.items()} == {"s": "string", "b": "boolean", "i": "Int64",
                                                            "f": "float64", "e": "string", "u": "int64"}
    assert frame["i"][0] == 3 and frame["i"].isna().tolist() == [False, True] and frame.attrs == {"k": 1}
    with pytest.raises(ValueError, match="one-dimensional"):
        to_frame({"x": np.zeros((2, 2))})


# -- pandas stays optional -------------------------------------------------------------------------------
def test_missing_pandas_is_a_clear_import_error():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "pandas":
                    raise ImportError(f"{name} is blocked")
                return None
        sys.meta_path.insert(0, Block())
        from ldp.decoders.randomized_response import GRRAggregate
        from ldp.encoders.randomized_response import GRRParams
        est = GRRAggregate.simulate(GRRParams(1.0, 3), [5, 3, 2], rng=1).estimate()
        assert est.to_dicts() and "pandas" not in sys.modules
        try:
            est.to_pandas()
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "to_pandas() needs pandas: pip install 'ldp-telemetry[pandas]' (or pip install pandas)"
