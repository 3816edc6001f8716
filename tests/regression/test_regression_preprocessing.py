"""ldp.regression.preprocessing: Kalaja's pre-processing as fitted scikit-learn transformers
(seeds-regression.md §3, §5 item 11, §6 pitfalls, §8)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sklearn

from ldp.regression.baselines import OLS, Ridge, TrivialPredictor
from ldp.regression.mechanisms import PrivacyLeakWarning
from ldp.regression.pipeline import KalajaPipeline, kalaja_pipeline, unstandardized_coefficients
from ldp.regression.preprocessing import (
    ClipSymmetric,
    ClipUpper,
    InterceptColumn,
    MaxNormMap,
    RowNormMap,
    Standardize,
    TargetScaler,
)
from ldp.regression.ssp import SSP, AdaSSP

WITH_STATS = {  # transformer -> the keys of public_statistics_
    Standardize: {"mean", "sd"},
    ClipUpper: {"mean", "sd", "upper"},
    ClipSymmetric: {"mean", "sd", "lower", "upper"},
    MaxNormMap: {"x_max"},
    TargetScaler: {"y_max"},
}


def _data(n: int = 300, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Skewed, non-negative raw features on different scales (like Kalaja's data) and a linear y."""
    rng = np.random.default_rng(seed)
    X = rng.lognormal(0.0, 0.7, size=(n, d)) * np.arange(1, d + 1) * 10
    y = 5.0 + X @ rng.normal(size=d) / 10 + rng.normal(0, 1, n)
    return X, y


# -- §5 item 11: Kalaja Eq 3.7 -------------------------------------------------------------------------------
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("center_y", [False, True])
@pytest.mark.parametrize("clip_c", [None, 1.3])
def test_unstandardized_coefficients_reproduce_the_mapped_path(intercept, center_y, clip_c):
    """Predictions from θ' on raw rows = standardise → max-norm → (intercept) → θ̂ → ·y_max (+ȳ)."""
    X, y = _data()
    Xtr, ytr, Xte = X[:200], y[:200], X[200:]
    steps = ([ClipUpper(clip_c, warn=False)] if clip_c else []) + [Standardize(warn=False), MaxNormMap(warn=False)]
    if intercept:
        steps.append(InterceptColumn())
    Z = Xtr
    for s in steps:
        Z = s.fit_transform(Z)
    ts = TargetScaler(center=center_y, warn=False).fit(ytr)
    model = AdaSSP(2.0, 1e-6, bound_X=1.0, bound_y=1.0, noise="kalaja", random_state=3,
                   noise_source="seeded").fit(Z, ts.transform(ytr))
    # the mapped path, applied to test rows with the training statistics (the clipper is train-only)
    Zte = Xte
    for s in steps[1 if clip_c else 0:]:
        Zte = s.transform(Zte)
    mapped = ts.inverse_transform(model.predict(Zte))
    # Eq 3.7
    theta0, theta = (steps[-1].split_coef(model.coef_) if intercept else (0.0, model.coef_))
    std, mx = steps[-3 if intercept else -2], steps[-2 if intercept else -1]
    b0, b = unstandardized_coefficients(theta, mean=std.mean_, sd=std.scale_, x_max=mx.x_max_,
                                        y_max=ts.y_max_[0], intercept=theta0, y_mean=ts.y_mean_[0])
    np.testing.assert_allclose(Xte @ b + b0, mapped, rtol=1e-10, atol=1e-9 * np.abs(mapped).max())
    # the pipeline does the same (same noise stream) and exposes θ' as coef_/intercept_
    pipe = kalaja_pipeline(AdaSSP(2.0, 1e-6, noise="kalaja", random_state=3, noise_source="seeded"), clip_c=clip_c,
                           intercept=intercept, center_y=center_y, warn=False).fit(Xtr, ytr)
    np.testing.assert_allclose(pipe.predict(Xte), mapped, rtol=1e-10, atol=1e-9 * np.abs(mapped).max())
    np.testing.assert_allclose(pipe.coef_, b, rtol=1e-10)
    assert pipe.intercept_ == pytest.approx(b0, rel=1e-10)


