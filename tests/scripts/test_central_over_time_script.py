"""simulations/central_over_time.py: the docs' table of deployments, one cell computed as the script does."""

from __future__ import annotations

from support.scripts import load_script


def test_a_cell_orders_its_figures() -> None:
    script = load_script("central_over_time")
    row = script.cell(2.0, 10**5, 30, 1e-8)
    assert set(row) >= {"eps0", "n", "one_window", "one_window_rr", "over_windows", "over_windows_rr", "naive", "local"}
    # k-RR's structure (binary RR) is tighter; W windows cost more than one and much less than their sum
    assert row["one_window_rr"] < row["one_window"] < row["over_windows"] < row["naive"] < row["local"] == 60.0
    assert row["over_windows_rr"] < row["over_windows"] < row["naive"] / 3
