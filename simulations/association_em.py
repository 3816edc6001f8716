"""Association EM (issue 21, item 4): accuracy and CI coverage of the joint table over repeated collections.

Target: two variables × 100 values, 10⁶ clients, estimates within their 95 % CIs in >= 94 % of 200
collections (pooled over cells). The true table mixes independence and agreement:
``0.7·uniform + 0.3·diag/d`` (every cell >= 0.7/d², so no true cell sits on the boundary).

    python simulations/association_em.py --quick            # 100 clients... seconds
    python simulations/association_em.py --sims 200          # the full target (GRR × GRR, ~15 min on 2 cores)
    python simulations/association_em.py --kind rappor --sims 2
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from ldp.batch.association import simulate_pairs
from ldp.decoders.association import Variable, associate
from ldp.encoders.randomized_response import GRRParams
from ldp.encoders.rappor import RapporParams

__all__ = ["target_table", "variables", "one_collection", "coverage_study"]


def target_table(d: int) -> np.ndarray:
    """``0.7·uniform + 0.3·diag/d``: independent noise plus a strong association (A = B for 30 %)."""
    return 0.7 * np.full((d, d), 1.0 / d**2) + 0.3 * np.eye(d) / d


def variables(kind: str, d: int, eps: float) -> tuple[Variable, Variable]:
    """GRR × GRR at ``eps`` per variable, or RAPPOR × RAPPOR (k = 8, h = 2, m = 64, f = 1/4, p = 0, q = 1)."""
    if kind == "grr":
        g = GRRParams(eps, d)
        return Variable(g), Variable(g)
    if kind == "rappor":
        rp = RapporParams(8, 2, 64, 0.0, 1.0, 0.25)
        return Variable(rp, [f"a{i}" for i in range(d)]), Variable(rp, [f"b{i}" for i in range(d)])
    raise ValueError(f"kind must be 'grr' or 'rappor', got {kind!r}")


def one_collection(a: Variable, b: Variable, joint: np.ndarray, n: int, seed: int, *, se: str = "bootstrap",
                   replicates: int = 200) -> dict[str, Any]:
    """Simulate one collection, estimate; the seconds taken and the per-cell coverage of the truth."""
    gen = np.random.default_rng(seed)
    ra, rb, _, _ = simulate_pairs(a.params, b.params, joint, n, gen, candidates_a=a.candidates,
                                  candidates_b=b.candidates)
    t0 = time.perf_counter()
    res = associate(a, b, ra, rb, se=se, replicates=replicates, rng=gen)
    seconds = time.perf_counter() - t0
    covered = (res.lower <= joint) & (joint <= res.upper)
    return {"seconds": seconds, "covered": covered, "error": res.table - joint, "se": res.se, "maps": res.maps,
            "converged": res.converged}


def coverage_study(kind: str = "grr", d: int = 100, n: int = 10**6, sims: int = 200, eps: float = 6.0,
                   replicates: int = 200, seed: int = 0) -> dict[str, Any]:
    """Pooled and worst-cell coverage, bias in SE units, the time per analysis (median, max)."""
    a, b = variables(kind, d, eps)
    joint = target_table(d)
    runs = [one_collection(a, b, joint, n, seed + i, replicates=replicates) for i in range(sims)]
    cover = np.mean([r["covered"] for r in runs], axis=0)
    z = np.array([r["error"] / r["se"] for r in runs])
    secs = [r["seconds"] for r in runs]
    return {"kind": kind, "d": d, "n": n, "sims": sims, "eps_per_variable": eps, "replicates": replicates,
            "pair_epsilon": a.params.privacy_cost.epsilon + b.params.privacy_cost.epsilon,
            "coverage_pooled": float(cover.mean()), "coverage_worst_cell": float(cover.min()),
            "mean_z": float(z.mean()), "sd_z": float(z.std()),
            "rmse": float(np.sqrt(np.mean([np.mean(r["error"] ** 2) for r in runs]))),
            "seconds_median": float(np.median(secs)), "seconds_max": float(np.max(secs)),
            "all_converged": all(r["converged"] for r in runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="d = 10, n = 10⁵, 20 collections")
    ap.add_argument("--kind", default="grr", choices=("grr", "rappor"))
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--eps", type=float, default=6.0)
    ap.add_argument("--replicates", type=int, default=200)
    args = ap.parse_args()
    if args.quick:
        args.d, args.n, args.sims = 10, 10**5, 20
    out = coverage_study(args.kind, args.d, args.n, args.sims, args.eps, args.replicates)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