def test_unstandardized_coefficients_formula_and_errors():
    b0, b = unstandardized_coefficients([1.0, -2.0], mean=[10.0, 1.0], sd=[2.0, 0.5], x_max=4.0, y_max=3.0,
                                        intercept=0.5, y_mean=7.0)
    np.testing.assert_allclose(b, [3 * 1 / (4 * 2), 3 * -2 / (4 * 0.5)])
    assert b0 == pytest.approx(7 + 1.5 - (b[0] * 10 + b[1] * 1))
    with pytest.raises(ValueError, match="one length"):
        unstandardized_coefficients([1.0], mean=[1.0, 2.0], sd=[1.0], x_max=1, y_max=1)
    with pytest.raises(ValueError, match="x_max"):
        unstandardized_coefficients([1.0], mean=[1.0], sd=[1.0], x_max=0, y_max=1)
    with pytest.raises(ValueError, match="sd"):
        unstandardized_coefficients([1.0], mean=[1.0], sd=[0.0], x_max=1, y_max=1)


# -- fitted on train only, applied to test with the training statistics ------------------------------------------
def test_training_statistics_are_applied_to_test_rows():
    X, y = _data(seed=1)
    Xtr, Xte, ytr, yte = X[:150], X[150:] * 1.7 + 3, y[:150], y[150:] * 2
    std = Standardize(warn=False).fit(Xtr)
    np.testing.assert_allclose(std.transform(Xte), (Xte - Xtr.mean(0)) / Xtr.std(0))
    assert np.abs(std.transform(Xte).mean(0)).min() > 0.1  # not re-centred on the test rows
    mx = MaxNormMap(warn=False).fit(std.transform(Xtr))
    x_max = np.linalg.norm(std.transform(Xtr), axis=1).max()
    assert mx.x_max_ == pytest.approx(x_max)
    np.testing.assert_allclose(mx.transform(std.transform(Xte)), std.transform(Xte) / x_max)
    clip = ClipUpper(1.3, warn=False).fit(Xtr)
    np.testing.assert_allclose(clip.upper_, Xtr.mean(0) + 1.3 * Xtr.std(0))
    np.testing.assert_allclose(clip.transform(Xte), np.minimum(Xte, clip.upper_))
    ts = TargetScaler(warn=False).fit(ytr)
    assert ts.y_max_[0] == pytest.approx(np.abs(ytr).max())
    np.testing.assert_allclose(ts.transform(yte), yte / np.abs(ytr).max())
    assert np.abs(ts.transform(yte)).max() > 1  # test targets may exceed the bound: it is the training bound


def test_norm_bounds_after_max_norm_and_intercept():
    X, _ = _data(seed=2)
    Z = MaxNormMap(warn=False).fit_transform(Standardize(warn=False).fit_transform(X[:200]))
    norms = np.linalg.norm(Z, axis=1)
    assert norms.max() == pytest.approx(1.0) and (norms <= 1 + 1e-12).all()
    ic = InterceptColumn().fit(Z)
    W = ic.transform(Z)
    assert W.shape == (200, Z.shape[1] + 1) and np.allclose(W[:, 0], 1 / math.sqrt(2))
    assert (np.linalg.norm(W, axis=1) <= 1 + 1e-12).all() and ic.bound_X_factor_ == 1.0
    np.testing.assert_allclose(ic.inverse_transform(W), Z)
    # without the joint scaling the rows leave the unit ball: B_X must become √2
    raw = InterceptColumn(scale_to_unit=False).fit(Z)
    Wr = raw.transform(Z)
    assert np.linalg.norm(Wr, axis=1).max() > 1.4 and (np.linalg.norm(Wr, axis=1) <= math.sqrt(2) + 1e-12).all()
    assert raw.bound_X_factor_ == pytest.approx(math.sqrt(2)) and np.allclose(Wr[:, 0], 1.0)
    # test rows mapped with the training x_max can exceed 1 (harmless for prediction)
    std = Standardize(warn=False).fit(X[:200])
    mx = MaxNormMap(warn=False).fit(std.transform(X[:200]))
    assert np.linalg.norm(mx.transform(std.transform(X[200:] * 3)), axis=1).max() > 1


def test_split_coef_reads_the_intercept_on_the_input_scale():
    Z = MaxNormMap(warn=False).fit_transform(np.random.default_rng(0).normal(size=(50, 3)))
    ic = InterceptColumn().fit(Z)
    coef = np.array([0.8, 1.0, -2.0, 0.5])
    b0, b = ic.split_coef(coef)
    np.testing.assert_allclose(ic.transform(Z) @ coef, b0 + Z @ b)
    with pytest.raises(ValueError, match="shape"):
        ic.split_coef(coef[:3])
    assert list(ic.get_feature_names_out()) == ["intercept", "x0", "x1", "x2"]


