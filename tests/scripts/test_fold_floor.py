"""The floors of the ``fold_bandwidth`` section, C programs the benchmark builds with the system's compiler and runs on
the batch's own columns: under an exact HCMS fold (``simulations/fold_floor.c``, ``bench_fold.scatter_floor``), and
RAPPOR's fold and its statistics, each alone and together (``simulations/rappor_floor.c``, ``bench_fold.rappor_floor``).
Each states its loops' rates as shares of the read's; each refuses a report outside its table, so it never times
writes outside it, and fails when a loop adds other sums than its reference. No timing is asserted."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from support import ROOT
from support.scripts import load_script

from ldp.encoders.hcms import HcmsEncoder, HcmsParams
from ldp.encoders.rappor import RapporEncoder, RapporParams

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


@pytest.fixture(scope="module", params=["-march=native", "-mno-avx2"])
def rappor_exe(request, tmp_path_factory):
    """The RAPPOR program, built as the benchmark builds it (its vector statistics where the CPU has them), and
    without AVX2 (its portable statistics; the fold still runs where the CPU has AVX-512BW, found at run time)."""
    path = tmp_path_factory.mktemp("rfloor") / "rappor_floor"
    cc = shutil.which("cc") or shutil.which("gcc")
    if request.param == "-mno-avx2" and subprocess.run(["uname", "-m"], capture_output=True, text=True).stdout.strip() \
            != "x86_64":
        pytest.skip("x86 only")
    subprocess.run([cc, "-O2", request.param, "-o", str(path), str(ROOT / "simulations" / "rappor_floor.c")],
                   check=True)
    return path


def _rappor(k: int, m: int, n: int):
    params = RapporParams(k, 2, m, 0.25, 0.75, 0.5)
    rng = np.random.default_rng(k + m)
    urls = [f"u{i}" for i in range(40)]
    return params, RapporEncoder(params, secret=b"s", cohort=0).encode_batch(rng.integers(0, 40, n), rng,
                                                                             candidates=urls)


@pytest.mark.parametrize(("k", "m", "n"), [(128, 16, 4099), (64, 3, 2000), (100, 256, 70), (128, 2, 70_001)])
def test_the_rappor_floor_checks_each_loop_against_its_reference_and_states_its_share(rappor_exe, k, m, n):
    params, batch = _rappor(k, m, n)
    out = load_script("bench_fold").rappor_floor(batch, params, 1, exe=rappor_exe)  # exits 2 when a loop differs
    assert out["n"] == n and out["read_s"] == out["c_read_s"] > 0 and out["stats_s"] > 0
    assert (out["fold_s"] is None) == (out["both_s"] is None)  # both need AVX-512BW
    assert out["of_read"] == pytest.approx({loop: out["read_s"] / out[f"{loop}_s"]
                                            for loop in ("fold", "stats", "both") if out[f"{loop}_s"]})


def test_the_rappor_floor_is_not_run_past_16_bytes_a_row_or_256_cohorts():
    floor = load_script("bench_fold").rappor_floor
    for k, m in ((256, 4), (64, 300)):
        params, batch = _rappor(k, m, 10)
        assert floor(batch, params, 1, exe="/nonexistent") is None  # refused before the program is run


def test_the_rappor_floor_refuses_a_report_outside_its_table(rappor_exe, tmp_path):
    def run(n, k, m, cohorts, rows):
        data = tmp_path / "input.bin"
        data.write_bytes(np.uint64(n).tobytes() + np.array([k, m], np.uint32).tobytes() + bytes(cohorts)
                         + np.asarray(rows, np.uint8).tobytes() + bytes((n + 7) // 8) + bytes(32 * m))
        return subprocess.run([str(rappor_exe), str(data), "1"], capture_output=True, text=True)

    good = np.zeros((2, 16), np.uint8)
    good[:, 0] = 0xFF
    assert run(2, 8, 2, [0, 1], good).returncode == 0
    assert "report 1 out of range" in run(2, 8, 2, [0, 2], good).stderr  # cohort 2 of 2
    past = good.copy()
    past[0, 1] = 1  # bit 8 of a k = 8 row
    assert "report 0 out of range" in run(2, 8, 2, [0, 1], past).stderr
    assert "cannot read" in run(2, 129, 2, [0, 1], good).stderr  # k > 128
    assert "short file" in run(3, 8, 2, [0, 1], good).stderr
