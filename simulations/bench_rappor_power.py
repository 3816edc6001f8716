"""Benchmark section ``rappor_power`` (issue 88, item 4): RAPPOR's disguised attacks in every shape.

Per shape (``k`` in 16, 32, 64, 128; ``m`` in 4, 8, 16, 64; ``n`` in 2·10⁴, 10⁵; h = 2, p = 0.25, q = 0.75,
f = 0.5; Zipf over 64 candidates), ``trials`` windows of each row: honest (the false alarms), and 1, 2 or 3
targets taken in turn by 2 % or 5 % fake users whose number of 1s follows the honest law
(:func:`ldp.simulation.rappor_disguise.disguised_window`, the aggregate folded as a fold that knows the candidates
folds it: ``keep_pairs``). Each window's checks at the family-wise level 0.01 as ``ldp decode`` runs them
(:func:`~ldp.jobs.rappor_poisoning.candidate_evidence`, the 64 candidates known); the ingest service's dashboard
runs the same function with the spec's candidates (:func:`ldp.ingest.series.poisoning`), so its row is this one.
``board_without`` is the dashboard of a metric without candidates (the aggregate's checks alone), measured where
``--without`` is given.

Also per shape: ``predicted``, the power the candidates' test would have if its statistic were ``χ²₁`` with the
noncentrality of the binned cells' expected likelihood ratio (:func:`noncentrality`), at the window's threshold:
what the statistic can reach, beside what it reaches.

    python simulations/bench_rappor_power.py [--trials 10] [--quick] [--shapes 16x4x20000,...] [--without]
"""

from __future__ import annotations

import argparse
import json
import time
from types import ModuleType
from typing import Any

ALPHA = 0.01
ROWS = (("honest", 0, 0.0), *((f"{t}x{f:.0%}", t, f) for f in (0.02, 0.05) for t in (1, 2, 3)))
SHAPES = tuple((k, m, n) for n in (20_000, 100_000) for k in (16, 32, 64, 128) for m in (4, 8, 16, 64))
QUICK = ((16, 4, 20_000), (32, 8, 20_000), (64, 16, 20_000), (128, 16, 100_000))
POWER_TARGET = 0.8


def _params(k: int, m: int) -> Any:
    from ldp.encoders.rappor import RapporParams

    return RapporParams(num_bloombits=k, num_hashes=2, num_cohorts=m, p=0.25, q=0.75, f=0.5)


def noncentrality(params: Any, n: int, fraction: float, targets: int, share: float = 0.01) -> float:
    """``2·n·KL``: the expected likelihood ratio of one target's binned cells (:func:`~ldp.jobs.rappor_pair_law.
    candidate_laws`) between the attacked law and its closest honest mixture (the KL projection, by the vectorised
    fit), for a target held by ``share`` of the users, ``fraction / targets`` fake users for it, and the other
    values' filters holding either bit of its pair with ``2/k`` each."""
    import numpy as np

    from ldp.batch.rappor_pair_bins import bin_count
    from ldp.jobs.rappor_pair_law import candidate_laws, pair_types
    from ldp.jobs.rappor_shared_share import null_upper

    k = params.num_bloombits
    laws, fake = candidate_laws(params, bin_count(params) > 0)
    kinds = pair_types(params)
    w = np.zeros(len(kinds))
    honest = {(1, 1, 0): share, (1, 0, 1): 2 / k * (1 - share), (0, 1, 1): 2 / k * (1 - share)}
    for i, kind in enumerate(kinds):
        w[i] = honest.get(kind, 0.0)
    w[kinds.index((0, 0, 2))] = 1 - w.sum()
    phi = fraction / targets
    truth = (1 - phi) * (w @ laws) + phi * fake
    counts = truth * 1e7
    upper, _ = null_upper(counts[None], laws, 3000)
    kl = (counts @ np.log(np.maximum(truth, 1e-300)) - float(upper[0])) / 1e7
    return float(max(2 * n * kl, 0.0))


