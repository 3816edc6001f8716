"""Regression: the RAPPOR decoder's building blocks and the central-DP linear regressions.

Decoding (used by :mod:`ldp.decoders.rappor_decode`):

* :func:`least_squares` — weighted least squares with rank detection, z/t inference;
* :func:`nonnegative_lasso` — non-negative lasso whose penalty is a per-column entry test level;
* :func:`bonferroni`, :func:`holm`, :func:`benjamini_hochberg`, :func:`adjusted_p_values` — multiple testing;
* :func:`selection_adjusted_interval` — intervals for estimates reported because they passed a threshold.

Central DP (scikit-learn estimators on one-pass, mergeable sufficient statistics; see
``docs/regression.md``):

* baselines: :class:`OLS`, :class:`Ridge`, :class:`TrivialPredictor`;
* sufficient statistics perturbation: :class:`SSP`, :class:`AdaSSP` (= adaSSPbudget with
  ``gamma``), :class:`AdaSSPBudget`, :class:`ConstSSPFull` (:mod:`ldp.regression.ssp`);
* robust private linear regression (:mod:`ldp.regression.rplr`), the functional mechanism and
  output perturbation (:mod:`ldp.regression.objective`), pre-processing transformers
  (:mod:`ldp.regression.preprocessing`);
* noise, budgets and warnings: :mod:`ldp.regression.mechanisms` and :mod:`ldp.regression.noise`
  (``noise_source``); statistics: :class:`SufficientStatistics`.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from typing import TYPE_CHECKING

from ldp.lazy import lazy_exports

# eager: its function shares the submodule's name, which the import system would otherwise set here
from ldp.regression.least_squares import LeastSquaresFit, least_squares

_EXPORTS = {
    "ldp.regression.baselines": ("OLS", "Ridge", "TrivialPredictor"),
    "ldp.regression.mechanisms": ("PrivacyLeakWarning", "ReproductionOnlyWarning"),
    "ldp.regression.noise": ("SeededNoiseWarning",),
    "ldp.regression.objective": ("FunctionalMechanism", "OutputPerturbation"),
    "ldp.regression.preprocessing": ("ClipSymmetric", "ClipUpper", "InterceptColumn", "MaxNormMap", "RowNormMap",
                                     "Standardize", "TargetScaler"),
    "ldp.regression.pipeline": ("KalajaPipeline", "kalaja_pipeline", "unstandardized_coefficients"),
    "ldp.regression.rplr": ("NonPrivateRobustLR", "RobustPrivateLR"),
    "ldp.regression.rplr_search": ("choose_clipping", "choose_split"),
    "ldp.regression.selection": ("LassoSelection", "entry_threshold", "nonnegative_lasso"),
    "ldp.regression.ssp": ("SSP", "AdaSSP", "AdaSSPBudget", "ConstSSPFull"),
    "ldp.regression.selective": ("selection_adjusted_interval",),
    "ldp.regression.stats": ("SufficientStatistics",),
    "ldp.regression.testing": ("adjusted_p_values", "benjamini_hochberg", "bonferroni", "holm"),
}
# scikit-learn only where an estimator is used: ``ldp.regression.mechanisms`` (numpy only) stays light
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from ldp.regression.baselines import OLS, Ridge, TrivialPredictor
    from ldp.regression.mechanisms import PrivacyLeakWarning, ReproductionOnlyWarning
    from ldp.regression.noise import SeededNoiseWarning
    from ldp.regression.objective import FunctionalMechanism, OutputPerturbation
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
    from ldp.regression.rplr import NonPrivateRobustLR, RobustPrivateLR
    from ldp.regression.rplr_search import choose_clipping, choose_split
    from ldp.regression.selection import LassoSelection, entry_threshold, nonnegative_lasso
    from ldp.regression.selective import selection_adjusted_interval
    from ldp.regression.ssp import SSP, AdaSSP, AdaSSPBudget, ConstSSPFull
    from ldp.regression.stats import SufficientStatistics
    from ldp.regression.testing import adjusted_p_values, benjamini_hochberg, bonferroni, holm


__all__ = [
    "LeastSquaresFit",
    "least_squares",
    "LassoSelection",
    "entry_threshold",
    "nonnegative_lasso",
    "bonferroni",
    "holm",
    "benjamini_hochberg",
    "adjusted_p_values",
    "selection_adjusted_interval",
    "OLS",
    "Ridge",
    "TrivialPredictor",
    "SSP",
    "AdaSSP",
    "AdaSSPBudget",
    "ConstSSPFull",
    "FunctionalMechanism",
    "OutputPerturbation",
    "RobustPrivateLR",
    "NonPrivateRobustLR",
    "choose_clipping",
    "choose_split",
    "Standardize",
    "MaxNormMap",
    "RowNormMap",
    "InterceptColumn",
    "ClipUpper",
    "ClipSymmetric",
    "TargetScaler",
    "KalajaPipeline",
    "kalaja_pipeline",
    "unstandardized_coefficients",
    "SufficientStatistics",
    "PrivacyLeakWarning",
    "ReproductionOnlyWarning",
    "SeededNoiseWarning",
]