def test_row_norm_map():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [-1.0, 0.0]])
    rn = RowNormMap().fit(X)
    np.testing.assert_allclose(rn.transform(X), [[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]])
    assert rn.public_statistics_ == {}
    assert not hasattr(rn, "inverse_transform")


def test_standardize_handles_constant_columns():
    X = np.column_stack([np.full(20, 0.1), np.zeros(20), np.arange(20.0)])
    std = Standardize(warn=False).fit(X)
    assert list(std.constant_) == [True, True, False]
    Z = std.transform(X)
    assert np.isfinite(Z).all() and np.allclose(Z[:, :2], 0) and Z[:, 2].std() == pytest.approx(1)
    np.testing.assert_allclose(std.inverse_transform(Z), X)
    # one training row: every column is constant
    assert np.isfinite(Standardize(ddof=1, warn=False).fit_transform(X[:1])).all()
    assert Standardize(ddof=1, warn=False).fit(X).scale_[2] == pytest.approx(X[:, 2].std(ddof=1))
    # all-zero data: x_max and y_max fall back to 1 instead of dividing by zero
    assert MaxNormMap(warn=False).fit(np.zeros((4, 2))).x_max_ == 1.0
    assert TargetScaler(warn=False).fit(np.zeros(4)).y_max_[0] == 1.0


def test_clip_upper_clips_only_the_upper_tail():
    X, _ = _data(seed=4)
    clip = ClipUpper(1.0, warn=False).fit(X)
    Z = clip.transform(X)
    upper = X.mean(0) + X.std(0)
    np.testing.assert_allclose(clip.upper_, upper)
    below = X <= upper
    np.testing.assert_array_equal(Z[below], X[below])  # untouched, including the lower tail
    np.testing.assert_allclose(Z[~below], np.broadcast_to(upper, X.shape)[~below])
    np.testing.assert_array_equal(Z.min(0), X.min(0))
    np.testing.assert_array_equal(clip.n_clipped_, (~below).sum(0))
    assert (clip.n_clipped_ > 0).all()
    # a far lower outlier is not touched; a far upper outlier is
    Xo = X.copy()
    Xo[0, 0], Xo[1, 1] = -1e6, 1e6
    Zo = ClipUpper(1.3, warn=False).fit_transform(Xo)
    assert Zo[0, 0] == -1e6 and Zo[1, 1] < 1e6
    assert not hasattr(clip, "inverse_transform")


def test_clip_symmetric():
    X, _ = _data(seed=5)
    cs = ClipSymmetric(0.5, warn=False).fit(X)
    Z = cs.transform(X)
    np.testing.assert_allclose(cs.lower_, X.mean(0) - 0.5 * X.std(0))
    np.testing.assert_allclose(cs.upper_, X.mean(0) + 0.5 * X.std(0))
    assert (Z >= cs.lower_).all() and (Z <= cs.upper_).all()
    assert (Z.min(0) == cs.lower_).all() and (Z.max(0) == cs.upper_).all()  # both tails clipped
    Xc = X - X.mean(0)
    pooled = ClipSymmetric(0.5, pooled=True, warn=False).fit(Xc)
    np.testing.assert_allclose(pooled.upper_ - pooled.mean_, 0.5 * Xc.std())  # one SD of all entries


def test_target_scaler_shapes_and_centering():
    y = np.array([3.0, -1.0, 5.0, 1.0])
    ts = TargetScaler(warn=False).fit(y)
    assert ts.transform(y).shape == (4,) and ts.transform(y[:, None]).shape == (4, 1)
    np.testing.assert_allclose(ts.transform(y), y / 5)
    np.testing.assert_allclose(ts.inverse_transform(ts.transform(y)), y)
    tc = TargetScaler(center=True, warn=False).fit(y)
    np.testing.assert_allclose(tc.transform(y), (y - 2) / 3)
    assert set(tc.public_statistics_) == {"y_max", "y_mean"}
    two = TargetScaler(warn=False).fit(np.column_stack([y, 2 * y]))
    np.testing.assert_allclose(two.y_max_, [5, 10])
    with pytest.raises(ValueError, match="Reshape"):
        two.transform(y)