def predicted_power(lam: float, tests: int, candidates: int = 64) -> float:
    """``P(χ²₁(λ) >= t)`` at the window's threshold ``t``: ``α / tests / candidates`` (Bonferroni)."""
    from scipy import stats

    t = stats.chi2.isf(ALPHA / tests / candidates, 1)
    return float(stats.ncx2.sf(t, 1, max(lam, 1e-9)))


def measure_shape(k: int, m: int, n: int, trials: int, seed: int, without: bool = False) -> dict[str, Any]:
    """The rows of one shape (module docstring)."""
    import numpy as np

    from ldp.decoders.rappor_decode import synthetic_rappor_candidates
    from ldp.jobs.poisoning import poisoning_evidence
    from ldp.jobs.rappor_poisoning import candidate_evidence
    from ldp.simulation.rappor_disguise import disguised_window

    params = _params(k, m)
    cands = synthetic_rappor_candidates(params, 64)
    out: dict[str, Any] = {"k": k, "m": m, "n": n, "trials": trials, "rows": {}}
    t0 = time.perf_counter()
    tests = 7
    for i, (name, targets, fraction) in enumerate(ROWS):
        gen = np.random.default_rng([seed, k, m, n, i])
        flagged = own = board = 0
        for _ in range(trials):
            window = disguised_window(params, "honest" if targets == 0 else "alternating", n=n, fraction=fraction,
                                      rng=gen, gain=False, targets=max(targets, 1))
            ev = candidate_evidence(window.aggregate, cands, alpha=ALPHA)
            tests = len(ev.checks)
            flagged += ev.suspicious
            own += {c.name: c for c in ev.checks}.get("pair_candidates", ev.checks[0]).suspicious
            board += poisoning_evidence(window.aggregate, alpha=ALPHA).suspicious if without else 0
        row: dict[str, Any] = {"flagged": flagged / trials, "pair_candidates": own / trials}
        if without:
            row["board_without"] = board / trials
        if targets:
            row["predicted"] = round(predicted_power(noncentrality(params, n, fraction, targets), tests), 3)
        out["rows"][name] = row
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def measure(trials: int, seed: int, shapes: Any = SHAPES, without: bool = False) -> dict[str, Any]:
    """Every shape's rows, and the shapes where every attack row reaches the power target."""
    from ldp.batch.rappor_pair_bins import pair_bins_shape

    cells = []
    for k, m, n in shapes:
        cell = measure_shape(k, m, n, trials, seed, without)
        cell["pair_bins"] = list(pair_bins_shape(_params(k, m)))
        cells.append(cell)
        print(json.dumps(cell), flush=True)
    return {"alpha": ALPHA, "h": 2, "p": 0.25, "q": 0.75, "f": 0.5, "candidates": 64, "shapes": cells}


def register(b: ModuleType) -> None:
    """Add the ``rappor_power`` section to the benchmark module ``b``."""

    @b.benchmark("rappor_power")
    def rappor_power(ctx: Any) -> dict[str, Any]:
        out = measure(4 if ctx.quick else 20, ctx.seed, QUICK if ctx.quick else SHAPES)
        for cell in out["shapes"]:
            for name, row in cell["rows"].items():
                label = f"rappor_power.k{cell['k']}_m{cell['m']}_n{cell['n']}.{name}"
                if name == "honest":
                    row["target"] = ctx.judge(label, row["flagged"], "<=", ALPHA * 5, "share flagged")
                else:
                    row["target"] = ctx.judge(label, row["flagged"], ">=", POWER_TARGET, "share flagged")
        return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seed", type=int, default=88)
    ap.add_argument("--quick", action="store_true", help="four shapes")
    ap.add_argument("--shapes", default=None, help="comma-separated KxMxN, e.g. 16x4x20000,128x64x100000")
    ap.add_argument("--without", action="store_true", help="also the dashboard of a metric without candidates")
    a = ap.parse_args()
    chosen = (tuple(tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")) if a.shapes
              else QUICK if a.quick else SHAPES)
    measure(a.trials, a.seed, chosen, a.without)
