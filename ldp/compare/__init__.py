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

from ldp.lazy import lazy_exports

_EXPORTS = {
    "counting": ("CountingSetup", "LocalProtocol", "central_noise_sd", "local_params", "protocol_rows", "seed004_rows",
                 "seed004_errors", "seed004_slopes"),
    "regression": ("RegressionSetup", "local_noise_sd", "local_reports", "local_sensitivity", "multiplier_rows",
                   "regression_rows"),
    "report": ("run_compare", "render", "compare_command", "add_compare_arguments"),
}
__all__ = [name for names in _EXPORTS.values() for name in names]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())  # submodules load on first use
