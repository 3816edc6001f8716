"""ldp.compare: local vs central DP (seed 004's counting experiment, every protocol, regression).

Every tolerance is Z = 4 standard errors of the statistic it bounds (two-sided p ≈ 6e-5 per check),
with the standard error derived in the test's docstring; the fixed seeds make the suite
deterministic. Each statistical test also shows it can fail: the same check rejects a mutated
mechanism or formula.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math

import numpy as np
import pytest
from scipy import stats
from support import ROOT
from support.scripts import load_script, read_csv

from ldp.cli.command import main
from ldp.compare import (
    RegressionSetup,
    add_compare_arguments,
    compare_command,
    local_noise_sd,
    local_reports,
    local_sensitivity,
    multiplier_rows,
    protocol_rows,
    regression_rows,
    render,
    seed004_errors,
    seed004_rows,
    seed004_slopes,
)
from ldp.compare.regression import aggregate_noise, first_order_mse, sum_reports, user_statistics
from ldp.compare.report import COLUMNS

Z = 4.0
SIZES = 5 * 2 ** np.arange(10)  # n0 = 5, 10, 20, …, 2560: subsamples of seed 004's 3,000 people
TRIALS = 400
HAS_MPL = importlib.util.find_spec("matplotlib") is not None


# -- seed 004 ------------------------------------------------------------------------------------------
def seed004_failures(errors: list[dict], trials: int) -> list[str]:
    """The qualitative finding as checks, empty when it holds.

    Slopes. At each n0 the statistic is ``y = log RMSE = ½·log(mean of T squared errors)``. The mean
    of T i.i.d. e² has relative variance ``(κ−1)/T`` (κ = E e⁴/(E e²)², the kurtosis), so by the delta
    method ``Var y ≈ (κ−1)/(4T)``. The least-squares slope of y on log n0 over K points then has
    ``SE = sqrt(Var y / Σ(log n0 − mean)²)``; with κ ≤ 6 (Laplace: exactly 6; RR's error is a sum of
    centred Bernoulli(1/4 or 3/4) with fourth cumulant p(1−p)(1−6p(1−p)) < 0, so κ < 3), T = 400 and
    the 10 doubling sizes (Σ = 39.6), SE ≤ 0.0089 (``seed004_slopes``' ``slope_se``). Theory: RR count
    +1/2 and fraction −1/2 (Var ∝ n0 exactly at a fixed 20%); Laplace count 0, fraction −1.

    Levels. ``mean over the K sizes of MSE/Var_theory`` has SD ``sqrt((κ−1)/(T·K))``: 0.035 for
    Laplace (κ = 6) and 0.022 for RR (κ ≤ 3)."""
    fails = []
    for r in seed004_slopes(errors):
        if abs(r["slope"] - r["theory_slope"]) > Z * r["slope_se"]:
            fails.append(f"{r['mechanism']} {r['scale']} slope {r['slope']:.3f}, theory {r['theory_slope']}")
    for mech, kappa in (("rr", 3.0), ("laplace", 6.0)):
        rs = [r for r in errors if r["mechanism"] == mech]
        ratio = float(np.mean([(r["rmse_count"] / r["theory_sd_count"]) ** 2 for r in rs]))
        if abs(ratio - 1) > Z * math.sqrt((kappa - 1) / (trials * len(rs))):
            fails.append(f"{mech} MSE/theory {ratio:.3f}")
    return fails


@pytest.fixture(scope="module")
def seed004_raw():
    return seed004_rows(sizes=SIZES, trials=TRIALS, rng=2004)


def test_seed004_rr_error_shrinks_with_n_and_the_laplace_count_error_does_not(seed004_raw):
    errors = seed004_errors(seed004_raw)
    assert seed004_failures(errors, TRIALS) == []
    slopes = {(r["mechanism"], r["scale"]): r for r in seed004_slopes(errors)}
    assert all(r["slope_se"] < 0.009 for r in slopes.values())  # the resolution claimed above
    # RR's fraction error shrinks like 1/√n, so slower than Laplace's 1/n: they differ by ~1/2
    assert slopes["rr", "fraction"]["slope"] - slopes["laplace", "fraction"]["slope"] > 0.4
    rr = {r["n"]: r for r in errors if r["mechanism"] == "rr"}
    lap = {r["n"]: r for r in errors if r["mechanism"] == "laplace"}
    assert rr[2560]["rmse_fraction"] < rr[5]["rmse_fraction"] / 10  # RR gets useful only with many people
    assert all(lap[n]["rmse_count"] < rr[n]["rmse_count"] for n in rr if n >= 10)  # central wins from n0 = 10


def _mutated(raw: list[dict], mech: str, factor) -> list[dict]:
    return [dict(r, error_count=r["error_count"] * factor(r["n"])) if r["mechanism"] == mech else r for r in raw]


@pytest.mark.parametrize("mutation", ["laplace_scaled_by_n", "laplace_scale_doubled", "rr_not_shrinking",
                                      "rr_variance_halved"])
def test_the_seed004_checks_fail_on_mutated_mechanisms(seed004_raw, mutation):
    """Laplace noise scaled by n0 (count slope 1), Lap(2/ε) (MSE ×4), an RR error that does not
    shrink (fraction slope 0) and RR with half the decoder's variance (MSE ×0.5) all fail."""
    mech, factor = {"laplace_scaled_by_n": ("laplace", lambda n: n), "laplace_scale_doubled": ("laplace", lambda n: 2),
                    "rr_not_shrinking": ("rr", lambda n: math.sqrt(n)),
                    "rr_variance_halved": ("rr", lambda n: math.sqrt(0.5))}[mutation]
    assert seed004_failures(seed004_errors(_mutated(seed004_raw, mech, factor)), TRIALS)


def test_seed004_series_is_the_thesis_setup():
    rows = seed004_rows(trials=1, rng=1)
    assert len(rows) == 2 * 600 and {r["mechanism"] for r in rows} == {"rr", "laplace"}
    assert all(r["true_count"] * 5 == r["n"] for r in rows)  # exactly 20% smokers in every subsample
    assert rows[0]["epsilon"] == pytest.approx(math.log(3))
    lap = [r for r in rows if r["mechanism"] == "laplace"]
    assert all(r["theory_sd_count"] == pytest.approx(math.sqrt(2) / math.log(3)) for r in lap)
    with pytest.raises(ValueError, match="whole number"):
        seed004_rows(sizes=[7])


# -- every protocol -------------------------------------------------------------------------------------
def test_protocol_standard_errors_match_the_exact_variances():
    """Each row's ``mse_ratio = mean_t mean_i err²_ti/Var_i`` has mean 1 when ``Var_i`` is the exact
    variance. Its standard error: the T trials are independent, so ``SE = sd_t(s_t)/√T`` (CLT) for the
    per-trial means ``s_t``. For one item (binary RR, a central single count) ``Var(z²) = κ − 1``
    exactly, so ``SE = sqrt((κ−1)/T)``: κ = 3 for RR (near normal at n = 10⁴) and the Gaussian, 6 for
    Laplace. For 16 items the trial means average nearly independent z², and their sample SD is
    reliable; as a sanity check it must stay below the one-item bound ``sqrt(5/T)``. The checks are
    sharp enough to reject a decoder's variance formula off by 30%, and a central sensitivity off by
    √2 (variance ×2: replace-one vs add/remove for the Gaussian; ×4 for Laplace) — asserted too."""
    multi = protocol_rows(ns=[10_000], epsilons=[1.0, 4.0], trials=100, rng=11,
                          protocols=("grr", "rappor", "cms", "hcms"))
    single = protocol_rows(ns=[10_000], epsilons=[1.0, 4.0], trials=2000, rng=12, protocols=("rr",))
    assert {r["protocol"] for r in multi} == {"grr", "rappor", "cms", "hcms", "laplace", "gaussian"}
    for r in multi + single:
        label = f"{r['protocol']} d={r['domain']} ε={r['epsilon']}"
        if r["items"] == 1:
            se = math.sqrt(((6.0 if r["protocol"] == "laplace" else 3.0) - 1) / r["trials"])
        else:
            se = r["mse_ratio_se"]
            assert se < math.sqrt(5 / r["trials"]), label
        assert abs(r["mse_ratio"] - 1) < Z * se, (label, r["mse_ratio"], se)
        wrong = 1.3 if r["kind"] == "local" else 2.0  # a 30% error in a decoder's formula, Δ off by √2
        assert abs(r["mse_ratio"] / wrong - 1) > Z * se, label  # ... would fail
        assert r["rmse_fraction"] == pytest.approx(r["rmse_count"] / r["n"])
    # central DP beats every local protocol at n = 10⁴, by more than 10x at ε = 1
    for eps, factor in ((1.0, 10), (4.0, 1)):
        worst_central = max(r["rmse_count"] for r in multi + single if r["kind"] == "central" and r["epsilon"] == eps)
        assert all(r["rmse_count"] > factor * worst_central for r in multi + single
                   if r["kind"] == "local" and r["epsilon"] == eps)


def test_central_calibration_states_its_neighbouring_relation():
    from ldp.compare import central_noise_sd

    eps = 0.5
    assert central_noise_sd("laplace", eps, binary=True) == pytest.approx(math.sqrt(2) / eps)
    assert central_noise_sd("laplace", eps, binary=False) == pytest.approx(2 * math.sqrt(2) / eps)
    assert central_noise_sd("laplace", eps, binary=False, relation="add-remove") == pytest.approx(math.sqrt(2) / eps)
    g1, g2 = (central_noise_sd("gaussian", eps, binary=b, delta=1e-6) for b in (True, False))
    assert g2 == pytest.approx(math.sqrt(2) * g1, rel=1e-9)  # σ is linear in the L2 sensitivity
    with pytest.raises(ValueError, match="relation"):
        central_noise_sd("laplace", 1.0, binary=True, relation="swap")


# -- regression -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("bx, by", [(1.0, 1.0), (1.0, 3.0), (2.0, 0.5)])
def test_local_sensitivity_bounds_every_pair_and_is_nearly_attained(bx, by):
    """Random pairs on the bounds' boundary (and x' = ±x, x' ⟂ x) never exceed Δ; the pairs
    (B·e₁, b), (B·e₂, −b) and (x, b), (−x, b) reach sqrt(2B⁴ + 2B²b²) and 2Bb, the larger of
    which is at least 80% of Δ here."""
    delta = local_sensitivity(bx, by)
    gen = np.random.default_rng(5)
    d, m = 4, 20_000
    g = gen.standard_normal((2, m, d))
    x = bx * g / np.linalg.norm(g, axis=2, keepdims=True)
    y = by * gen.choice([-1.0, 1.0], (2, m))
    x2 = np.concatenate([x[1], -x[0], np.roll(np.eye(d), 1, axis=1)[np.arange(m) % d] * bx])
    x1 = np.concatenate([x[0], x[0], np.eye(d)[np.arange(m) % d] * bx])
    y1, y2 = np.concatenate([y[0], y[0], y[0]]), np.concatenate([y[1], y[1], -y[0]])
    dist = np.linalg.norm(user_statistics(x1, y1) - user_statistics(x2, y2), axis=1)
    assert dist.max() <= delta * (1 + 1e-12)
    attained = max(math.sqrt(2 * bx**4 + 2 * bx**2 * by**2), 2 * bx * by)
    assert dist.max() >= attained * (1 - 1e-12) and attained >= 0.8 * delta
    assert delta < 2 * math.sqrt(bx**4 + bx**2 * by**2)  # sharper than the triangle inequality


def test_aggregate_shortcut_equals_the_per_user_path():
    """Sum of n per-user N(0, σ²) noise vectors vs one N(0, nσ²) draw. Per coordinate, the sample
    variance over R repetitions / nσ² is ≈ χ²_R/R (relative SD sqrt(2/R)); pooled over the p = 9
    independent coordinates (6 distinct XᵀX entries, 3 of Xᵀy), sqrt(2/(R·p)) = 0.0086 at R = 3000.
    A two-sample KS test compares the pooled standardized draws of both paths."""
    gen = np.random.default_rng(8)
    n, d, reps = 30, 3, 3000
    X = gen.uniform(-0.5, 0.5, (n, d))
    y = gen.uniform(-1, 1, n)
    sigma = local_noise_sd(1.0, 1e-6, 1.0, 1.0)
    true_xx, true_xy = X.T @ X, X.T @ y
    iu = np.triu_indices(d)
    per_user, shortcut = [], []
    for _ in range(reps):
        xx, xy = sum_reports(local_reports(X, y, sigma, gen), d)
        assert np.array_equal(xx, xx.T)
        per_user.append(np.concatenate([(xx - true_xx)[iu], xy - true_xy]))
        exx, exy = aggregate_noise(d, math.sqrt(n) * sigma, gen)
        shortcut.append(np.concatenate([exx[iu], exy]))
    tol = Z * math.sqrt(2 / (reps * 9))
    for draws in (np.array(per_user), np.array(shortcut)):
        assert abs((draws**2).mean() / (n * sigma**2) - 1) < tol
    z1 = (np.array(per_user) / (math.sqrt(n) * sigma)).ravel()
    z2 = (np.array(shortcut) / (math.sqrt(n) * sigma)).ravel()
    assert stats.ks_2samp(z1, z2).pvalue > 1e-4
    # a mutated shortcut (σ instead of √n·σ) fails the same check
    assert abs((np.array(shortcut) ** 2).mean() / n / (n * sigma**2) - 1) > tol


@pytest.fixture(scope="module")
def regression():
    setup = RegressionSetup()
    rows = regression_rows(ns=[10**3, 10**4, 10**5, 3 * 10**5, 10**6], trials=3, noise_draws=40, rng=17, setup=setup)
    return setup, rows, multiplier_rows(rows, setup)


def test_regression_local_needs_far_more_users(regression):
    """Ordering: at every n, local DP's error is at least twice every central method's.

    Central methods vs their first-order theory where privacy noise dominates (n = 10⁴, 10⁵). The
    simulated MSE averages R = T·draws = 120 releases over T = 3 data sets. Its privacy part is
    ``‖(nΣ)⁻¹w‖²`` with w Gaussian of covariance ∝ M (module docstring): M has four equal eigenvalues
    and a larger one (θ's entries have equal size), so it is a weighted χ² with at least d_eff = 4
    degrees of freedom and its mean over R draws has relative SD ≤ sqrt(2/(4R)). The statistical
    part, a share w = (S/n)/MSE of the total, is an OLS error ~ χ²_d scaled, fixed per data set:
    relative SD sqrt(2/(d·T)). So SD(ratio) ≈ sqrt((1−w)²·2/(4R) + w²·2/(dT)).

    Local DP at n = 10⁶ follows its first-order theory ``(S + A_L)/n``: the noise is still 1/4 of
    λ_min(XᵀX) there, so second-order terms add some 10%, plus the ≤ 0.065 relative SD of a
    120-release mean (d_eff ≥ 4): ±0.5 bounds both. The multiplier at n_C = 1000 against SSP is
    ``n_L/n_C`` with n_L ∝ 1/MSE_SSP(10³) read off the local curve (slope ≈ −1) near 4·10⁵: its log
    has SD ≈ sqrt(0.065² + 0.065²) = 0.092, so 4 SD is a factor 1.45; the first-order theory's
    ~10% bias near 4·10⁵ and the log-log interpolation between 3·10⁵ and 10⁶ widen that to the
    factor 2 used (over 16 seeds the ratio stayed within 0.90–1.19)."""
    setup, rows, mult = regression
    by = {(r["method"], r["n"]): r for r in rows}
    releases = 3 * 40
    for n in (10**3, 10**4, 10**5, 3 * 10**5, 10**6):
        assert all(by["local", n]["mse"] > 2 * by[c, n]["mse"] for c in ("central_gaussian", "ssp", "adassp")), n
    for c in ("central_gaussian", "ssp", "adassp"):
        for n in (10**4, 10**5):
            w = float(first_order_mse(setup, n, 0.0, 0.0)) / by[c, n]["theory_mse"]
            sd = math.sqrt((1 - w) ** 2 * 2 / (4 * releases) + w**2 * 2 / (setup.d * 3))
            assert abs(by[c, n]["mse"] / by[c, n]["theory_mse"] - 1) < Z * sd, (c, n)
    assert by["local", 10**6]["mse"] / by["local", 10**6]["theory_mse"] == pytest.approx(1, abs=0.5)
    ssp = [r for r in mult if r["central"] == "ssp" and r["n_central"] == 1000][0]
    assert 0.5 < ssp["multiplier"] / ssp["theory_multiplier"] < 2
    assert 100 < ssp["multiplier"] < 2000  # hundreds of times more users at n_C = 1000
    # theory: n_L ≈ (A_L/A_C)·n_C² while central noise dominates, so the multiplier grows ~ n_C
    th = {r["n_central"]: r["theory_multiplier"] for r in mult if r["central"] == "central_gaussian"}
    assert th[10**4] / th[10**3] == pytest.approx(10, rel=0.15)
    assert first_order_mse(setup, 10**6, 0.0, 0.0) == pytest.approx(by["ols", 10**6]["theory_mse"])


def test_regression_multiplier_check_fails_for_a_mutated_local_noise(regression):
    """If the local noise on the sums were σ instead of √n·σ (no noise per user), local DP would be
    as accurate as central: the multiplier check above (> 100) would fail."""
    setup, rows, _ = regression
    fake = [dict(r, mse=next(c["mse"] for c in rows if c["method"] == "central_gaussian" and c["n"] == r["n"]))
            if r["method"] == "local" else r for r in rows]
    ssp = [r for r in multiplier_rows(fake, setup) if r["central"] == "ssp" and r["n_central"] == 1000][0]
    assert not ssp["multiplier"] > 100


# -- the run, the command and the script -----------------------------------------------------------
@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    script = load_script("local_vs_central")
    argv = ["--quick", "--json", "--out", str(out), "--plots" if HAS_MPL else "--no-plots"]
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert script.main(argv) == 0
    return out, json.loads(buf.getvalue())


def test_quick_run_writes_the_tables_and_figures(quick_run):
    out, result = quick_run
    for name, columns in COLUMNS.items():
        rows = read_csv(out / f"{name}.csv")
        assert rows and list(rows[0]) == list(columns), name
    assert len(read_csv(out / "seed004_series.csv")) == 2 * 600
    assert {r["protocol"] for r in read_csv(out / "counting.csv")} == {"rr", "grr", "rappor", "cms", "hcms",
                                                                        "laplace", "gaussian"}
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == (["compare-counting-epsilon.png", "compare-counting-n.png", "compare-regression.png",
                     "compare-seed004.png"] if HAS_MPL else [])
    assert len(result["files"]) == len(COLUMNS) + len(pngs)


def test_quick_json_and_summary(quick_run):
    out, result = quick_run
    s = result["summary"]
    assert set(s["seed004_slopes"]) == {"rr_count", "rr_fraction", "laplace_count", "laplace_fraction"}
    assert set(s["counting"]) == {"rr", "grr", "rappor", "cms", "hcms"}
    assert all(c["n_local_for_central_1000"] > 1e5 for c in s["counting"].values())
    assert set(s["regression_multiplier_at_1000"]) == {"central_gaussian", "ssp", "adassp"}
    assert result["settings"]["quick"] is True and "seed004_series" not in result["tables"]
    assert set(result["tables"]) == {"seed004_slopes", "counting", "regression", "multiplier"}
    errors = [{**r, **{k: float(r[k]) for k in ("rmse_fraction", "theory_sd_fraction")}, "n": int(r["n"])}
              for r in read_csv(out / "seed004_errors.csv")]
    text = render({**result, "tables": {**result["tables"], "seed004_errors": errors}})
    for heading in ("Counting smokers, local vs central", "SE of a fraction", "Linear regression",
                    "Users local DP needs"):
        assert heading in text


def test_compare_command_refuses_plots_without_a_folder(capsys):
    ap = argparse.ArgumentParser()
    add_compare_arguments(ap)
    with pytest.raises(ValueError, match="--out"):
        compare_command(ap.parse_args(["--quick", "--plots"]))
    assert main(["compare", "--quick", "--plots"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "ldp compare: error: --plots needs --out DIR"
    assert ap.parse_args([]).plots is None and ap.parse_args(["--no-plots"]).plots is False


def test_only_the_plots_module_imports_matplotlib():
    """The core runs without matplotlib: no module but plots.py imports it, and report.py imports
    plots.py only inside run_compare (when plots are asked for)."""
    import ast

    pkg = ROOT / "ldp" / "compare"
    for path in pkg.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
        names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        if path.name != "plots.py":
            assert not any(n.split(".")[0] == "matplotlib" for n in names), path.name
        top = [node.module for node in tree.body if isinstance(node, ast.ImportFrom)]
        assert "ldp.compare.plots" not in top, path.name


def test_local_protocols_are_the_documented_configurations():
    """The setup's local protocols, recalibrated per ε through the protocols' hooks (``with_epsilon``,
    ``with_hash_seed``), are the configurations the module docstring and CountingSetup describe."""
    from ldp.compare.counting import LOCAL_PROTOCOLS, CountingSetup, local_params
    from ldp.encoders.cms import CmsParams
    from ldp.encoders.hcms import HcmsParams
    from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
    from ldp.encoders.rappor import RapporParams

    assert LOCAL_PROTOCOLS == ("rr", "grr", "rappor", "cms", "hcms")
    setup = CountingSetup(d=5, rappor_hashes=3, rappor_cohorts=4, sketch_hashes=8, sketch_width=64)
    assert [lp.binary for lp in setup.local()] == [True, False, False, False, False]
    for eps in (0.5, 2.0):
        assert local_params("rr", eps, setup, 3) == BinaryRRParams.from_epsilon(eps)
        assert local_params("grr", eps, setup, 3) == GRRParams(eps, 5)
        assert local_params("rappor", eps, setup, 3) == RapporParams(32, 3, 4, 0.0, 1.0,
                                                                      2 / (1 + math.exp(eps / 6)))
        assert local_params("cms", eps, setup, 3) == CmsParams(eps, 8, 64, hash_seed=3 * 7919)
        assert local_params("hcms", eps, setup, 0) == HcmsParams(eps, 8, 64)
    with pytest.raises(ValueError, match="protocol must be one of"):
        local_params("oue", 1.0, setup)
