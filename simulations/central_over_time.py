"""The central guarantee of typical deployments (docs/shuffling.md, docs/accountant.md): for a local ε₀ of 1, 2 and 4
and n from 10⁴ to 10⁸ devices shuffled per window, one window and a year of daily windows (365), δ = 10⁻⁸ per device,
with the generic bound and with binary randomized response's k-RR structure; one JSON line per cell.

    python simulations/central_over_time.py [--windows 365] [--delta 1e-8]
"""

from __future__ import annotations

import argparse
import json
import time

from ldp.encoders.randomized_response import GRRParams
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.over_time import central_over_time
from ldp.privacy.shuffle import shuffled_epsilon


def cell(eps0: float, n: int, windows: int, delta: float) -> dict[str, object]:
    start = time.perf_counter()
    rr = GRRParams(eps0, 2)
    one = shuffled_epsilon(eps0, n, delta)
    one_rr = shuffled_epsilon(rr.privacy_cost.epsilon, n, delta, rr.shuffle_structure)
    year = central_over_time(PrivacyCost(eps0), n, delta, windows)
    year_rr = central_over_time(rr.privacy_cost, n, delta, windows, rr.shuffle_structure)
    return {"eps0": eps0, "n": n, "windows": windows, "delta": delta, "one_window": one.epsilon,
            "one_window_rr": one_rr.epsilon, "over_windows": year.epsilon, "over_windows_rr": year_rr.epsilon,
            "naive": year.naive.epsilon, "local": year.local.epsilon,
            "seconds": round(time.perf_counter() - start, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=365)
    parser.add_argument("--delta", type=float, default=1e-8)
    args = parser.parse_args()
    for eps0 in (1.0, 2.0, 4.0):
        for n in (10**4, 10**5, 10**6, 10**7, 10**8):
            print(json.dumps(cell(eps0, n, args.windows, args.delta)), flush=True)


if __name__ == "__main__":
    main()
