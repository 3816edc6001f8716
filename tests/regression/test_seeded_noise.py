"""Seeded central noise says so (issue 59, item 6): ``noise_source="seeded"`` asks for the exact samplers on a
``random.Random`` seeded from ``random_state``; the default ``"secure"`` given a ``random_state`` still releases
that way (reproducible) but warns :class:`SeededNoiseWarning`; ``"seeded"`` without a ``random_state`` is
refused before anything is charged."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ldp.errors import LdpWarning, SeededNoiseWarning
from ldp.privacy.accountant import PrivacyAccountant
from ldp.regression import (
    SSP,
    AdaSSP,
    AdaSSPBudget,
    ConstSSPFull,
    FunctionalMechanism,
    OutputPerturbation,
    RobustPrivateLR,
    kalaja_pipeline,
)
from ldp.regression.noise import NOISE_SOURCES, check_noise_source

MODELS = {  # every private regression of ldp.regression
    "SSP": lambda **kw: SSP(1.0, 1e-6, bound_X=1, bound_y=1, **kw),
    "AdaSSP": lambda **kw: AdaSSP(1.0, 1e-6, bound_X=1, bound_y=1, **kw),
    "AdaSSPBudget": lambda **kw: AdaSSPBudget(1.0, 1e-6, bound_X=1, bound_y=1, gamma=0.2, **kw),
    "ConstSSPFull": lambda **kw: ConstSSPFull(1.0, 1e-6, bound_X=1, bound_y=1, **kw),
    "FunctionalMechanism": lambda **kw: FunctionalMechanism(2.0, **kw),
    "OutputPerturbation": lambda **kw: OutputPerturbation(2.0, **kw),
    "RobustPrivateLR": lambda **kw: RobustPrivateLR(2.0, clip_X=0.5, clip_y=1.0, **kw),
}
ALL = pytest.mark.parametrize("name", sorted(MODELS))


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    return X, X @ np.linspace(0.2, 0.6, d) + rng.normal(0, 0.05, n)


def test_seeded_is_a_noise_source_of_its_own():
    assert NOISE_SOURCES == ("secure", "seeded", "numpy")
    assert [check_noise_source(s) for s in NOISE_SOURCES] == list(NOISE_SOURCES)
    with pytest.raises(ValueError, match="'secure', 'seeded', 'numpy'"):
        check_noise_source("mersenne")
    assert issubclass(SeededNoiseWarning, UserWarning) and issubclass(SeededNoiseWarning, LdpWarning)


@ALL
def test_the_default_with_a_random_state_warns_and_releases_seeded(name):
    X, y = _data()
    with pytest.warns(SeededNoiseWarning) as caught:
        model = MODELS[name](random_state=3).fit(X, y)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert name in text and "simulation" in text and "noise_source='seeded'" in text and "random_state" in text
    assert caught[0].filename == __file__  # points at the caller's fit
    assert model.noise_source_ == "seeded" and "simulation only" in model.noise_label_


@ALL
@pytest.mark.parametrize("random_state", [7, "generator"])
def test_seeded_equals_the_default_with_a_random_state_bit_for_bit(name, random_state):
    def seed():
        return np.random.default_rng(7) if random_state == "generator" else random_state

    X, y = _data()
    with pytest.warns(SeededNoiseWarning):
        default = MODELS[name](random_state=seed()).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seeded = MODELS[name](random_state=seed(), noise_source="seeded").fit(X, y)
    assert default.noise_source_ == seeded.noise_source_ == "seeded"
    assert default.noise_label_ == seeded.noise_label_ == "seeded exact sampler — simulation only"
    assert default.coef_.tobytes() == seeded.coef_.tobytes()
    again = MODELS[name](random_state=seed(), noise_source="seeded").fit(X, y)
    assert again.coef_.tobytes() == seeded.coef_.tobytes()  # reproducible


@ALL
@pytest.mark.parametrize("kwargs, source", [
    ({"random_state": 3, "noise_source": "seeded"}, "seeded"),
    ({"random_state": np.random.default_rng(3), "noise_source": "seeded"}, "seeded"),
    ({}, "secure"),
    ({"noise_source": "secure"}, "secure"),
    ({"random_state": 3, "noise_source": "numpy"}, "numpy"),
])
def test_no_warning_when_seeded_is_asked_for_or_there_is_no_seed(name, kwargs, source):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = MODELS[name](**kwargs).fit(X, y)
    assert model.noise_source_ == source


@ALL
def test_seeded_without_a_random_state_is_refused_before_any_charge(name):
    X, y = _data()
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="noise_source='seeded' needs a random_state"):
        MODELS[name](noise_source="seeded", accountant=acc).fit(X, y)
    streamed = MODELS[name](noise_source="seeded", accountant=acc).partial_fit(X, y)  # refused at the release
    with pytest.raises(ValueError, match="needs a random_state"):
        streamed.release()
    assert not acc.releases and not hasattr(streamed, "coef_")
    assert streamed.set_params(random_state=1).release().noise_source_ == "seeded"
    assert len(acc.releases) == 1


@ALL
def test_the_warning_comes_before_any_charge(name):
    """With the warning raised as an error (as in this test suite), nothing is charged."""
    X, y = _data()
    acc = PrivacyAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)
        with pytest.raises(SeededNoiseWarning):
            MODELS[name](random_state=0, accountant=acc).fit(X, y)
    assert not acc.releases


def test_the_pipeline_passes_the_warning_on_and_seeded_silences_it():
    X, y = _data()
    with pytest.warns(SeededNoiseWarning):
        default = kalaja_pipeline(AdaSSP(1.0, 1e-6, random_state=2), warn=False).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seeded = kalaja_pipeline(AdaSSP(1.0, 1e-6, random_state=2, noise_source="seeded"), warn=False).fit(X, y)
    assert default.estimator_.noise_source_ == seeded.estimator_.noise_source_ == "seeded"
    np.testing.assert_array_equal(default.predict(X), seeded.predict(X))


def test_reproduction_only_conventions_need_numpy_noise_when_seeded_too():
    X, y = _data()
    with pytest.raises(ValueError, match="noise_source='numpy'"):
        SSP(1.0, 1e-6, bound_X=1, bound_y=1, noise="wang_code", random_state=0, noise_source="seeded").fit(X, y)
