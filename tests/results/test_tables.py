"""ldp.display.tables: the one table renderer, and the cosmetics of the tables built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp.decoders.randomized_response import RRAggregate
from ldp.decoders.results import Estimates, column_format
from ldp.display.tables import Column, format_p_value, format_value, key_values, render
from ldp.encoders.randomized_response import BinaryRRParams


def test_render_aligns_formats_and_rules() -> None:
    text = render([Column("name", align="left"), Column("x", ".2f")], [["a", 1.0], ["long", -0.30191]], title="T")
    assert text.split("\n") == ["T", "name      x", "----  -----", "a      1.00", "long  -0.30"]


def test_render_truncates_indents_and_takes_plain_headers() -> None:
    text = render(["k", "v"], [[i, i * i] for i in range(5)], max_rows=2, more="... {} more", indent="  ",
                  rule=False)
    assert text.split("\n") == ["  k  v", "  0  0", "  1  1", "  ... 3 more"]


def test_render_minimum_width_and_empty_table() -> None:
    assert render([Column("a", width=4)], []) == "   a\n----"
    assert render([Column("a", align="left", width=3), Column("b", width=3)], [["x", 1]], sep="", rule=False) \
        == "a    b\nx    1"


def test_render_rejects_ragged_rows_and_bad_columns() -> None:
    with pytest.raises(ValueError, match="one value per column"):
        render(["a", "b"], [[1]])
    with pytest.raises(ValueError, match="align must be one of"):
        Column("a", align="centre")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="minimum width"):
        Column("a", width=-1)


def test_cells_missing_booleans_numpy_and_callables() -> None:
    assert format_value(None) == "" and format_value(math.nan, ".1f", "-") == "-"
    assert format_value(np.float64(np.nan), ".1f") == ""
    assert format_value(np.bool_(True)) == "yes" and format_value(False) == "no"
    assert format_value(np.float64(99315.94), ".1f") == "99315.9" and format_value(np.int64(3), ".1f") == "3.0"
    assert format_value("text", ".1f") == "text"
    assert format_value(True, lambda v: "YES" if v else "NO") == "YES"


@pytest.mark.parametrize("p, text", [(0.5, "0.5000"), (1e-4, "0.0001"), (3.2e-7, "3.2e-07"), (1e-17, "<1e-16"),
                                     (0.0, "<1e-16")])
def test_p_values(p: float, text: str) -> None:
    assert format_p_value(p) == text == format_value(p, "p")


def test_key_values() -> None:
    assert key_values([("a", 1), ("long name", "x")]) == "a          1\nlong name  x"
    assert key_values([]) == ""


def test_estimates_table_one_format_per_column() -> None:
    est = Estimates("x", ["a", "b"], 100_000, np.array([0.00001, 99315.94]), np.array([0.5, 12.0]),
                    extra={"z": np.array([65.6, -0.30191]), "p_value": np.array([0.0, 0.3]),
                           "duplicate_of": np.array([None, "a"], dtype=object)})
    lines = est.table().split("\n")
    assert lines[1].split() == ["item", "count", "std_error", "ci_low", "ci_high", "fraction", "z", "p_value",
                                "duplicate_of"]
    assert lines[3].split() == ["a", "0.0", "0.5", "-1.0", "1.0", "0.0000", "65.60", "<1e-16"]  # no "None"
    assert lines[4].split() == ["b", "99315.9", "12.0", "99292.4", "99339.5", "0.9932", "-0.30", "0.3000", "a"]
    assert column_format("other", [0.5, 0.25]) == ".4f" and column_format("other", [2.5]) == ".1f"
    assert column_format("other", ["s"]) == ""


def test_rr_items_read_no_yes() -> None:
    params = BinaryRRParams.from_epsilon(1.0)
    est = RRAggregate.simulate(params, [700, 300], np.random.default_rng(0)).estimate()
    assert est.items == ["no", "yes"]
    assert [r.split()[0] for r in est.table().split("\n")[3:]] == ["no", "yes"]