# -- public statistics and the PrivacyLeakWarning ---------------------------------------------------------------
@pytest.mark.parametrize("cls", list(WITH_STATS))
def test_public_statistics_and_warning(cls):
    X, y = _data(seed=6)
    data = y if cls is TargetScaler else X
    with pytest.warns(PrivacyLeakWarning, match="unperturbed") as rec:
        est = cls().fit(data)
    assert len([w for w in rec if issubclass(w.category, PrivacyLeakWarning)]) == 1  # once per fit
    assert "warn=False" in str(rec[0].message)
    assert set(est.public_statistics_) == WITH_STATS[cls]
    for key in WITH_STATS[cls]:
        assert key in str(rec[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        quiet = cls(warn=False).fit(data)
        quiet.transform(data)  # transform never warns
    assert set(quiet.public_statistics_) == WITH_STATS[cls]


def test_public_statistics_values():
    X, y = _data(seed=7)
    std = Standardize(warn=False).fit(X)
    np.testing.assert_allclose(std.public_statistics_["mean"], X.mean(0))
    np.testing.assert_allclose(std.public_statistics_["sd"], X.std(0))
    std.public_statistics_["mean"][0] = 1e9  # a copy: editing the report does not change the transform
    assert std.mean_[0] != 1e9
    assert MaxNormMap(warn=False).fit(X).public_statistics_["x_max"] == pytest.approx(np.linalg.norm(X, axis=1).max())


def test_per_row_and_constant_maps_never_warn():
    X, _ = _data(seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert RowNormMap().fit(X).public_statistics_ == {}
        assert InterceptColumn().fit(X).public_statistics_ == {}


def test_pipeline_reports_everything_once():
    X, y = _data(seed=9)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        pipe = kalaja_pipeline(AdaSSP(1.0, 1e-6, noise="kalaja", random_state=0, noise_source="seeded"), clip_c=1.5,
                               center_y=True).fit(X, y)
    leaks = [w for w in rec if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1
    assert set(pipe.public_statistics_) == {"clip_mean", "clip_sd", "clip_upper", "mean", "sd", "x_max", "y_max",
                                            "y_mean"}
    for key in pipe.public_statistics_:
        assert key in str(leaks[0].message)
    assert pipe.privacy_cost_.epsilon == 1.0 and pipe.privacy_cost_.delta == 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        kalaja_pipeline(AdaSSP(1.0, 1e-6, random_state=0, noise_source="seeded"), warn=False).fit(X, y)
    row = kalaja_pipeline(Ridge(), mapping="row", warn=False).fit(X, y)
    assert set(row.public_statistics_) == {"mean", "sd", "y_max"}
    assert not hasattr(row, "coef_")  # row-norm mapping is not linear in the raw features


# -- the pipeline's bounds ---------------------------------------------------------------------------------------
def test_pipeline_sets_and_enforces_unit_bounds():
    X, y = _data(seed=10)
    for est in (AdaSSP(1.0, random_state=0, noise_source="seeded"), SSP(1.0, random_state=0, noise_source="seeded")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)  # no bound is taken from the data
            pipe = kalaja_pipeline(est, warn=False).fit(X, y)
        assert pipe.estimator_.bound_X == 1.0 and pipe.estimator_.bound_y == 1.0
        assert pipe.estimator_.n_bounded_ == 0  # the maps already guarantee them (up to rounding)
        assert est.bound_X is None  # the user's estimator is cloned, not modified
        Z = pipe.preprocess(X)
        assert (np.linalg.norm(Z, axis=1) <= 1 + 1e-12).all()
    kalaja_pipeline(AdaSSP(1.0, bound_X=1.0, bound_y=1, random_state=0, noise_source="seeded"), warn=False).fit(X, y)
    with pytest.raises(ValueError, match="bound_X"):
        kalaja_pipeline(AdaSSP(1.0, bound_X=2.0), warn=False).fit(X, y)
    for est in (OLS(), TrivialPredictor()):
        kalaja_pipeline(est, warn=False).fit(X, y)  # no bounds to set
    triv = kalaja_pipeline(TrivialPredictor(), center_y=True, warn=False).fit(X, y)
    np.testing.assert_allclose(triv.predict(X), y.mean())


def test_pipeline_clips_test_rows_only_when_asked():
    X, y = _data(seed=11)
    Xte = X[:20] * 5  # far above the training thresholds
    a = kalaja_pipeline(Ridge(), clip_c=1.3, warn=False).fit(X, y)
    b = kalaja_pipeline(Ridge(), clip_c=1.3, clip_test=True, warn=False).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_)  # the same fit
    np.testing.assert_allclose(a.predict(Xte), Xte @ a.coef_ + a.intercept_)
    clipped = np.minimum(Xte, a.clipper_.upper_)
    np.testing.assert_allclose(b.predict(Xte), clipped @ b.coef_ + b.intercept_)
    assert not np.allclose(a.predict(Xte), b.predict(Xte))


def test_pipeline_matches_nonprivate_ols_in_the_limit():
    """With OLS inside, the pipeline (intercept column included) is OLS with intercept on the raw data."""
    X, y = _data(seed=12)
    pipe = kalaja_pipeline(OLS(), warn=False).fit(X, y)
    A = np.column_stack([np.ones(len(X)), X])
    beta = np.linalg.lstsq(A, y, rcond=None)[0]
    np.testing.assert_allclose(pipe.intercept_, beta[0], rtol=1e-8)
    np.testing.assert_allclose(pipe.coef_, beta[1:], rtol=1e-8)


# -- bad input ------------------------------------------------------------------------------------------------------
ALL = [Standardize, ClipUpper, ClipSymmetric, MaxNormMap, RowNormMap, InterceptColumn, TargetScaler]


def _make(cls):
    return cls(warn=False) if cls in WITH_STATS else cls()


@pytest.mark.parametrize("cls", ALL)
def test_bad_input(cls):
    X = np.random.default_rng(0).normal(size=(10, 3))
    for bad, msg in ((np.nan, "NaN"), (np.inf, "infinity")):
        Xb = X.copy()
        Xb[2, 1] = bad
        with pytest.raises(ValueError, match=msg):
            _make(cls).fit(Xb)
        with pytest.raises(ValueError, match=msg):
            _make(cls).fit(X).transform(Xb)
    with pytest.raises(ValueError, match="features"):
        _make(cls).fit(X).transform(X[:, :2])
    with pytest.raises(ValueError):
        _make(cls).fit(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="dim 3"):
        _make(cls).fit(X).transform(np.zeros((2, 3, 1)))
    if cls is not TargetScaler:  # TargetScaler takes a 1-D y by design
        with pytest.raises(ValueError, match="2D"):
            _make(cls).fit(X[:, 0])


def test_bad_parameters():
    X, y = _data(n=30)
    for est in (ClipUpper(-1.0), ClipUpper(float("nan")), ClipUpper("1.3"), ClipSymmetric(-0.1),
                Standardize(ddof=-1), Standardize(ddof=0.5)):
        with pytest.raises(ValueError):
            est.fit(X)
    with pytest.raises(ValueError, match="mapping"):
        KalajaPipeline(Ridge(), mapping="norm", warn=False).fit(X, y)
    with pytest.raises(TypeError, match="estimator"):  # required, as for scikit-learn's meta-estimators
        KalajaPipeline(warn=False)
    with pytest.raises(ValueError, match="estimator"):
        KalajaPipeline(None, warn=False).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        kalaja_pipeline(Ridge(), warn=False).fit(X, np.where(np.arange(30) == 3, np.nan, y))
    with pytest.raises(ValueError, match="features"):
        kalaja_pipeline(Ridge(), warn=False).fit(X, y).predict(X[:, :2])


# -- scikit-learn's estimator checks ------------------------------------------------------------------------------
def _sk_version() -> tuple[int, int]:
    major, minor = sklearn.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


CHECKED = [Standardize(warn=False), ClipUpper(warn=False), ClipSymmetric(warn=False), MaxNormMap(warn=False),
           RowNormMap(), InterceptColumn(), InterceptColumn(scale_to_unit=False), TargetScaler(warn=False),
           KalajaPipeline(Ridge(), warn=False),
           KalajaPipeline(Ridge(), mapping="row", intercept=False, clip_c=1.0, clip_test=True, center_y=True,
                          warn=False)]


def _expected_failures(estimator) -> dict[str, str]:
    if isinstance(estimator, TargetScaler):
        return {"check_fit1d": "TargetScaler accepts a 1-D y (one target) by design and returns it 1-D"}
    return {}


if _sk_version() >= (1, 6):  # `expected_failed_checks` is the scikit-learn >= 1.6 API
    from sklearn.utils.estimator_checks import parametrize_with_checks

    @parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failures)
    def test_scikit_learn_estimator_checks(estimator, check):
        # transformers are checked with warn=False: the checks' synthetic data are public
        check(estimator)
else:  # pragma: no cover
    @pytest.mark.skip(reason="the estimator checks use the scikit-learn >= 1.6 API (expected_failed_checks)")
    def test_scikit_learn_estimator_checks():
        pass
