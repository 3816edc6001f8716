"""Local vs central differential privacy, measured (``ldp compare``; ``docs/compare.md``).

* :mod:`ldp.compare.counting` — seed 004's smoker experiment (randomized response vs the Laplace
  mechanism on a count) and the standard error of counts for every local protocol (RR, GRR, RAPPOR,
  CMS, HCMS) against central Laplace and Gaussian releases, vs n and vs ε;
* :mod:`ldp.compare.regression` — linear regression from locally perturbed sufficient statistics
  against central SSP and AdaSSP at equal (ε, δ), and how many more users local DP needs;
* :mod:`ldp.compare.report` — :func:`run_compare` (CSV tables, PNG figures, a text summary) and the
  command-line hooks :func:`add_compare_arguments` / :func:`compare_command`.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)
# isort: split

import importlib
from typing import Any

_EXPORTS = {
    "counting": ("CountingSetup", "central_noise_sd", "local_params", "protocol_rows", "seed004_rows",
                 "seed004_errors", "seed004_slopes"),
    "regression": ("RegressionSetup", "local_noise_sd", "local_reports", "local_sensitivity", "multiplier_rows",
                   "regression_rows"),
    "report": ("run_compare", "render", "compare_command", "add_compare_arguments"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    """Load submodules on first use: ``ldp compare``'s options cost no numpy import (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'ldp.compare' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ldp.compare.{_WHERE[name]}"), name)
