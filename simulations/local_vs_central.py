#!/usr/bin/env python3
"""Local vs central differential privacy: counting queries and linear regression (``ldp.compare``).

    python simulations/local_vs_central.py                # full run, about half a minute
    python simulations/local_vs_central.py --quick        # a few seconds
    python simulations/local_vs_central.py --no-plots --json --out /tmp/compare

What it runs (details and formulas in ``docs/compare.md`` and :mod:`ldp.compare`):

* seed 004's smoker experiment: randomized response with fair coins (ε = ln 3) against the Laplace
  mechanism on the count, for subsamples of 5, 10, …, 3000 of 3,000 people (20% smokers);
* the standard error of counts for binary RR, GRR, RAPPOR, CMS and HCMS against central Laplace and
  Gaussian releases, vs n (ε = 1) and vs ε (n = 10,000), with the decoders' exact variances beside;
* linear regression from per-user Gaussian-perturbed sufficient statistics against central SSP and
  AdaSSP at the same (ε, δ), and how many more users local DP needs for the same accuracy.

Outputs in ``--out`` (default ``simulations/results/local_vs_central``): ``seed004_series.csv``,
``seed004_errors.csv``, ``seed004_slopes.csv``, ``counting.csv``, ``regression.csv``,
``multiplier.csv`` and, with matplotlib, ``compare-seed004.png``, ``compare-counting-n.png``,
``compare-counting-epsilon.png``, ``compare-regression.png``. The summary tables go to stdout.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.compare import add_compare_arguments, compare_command  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "local_vs_central"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_compare_arguments(ap)
    ap.add_argument("-q", "--quiet", dest="log_quiet", action="store_true",
                    help="no progress bar on stderr (as ldp -q compare)")
    ap.set_defaults(out=DEFAULT_OUT)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return compare_command(parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
