"""Benchmark section ``rappor_poisoning`` (issue 72, item 6): RAPPOR's poisoning checks against disguised attacks.

Each cell runs ``trials`` windows of n = 20,000 users (Zipf over 64 candidates; k = 16, h = 2, m = 4, p = 0.25,
q = 0.75, f = 0.5), 5 % of them fake (:mod:`ldp.simulation.rappor_disguise`: their number of 1s from the honest
law), and the checks at the family-wise level 0.01: ``flagged`` as ``ldp decode`` runs them, knowing the 64
candidates (:func:`~ldp.jobs.rappor_poisoning.candidate_evidence`: the candidates' own pairs from the fold's
``pair_grid``), ``dashboard`` from the aggregate alone (the chosen pairs), and the candidate-pair, chosen-pair and
cohort-count checks alone (each at its share of the level). Per attack: the share of windows flagged, the targets'
mean frequency gain; ``honest``'s share is the false-alarm rate.

Targets: power >= 0.8 for the single target, the alternating pair and the one-cohort attack; honest windows flagged
at most at the level (0.01, with the binomial tolerance of the trials: at most the 0.999 quantile of
``Binomial(trials, 0.01)``). The one-bit attack is measured, with no target.

    python simulations/bench_rappor_poisoning.py [--trials 200] [--seed 72]
"""

from __future__ import annotations

import argparse
import json
import time
from types import ModuleType
from typing import Any

ATTACKS = ("honest", "single", "alternating", "one-cohort", "one-bit")
POWER_TARGET = {"single": 0.8, "alternating": 0.8, "one-cohort": 0.8}
ALPHA = 0.01


def measure(trials: int, seed: int) -> dict[str, Any]:
    """The rows of every attack (module docstring)."""
    import numpy as np
    from scipy import stats

    from ldp.decoders.rappor_decode import synthetic_rappor_candidates
    from ldp.encoders.rappor import RapporParams
    from ldp.jobs.poisoning import poisoning_evidence
    from ldp.jobs.rappor_poisoning import candidate_evidence
    from ldp.simulation.rappor_disguise import disguised_window

    params = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75, f=0.5)
    cands = synthetic_rappor_candidates(params, 64)
    rows = []
    for i, attack in enumerate(ATTACKS):
        gen = np.random.default_rng([seed, i])
        flagged, board, own, pair, cohort, gains = 0, 0, 0, 0, 0, []
        t0 = time.perf_counter()
        for _ in range(trials):
            window = disguised_window(params, attack, rng=gen, gain=attack != "honest")
            ev = candidate_evidence(window.aggregate, cands, alpha=ALPHA)
            dash = poisoning_evidence(window.aggregate, alpha=ALPHA)
            checks = {c.name: c for c in (*ev.checks, *dash.checks)}
            flagged += ev.suspicious
            board += dash.suspicious
            own += checks["pair_candidates"].suspicious
            pair += checks["pair_law"].suspicious
            cohort += checks["cohort_reports"].suspicious
            gains.append(window.gain)
        row = {"attack": attack, "trials": trials, "flagged": flagged / trials, "dashboard": board / trials,
               "pair_candidates": own / trials, "pair_law": pair / trials, "cohort_reports": cohort / trials,
               "gain": round(float(np.mean(gains)), 4), "seconds": round(time.perf_counter() - t0, 1)}
        if attack == "honest":
            row["allowed"] = int(stats.binom.ppf(0.999, trials, ALPHA)) / trials
        rows.append(row)
    return {"n": 20_000, "fraction": 0.05, "alpha": ALPHA, "params": params.to_dict(), "rows": rows}


def register(b: ModuleType) -> None:
    """Add the ``rappor_poisoning`` section to the benchmark module ``b``."""

    @b.benchmark("rappor_poisoning")
    def rappor_poisoning(ctx: Any) -> dict[str, Any]:
        out = measure(40 if ctx.quick else 200, ctx.seed)
        for row in out["rows"]:
            name = f"rappor_poisoning.{row['attack']}"
            if row["attack"] == "honest":
                row["target"] = ctx.judge(name, row["flagged"], "<=", row["allowed"], "share flagged")
            elif row["attack"] in POWER_TARGET:
                row["target"] = ctx.judge(name, row["flagged"], ">=", POWER_TARGET[row["attack"]], "share flagged")
        return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=72)
    a = ap.parse_args()
    print(json.dumps(measure(a.trials, a.seed)))
