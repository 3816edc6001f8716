"""Server bugs found while typing the server package (issue 17 item 2)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

pytest.importorskip("numpy")

from ldp.jobs import JobError, Section  # noqa: E402
from ldp.jobs.manifest import Manifest  # noqa: E402
from ldp.reports import Report  # noqa: E402

FP = "0123456789abcdef"


def test_mixed_bits_and_int_in_one_field_is_a_value_error() -> None:
    """It was a bare ``TypeError: object of type 'int' has no len()``."""
    pytest.importorskip("pyarrow")
    from ldp.jobs import write_parquet

    reports = [Report("rappor", FP, {"bits": "0101"}), Report("rappor", FP, {"bits": 5})]
    with pytest.raises(ValueError, match="'bits' bit strings must all have 4 bits"):
        write_parquet(io.BytesIO(), [Section(FP, "m", 0, reports)])
    same_size = [Report("rappor", FP, {"bits": "0101"}), Report("rappor", FP, {"bits": "1100"})]
    assert write_parquet(io.BytesIO(), [Section(FP, "m", 0, same_size)]) == 2


def test_a_refused_folder_is_unlocked_at_once(tmp_path: Path) -> None:
    """A folder refused for its settings kept its lock (and an open file) until the half-made
    manifest was collected, which the traceback held off."""
    first = Manifest(tmp_path, [FP], by_window=False)
    first.save()
    first.close()
    with pytest.raises(JobError, match="by_window") as refused:
        Manifest(tmp_path, [FP], by_window=True)
    again = Manifest(tmp_path, [FP], by_window=False)  # not "another job is running"
    again.close()
    assert refused.value is not None
