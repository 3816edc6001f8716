"""The floor under an exact HCMS fold (``simulations/fold_floor.c``, run by ``bench_fold.scatter_floor`` for the
``fold_bandwidth`` section): it builds with the system's C compiler, times its four loops on the batch's own columns
and states each scatter's rate as a share of the read's; it refuses a report out of the table, so it never times
writes outside it, and fails when the two-pass scatter adds other sums than the one-pass one. No timing is
asserted."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from support import ROOT
from support.scripts import load_script

from ldp.encoders.hcms import HcmsEncoder, HcmsParams

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")


def _batch(n: int = 4000):
    params = HcmsParams(4.0, 16, 64)
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(50)]
    return params, HcmsEncoder(params, rng=rng, simulation=True).encode_batch(rng.integers(0, 50, n), rng,
                                                                               candidates=words)


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    """The program, built once for the module."""
    path = tmp_path_factory.mktemp("floor") / "fold_floor"
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([cc, "-O2", "-o", str(path), str(ROOT / "simulations" / "fold_floor.c")], check=True)
    return path


def test_the_floor_times_its_loops_on_the_batch_and_states_their_share_of_the_read(exe):
    params, batch = _batch()
    floor = load_script("bench_fold").scatter_floor
    out = floor(batch, params, 1, exe=exe)
    assert out["n"] == 4000 and out["read_s"] == out["c_read_s"]
    assert all(out[k] > 0 for k in ("read_s", "scatter32_s", "scatter16_s", "part16_s"))
    assert out["of_read"] == pytest.approx({k: out["read_s"] / out[f"{k}_s"]
                                            for k in ("scatter32", "scatter16", "part16")})
    judged = floor(batch, params, 1, read_s=1e-3, exe=exe)  # against the read the fold is judged by
    assert judged["read_s"] == 1e-3 and judged["of_read"]["scatter16"] == pytest.approx(1e-3 / judged["scatter16_s"])


def test_a_report_out_of_the_table_is_refused(exe, tmp_path):
    n, k, m = 3, 4, 8
    for cells in ([1, 2, 8], [1, 2, 3]):  # a cell of 8 is outside m = 8; the second file is well formed
        data = tmp_path / "columns.bin"
        data.write_bytes(np.uint64(n).tobytes() + np.array([k, m], np.uint32).tobytes() + bytes([0, 3, 1])
                         + np.array(cells, np.uint16).tobytes() + bytes([0, 1, 1]))
        run = subprocess.run([str(exe), str(data), "1"], capture_output=True, text=True)
        if cells[-1] >= m:
            assert run.returncode == 2 and "report 2 out of range" in run.stderr
        else:
            assert run.returncode == 0 and '"n": 3' in run.stdout


def test_the_two_pass_scatter_is_left_out_when_its_keys_do_not_fit_16_bits(exe):
    params = HcmsParams(4.0, 16, 4096)  # 16 rows of 4096 cells: keys up to 2^17
    rng = np.random.default_rng(3)
    batch = HcmsEncoder(params, rng=rng, simulation=True).encode_batch(rng.integers(0, 9, 500), rng,
                                                                        candidates=[f"w{i}" for i in range(9)])
    out = load_script("bench_fold").scatter_floor(batch, params, 1, exe=exe)
    assert out["part16_s"] is None and set(out["of_read"]) == {"scatter32", "scatter16"}
