"""scikit-learn conventions of the central-DP regressions with their DEFAULT arguments (issue 15,
item 12): ``check_estimator`` on default-constructed instances, ``partial_fit`` only where the
bounds are fixed a priori (``available_if``), RPLR's default thresholds, the pipeline's tags, and
fits on any finite data that either succeed with finite coefficients or raise ``ValueError``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator

from ldp.regression import (
    OLS,
    SSP,
    AdaSSP,
    AdaSSPBudget,
    ConstSSPFull,
    FunctionalMechanism,
    KalajaPipeline,
    NonPrivateRobustLR,
    OutputPerturbation,
    PrivacyLeakWarning,
    Ridge,
    RobustPrivateLR,
    SufficientStatistics,
    TrivialPredictor,
)

DEFAULTS = [SSP(), AdaSSP(), AdaSSPBudget(), ConstSSPFull(), RobustPrivateLR(), NonPrivateRobustLR(),
            FunctionalMechanism(), OutputPerturbation(), OLS(), Ridge(), TrivialPredictor(),
            # the pipeline's estimator is required; set_random_state cannot reach a nested random_state
            KalajaPipeline(SSP(random_state=0)), KalajaPipeline(AdaSSP(random_state=0)),
            KalajaPipeline(RobustPrivateLR(random_state=0)), KalajaPipeline(OLS())]


@pytest.mark.parametrize("estimator", DEFAULTS, ids=repr)
def test_default_constructed_estimators_pass_check_estimator(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PrivacyLeakWarning: the checks' data are not private
        results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed


@pytest.mark.parametrize("estimator, available", [
    (SSP(), False), (AdaSSP(bound_X=1.0), False), (ConstSSPFull(bound_y=1.0), False),
    (RobustPrivateLR(), False), (RobustPrivateLR(clip_X=1.0, omega_y=1.0), False),
    (NonPrivateRobustLR(omega_x=1.0), False),
    (SSP(bound_X=1.0, bound_y=1.0), True), (AdaSSPBudget(bound_X=1.0, bound_y=2.0), True),
    (RobustPrivateLR(clip_X=1.0, clip_y=1.0), True), (NonPrivateRobustLR(), True), (OLS(), True),
    (FunctionalMechanism(), True)], ids=repr)
def test_partial_fit_exists_only_with_bounds_fixed_a_priori(estimator, available):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    assert hasattr(estimator, "partial_fit") is available
    if not available:
        with pytest.raises(AttributeError) as refused:
            estimator.partial_fit(X, y)
        assert "a priori" in str(refused.value.__cause__) or "chunks" in str(refused.value.__cause__)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            assert not hasattr(estimator.fit(X, y), "partial_fit")  # a fit does not change the parameters
        return
    estimator.partial_fit(X, y)
    assert estimator.n_features_in_ == 3
    with pytest.raises(ValueError, match=f"X has 1 features, but {type(estimator).__name__} is expecting 3"):
        estimator.partial_fit(X[:, :1], y)


def test_rplr_default_thresholds_are_the_data_maxima_with_a_leak_warning():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(60, 4)), rng.normal(size=60)
    with pytest.warns(PrivacyLeakWarning) as caught:
        model = RobustPrivateLR(random_state=0, noise_source="seeded").fit(X, y)
    assert sorted(str(w.message).split(":")[1].split()[0] for w in caught
                  if w.category is PrivacyLeakWarning) == ["clip_X", "clip_y"]
    assert (model.clip_X_, model.clip_y_) == (np.abs(X).max(), np.abs(y).max())
    assert model.n_bounded_ == 0 and np.isfinite(model.coef_).all()
    with pytest.raises(ValueError, match="clip_X and clip_y"):  # a merge cannot take thresholds from data
        RobustPrivateLR().merge_statistics(SufficientStatistics.from_data(X, y))


def test_kalaja_pipeline_takes_poor_score_from_its_estimator_and_requires_one():
    assert get_tags(KalajaPipeline(SSP())).regressor_tags.poor_score
    assert get_tags(KalajaPipeline(RobustPrivateLR())).regressor_tags.poor_score
    assert not get_tags(KalajaPipeline(OLS())).regressor_tags.poor_score
    with pytest.raises(TypeError, match="estimator"):
        KalajaPipeline()


PRIVATE_DEFAULTS = [SSP, AdaSSP, AdaSSPBudget, ConstSSPFull, RobustPrivateLR]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    arrays(np.float64, (n, 3), elements=st.one_of(st.just(0.0), st.floats(-1e100, 1e100))),
    arrays(np.float64, n, elements=st.one_of(st.just(0.0), st.floats(-1e100, 1e100))))))
def test_default_fit_on_any_finite_data_gives_finite_coefficients(data):
    """Bounds from the data (zeros, subnormals, 1e100) never give a zero or infinite noise scale."""
    X, y = data
    for cls in PRIVATE_DEFAULTS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            model = cls(random_state=0, noise_source="seeded").fit(X, y)
        assert np.isfinite(model.coef_).all(), cls.__name__


@pytest.mark.parametrize("cls", PRIVATE_DEFAULTS, ids=lambda c: c.__name__)
def test_statistics_that_overflow_are_refused_before_any_charge(cls):
    from ldp.privacy.accountant import PrivacyAccountant

    X, y = np.full((4, 2), 1e200), np.full(4, 1e200)
    acc = PrivacyAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow in XᵀX, before the refusal
        with pytest.raises(ValueError, match="overflowed float64"):
            cls(accountant=acc).fit(X, y)
    assert not acc.releases
    with pytest.raises(ValueError, match="too large"):
        cls(accountant=acc, **{k: 1e200 for k in cls().get_params() if k in ("bound_X", "bound_y", "clip_X",
                                                                                 "clip_y")}).fit(X[:, :1] * 0, y * 0)
    assert not acc.releases
