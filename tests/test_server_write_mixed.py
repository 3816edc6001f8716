"""write_parquet on a section whose reports mix a bit string and an integer in one field: a clear
ValueError (it was a bare ``TypeError: object of type 'int' has no len()``)."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("pyarrow")

from ldp.reports import Report  # noqa: E402
from ldp.server import Section, write_parquet  # noqa: E402

FP = "0123456789abcdef"


def test_mixed_bits_and_int_in_one_field_is_a_value_error() -> None:
    reports = [Report("rappor", FP, {"bits": "0101"}), Report("rappor", FP, {"bits": 5})]
    with pytest.raises(ValueError, match="'bits' bit strings must all have 4 bits"):
        write_parquet(io.BytesIO(), [Section(FP, "m", 0, reports)])


def test_bit_strings_of_one_size_are_written() -> None:
    reports = [Report("rappor", FP, {"bits": "0101"}), Report("rappor", FP, {"bits": "1100"})]
    assert write_parquet(io.BytesIO(), [Section(FP, "m", 0, reports)]) == 2
