"""Regression building blocks for decoders and central-DP regressions (numpy, scipy, scikit-learn).

* :func:`least_squares` — weighted least squares with rank detection, z/t inference;
* :func:`nonnegative_lasso` — non-negative lasso whose penalty is a per-column entry test level;
* :func:`bonferroni`, :func:`benjamini_hochberg`, :func:`adjusted_p_values` — multiple testing.
"""

from __future__ import annotations

from ldp.regression.least_squares import LeastSquaresFit, least_squares
from ldp.regression.selection import LassoSelection, entry_threshold, nonnegative_lasso
from ldp.regression.testing import adjusted_p_values, benjamini_hochberg, bonferroni

__all__ = [
    "LeastSquaresFit",
    "least_squares",
    "LassoSelection",
    "entry_threshold",
    "nonnegative_lasso",
    "bonferroni",
    "benjamini_hochberg",
    "adjusted_p_values",
]
