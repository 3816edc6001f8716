#!/usr/bin/env python3
"""Apple's Count Mean Sketch (CMS) and Hadamard CMS (HCMS): simulated error against the exact theory.

    python simulations/apple_sketches.py                 # 200 repetitions per setting (a minute or two)
    python simulations/apple_sketches.py --quick         # 40 repetitions (well under 30 s)
    python simulations/apple_sketches.py --sweeps epsilon --epsilons 1,4 --reps 500 --no-plots

The population is ``--n`` users over a synthetic vocabulary of ``--vocab`` random strings (drawn
from a seeded generator) with Zipf-like frequencies ``∝ 1/rank^s`` (``--zipf``), plus
``--null-items`` further random strings that no user holds. For every setting ``(oracle, ε, k, m)``
the script runs ``R`` repetitions. Each one draws a **new hash family** (``hash_seed = 7919·rep``) and
the aggregate exactly, then estimates every vocabulary and null item. Drawing new hashes each time
matters: the variance formulas of apple-and-theory.md §1.4 and §2.3 (``ldp.decoders.sketch.sketch_variance``)
are over the client randomness *and* the draw of the hash functions. With one fixed family the
estimates are biased: items that collide with a heavy hitter are inflated (``--fixed-hash-seed``
shows this, and ``bias_z_rms`` then exceeds 1).

Sweeps (``--sweeps``, default all three):

* ``epsilon``: ε in ``--epsilons`` at ``--k``, ``--m``;
* ``m``: width in ``--ms`` at ε = ``--epsilon``, ``--k``;
* ``k``: number of hash functions in ``--ks`` at ε = ``--epsilon``, ``--m``. Small k and m with
  heavy-tailed data make the hash-collision term ``F2(d)/(k(m−1))`` visible.

Outputs in ``--out``:

* ``error_vs_epsilon.csv``, ``error_vs_m.csv``, ``error_vs_k.csv``: one row per oracle and setting,
  with empirical and theoretical variances, their ratio, RMSEs, and a bias check;
* ``ratio_to_optimum.csv``: for the ε sweep, each oracle's per-user privacy-noise constant next to
  the LDP optimum ``4e^ε/(e^ε−1)²`` (§6.2);
* ``per_item.csv``: every item's empirical variance next to the exact formula;
* PNG plots (skipped with ``--no-plots``). Theory is drawn as lines and simulation as points.

Simulation: CMS uses ``SketchAggregate.simulate``, an exact aggregate-level draw. HCMS's aggregate
draw costs ``O(#(row, bucket) groups · m)``, about 1.3 s per repetition at k=64, m=1024 and 1,000
items. The per-report batch path (``HcmsEncoder.encode_batch`` and ``SketchAggregate.add``) has the
same distribution: it is the client mechanism itself. It costs ``O(n)``, about 10 ms here.
``--hcms-sim auto`` (the default) picks the cheaper of the two. The CMS aggregate draw is always
the cheap one.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.simulation.collect import comma_list, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "apple_sketches"
SWEEPS = ("epsilon", "m", "k")
ORACLES = ("cms", "hcms")
HASH_SEED_STEP = 7919  # hash_seed of repetition r; > max k, so the families of two repetitions never share a seed
QUICK_REPS = 40
DEFAULT_REPS = 200

SWEEP_COLUMNS = (
    "oracle", "epsilon", "k", "m", "n", "reps",
    "var_emp_all", "var_theory_all", "var_ratio_all", "var_ratio_all_se", "mse_ratio_all",
    "var_emp_top", "var_theory_top", "var_ratio_top",
    "var_emp_null", "var_theory_null", "var_ratio_null",
    "rmse_emp_all", "rmse_theory_all", "rmse_emp_top", "rmse_theory_top",
    "theory_privacy_all", "theory_collision_all", "bias_z_rms", "se2_ratio_all", "simulation", "seconds",
)
OPTIMUM_COLUMNS = (
    "oracle", "epsilon", "k", "m", "n", "reps",
    "privacy_const", "optimum_const", "privacy_ratio_to_optimum",
    "null_const_emp", "null_const_theory", "null_ratio_emp_to_theory", "null_emp_ratio_to_optimum",
    "rr_floor_const", "privacy_ratio_to_rr_floor",
)
ITEM_COLUMNS = ("sweep", "oracle", "epsilon", "k", "m", "item", "rank", "true_count", "var_emp", "var_theory",
                "mean_error")


# -- arguments ---------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--reps", type=int, default=None,
                    help=f"repetitions per setting (default {DEFAULT_REPS}; {QUICK_REPS} with --quick)")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_REPS} repetitions per setting")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--seed", type=int, default=0, help="master seed (vocabulary, population, every repetition)")
    ap.add_argument("--n", type=int, default=100_000, help="number of users (default 100000)")
    ap.add_argument("--vocab", type=int, default=1000, help="vocabulary size (default 1000)")
    ap.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent s: frequency ∝ 1/rank^s (default 1)")
    ap.add_argument("--null-items", type=int, default=200, help="extra candidates no user holds (default 200)")
    ap.add_argument("--top", type=int, default=10, help="the 'top' items of the RMSE columns (default 10)")
    ap.add_argument("--oracles", type=comma_list(str), default=list(ORACLES), help="comma list of cms,hcms")
    ap.add_argument("--sweeps", type=comma_list(str), default=list(SWEEPS), help="comma list of epsilon,m,k")
    ap.add_argument("--epsilons", type=comma_list(float), default=[0.5, 1.0, 2.0, 4.0, 8.0], help="ε of the ε sweep")
    ap.add_argument("--ms", type=comma_list(int), default=[64, 256, 1024, 4096], help="widths of the m sweep")
    ap.add_argument("--ks", type=comma_list(int), default=[1, 4, 16, 64, 256], help="hash counts of the k sweep")
    ap.add_argument("--epsilon", type=float, default=4.0, help="ε of the m and k sweeps (default 4)")
    ap.add_argument("--k", type=int, default=64, help="k of the ε and m sweeps (default 64)")
    ap.add_argument("--m", type=int, default=1024, help="m of the ε and k sweeps (default 1024)")
    ap.add_argument("--hcms-sim", choices=("auto", "aggregate", "reports"), default="auto",
                    help="HCMS draw: exact aggregate-level, per-report batch (same law), or the cheaper")
    ap.add_argument("--fixed-hash-seed", action="store_true",
                    help="demonstrate the pitfall: reuse one hash family in every repetition (biased)")
    args = ap.parse_args(argv)
    if args.reps is None:
        args.reps = QUICK_REPS if args.quick else DEFAULT_REPS
    if args.reps < 2:
        ap.error("--reps must be >= 2 (sample variances)")
    if args.n < 1 or args.vocab < 1 or args.null_items < 0 or args.top < 1:
        ap.error("--n and --vocab must be >= 1, --null-items >= 0, --top >= 1")
    if bad := set(args.oracles) - set(ORACLES):
        ap.error(f"unknown oracle(s) {sorted(bad)}; choose from {ORACLES}")
    if bad := set(args.sweeps) - set(SWEEPS):
        ap.error(f"unknown sweep(s) {sorted(bad)}; choose from {SWEEPS}")
    if not args.oracles or not args.sweeps:
        ap.error("need at least one oracle and one sweep")
    if "hcms" in args.oracles:
        widths = {args.m, *(args.ms if "m" in args.sweeps else ())}
        if odd := sorted(w for w in widths if w < 2 or w & (w - 1)):
            ap.error(f"HCMS widths must be powers of two, got {odd}")
    return args


# -- population ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Population:
    """Vocabulary sorted by true count (largest first), its counts, and null candidates."""

    words: list[str]
    counts: Any  # np.ndarray of int64, aligned with ``words``
    nulls: list[str]

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def candidates(self) -> list[str]:
        return self.words + self.nulls

    @property
    def truth(self) -> Any:
        """True counts of every candidate (nulls are 0)."""
        import numpy as np

        return np.concatenate([self.counts, np.zeros(len(self.nulls), np.int64)]).astype(np.float64)


def random_strings(count: int, rng: Any, exclude: set[str] = frozenset(), min_len: int = 3,
                   max_len: int = 10) -> list[str]:
    """``count`` distinct random lowercase strings, none in ``exclude``."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    seen, out = set(exclude), []
    while len(out) < count:
        length = int(rng.integers(min_len, max_len + 1))
        word = "".join(letters[i] for i in rng.integers(0, 26, length))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def make_population(n: int, vocab: int, zipf: float, null_items: int, seed: int) -> Population:
    """Seeded vocabulary and a Zipf-like multinomial draw of ``n`` users over it."""
    import numpy as np

    rng = np.random.default_rng([seed, 0xC0DE])
    words = random_strings(vocab, rng)
    nulls = random_strings(null_items, rng, exclude=set(words))
    weights = 1.0 / np.arange(1, vocab + 1, dtype=np.float64) ** zipf
    counts = rng.multinomial(n, weights / weights.sum()).astype(np.int64)
    order = np.argsort(-counts, kind="stable")
    return Population([words[i] for i in order], counts[order], nulls)


# -- theory -------------------------------------------------------------------------------------------
def make_params(oracle: str, epsilon: float, k: int, m: int, hash_seed: int = 0) -> Any:
    from ldp.encoders.cms import CmsParams
    from ldp.encoders.hcms import HcmsParams

    return (CmsParams if oracle == "cms" else HcmsParams)(epsilon, k, m, hash_seed=hash_seed)


def theory(params: Any, pop: Population) -> tuple[Any, Any]:
    """Exact variance of every candidate's estimate, and its first (privacy-noise) term.

    Both come from ``sketch_variance`` (apple-and-theory.md §1.4, §2.3), with ``F2(d) = Σ_{d'≠d} f(d')²``.
    The privacy term is the first term of each formula: CMS ``(m/(m−1))²·n·(c²−1)/4``; HCMS
    ``(m/(m−1))²·(n·c² − f − (n−f)(1/(km) + (1−1/k)/m²))``. The rest is hash-collision noise.
    """
    import numpy as np

    from ldp.decoders.sketch import sketch_variance
    from ldp.encoders.hcms import HcmsParams

    f, n = pop.truth, pop.n
    f2 = float((pop.counts.astype(np.float64) ** 2).sum()) - f**2
    total = sketch_variance(params, f, n, f2)
    k, m, c = params.num_hashes, params.width, params.c
    r = (m / (m - 1)) ** 2
    if isinstance(params, HcmsParams):
        privacy = r * (n * c**2 - f - (n - f) * (1 / (k * m) + (1 - 1 / k) / m**2))
    else:
        privacy = np.full_like(f, r * n * (c**2 - 1) / 4)
    return total, privacy


def optimum_constant(epsilon: float) -> float:
    """The LDP frequency-oracle optimum per user, count scale: ``4e^ε/(e^ε−1)²`` (OUE/OLH, §6.2)."""
    return 4 * math.exp(epsilon) / math.expm1(epsilon) ** 2


def rr_floor_constant(epsilon: float) -> float:
    """Binary randomized response for one yes/no question, ``e^ε/(e^ε−1)²``: no all-items oracle reaches it."""
    return math.exp(epsilon) / math.expm1(epsilon) ** 2


# -- simulation ---------------------------------------------------------------------------------------
ORACLE_IDS = {"cms": 1, "hcms": 2}


def hcms_path(choice: str, k: int, m: int, pop: Population) -> str:
    """``aggregate`` or ``reports`` for HCMS. The aggregate draw costs ~(row, bucket) groups × m
    (≈ 20 ns each), the report path ~n (≈ 60 ns each): with ``auto``, the cheaper of the two."""
    if choice != "auto":
        return choice
    held = int((pop.counts > 0).sum())
    groups = min(k * held, pop.n)
    return "aggregate" if groups * m <= 3 * pop.n else "reports"


def draw_aggregate(params: Any, pop: Population, users: Any, path: str, gen: Any) -> Any:
    """One exact draw of the server's aggregate for the whole population."""
    from ldp.decoders.sketch import SketchAggregate
    from ldp.encoders.hcms import HcmsEncoder, HcmsParams

    if isinstance(params, HcmsParams) and path == "reports":
        agg = SketchAggregate(params)
        agg.add(HcmsEncoder(params).encode_batch(users, gen, candidates=pop.words))
        return agg
    return SketchAggregate.simulate(params, pop.counts, gen, values=pop.words)


@dataclass
class SettingResult:
    oracle: str
    epsilon: float
    k: int
    m: int
    row: dict[str, Any]
    var_emp: Any
    var_theory: Any
    mean_error: Any


def run_setting(oracle: str, epsilon: float, k: int, m: int, pop: Population, reps: int, seed: int,
                hcms_sim: str = "auto", fixed_hash_seed: bool = False, top: int = 10) -> SettingResult:
    """``reps`` independent repetitions (new hash family and client randomness each) of one setting."""
    import numpy as np

    start = time.perf_counter()
    cands, truth = pop.candidates, pop.truth
    n, d = pop.n, len(pop.words)
    path = hcms_path(hcms_sim, k, m, pop) if oracle == "hcms" else "aggregate"
    users = np.repeat(np.arange(d), pop.counts) if path == "reports" else None
    est, se2 = np.empty((reps, len(cands))), np.empty(reps)
    for rep in range(reps):
        params = make_params(oracle, epsilon, k, m, 0 if fixed_hash_seed else HASH_SEED_STEP * rep)
        gen = np.random.default_rng([seed, ORACLE_IDS[oracle], round(epsilon * 1000), k, m, rep])
        result = draw_aggregate(params, pop, users, path, gen).estimate(cands)
        est[rep] = result.count
        se2[rep] = (result.std_error[:d] ** 2).mean()  # the decoder's own (plug-in) variance estimate
    v_theory, v_privacy = theory(make_params(oracle, epsilon, k, m), pop)
    err = est - truth
    v_emp = est.var(axis=0, ddof=1)
    words, top_s, nulls = slice(0, d), slice(0, min(top, d)), slice(d, len(cands))

    def ratio(s: slice) -> float:
        return float(v_emp[s].mean() / v_theory[s].mean()) if s.stop > s.start else math.nan

    # Per repetition, the mean squared error over the vocabulary: iid over repetitions (each draws
    # everything afresh), with mean = the mean exact variance when the estimator is unbiased. Its
    # spread gives the standard error of the variance ratio.
    mse_rep = (err[:, words] ** 2).mean(axis=1)
    z = err.mean(axis=0) / np.sqrt(v_theory / reps)  # N(0, 1) per item if unbiased
    row = {
        "oracle": oracle, "epsilon": epsilon, "k": k, "m": m, "n": n, "reps": reps,
        "var_emp_all": v_emp[words].mean(), "var_theory_all": v_theory[words].mean(),
        "var_ratio_all": ratio(words),
        "var_ratio_all_se": mse_rep.std(ddof=1) / math.sqrt(reps) / v_theory[words].mean(),
        "mse_ratio_all": mse_rep.mean() / v_theory[words].mean(),
        "var_emp_top": v_emp[top_s].mean(), "var_theory_top": v_theory[top_s].mean(), "var_ratio_top": ratio(top_s),
        "var_emp_null": v_emp[nulls].mean() if len(pop.nulls) else math.nan,
        "var_theory_null": v_theory[nulls].mean() if len(pop.nulls) else math.nan,
        "var_ratio_null": ratio(nulls),
        "rmse_emp_all": math.sqrt((err[:, words] ** 2).mean()), "rmse_theory_all": math.sqrt(v_theory[words].mean()),
        "rmse_emp_top": math.sqrt((err[:, top_s] ** 2).mean()), "rmse_theory_top": math.sqrt(v_theory[top_s].mean()),
        "theory_privacy_all": v_privacy[words].mean(), "theory_collision_all": (v_theory - v_privacy)[words].mean(),
        "bias_z_rms": math.sqrt(float((z**2).mean())),
        "se2_ratio_all": se2.mean() / v_theory[words].mean(),
        "simulation": path, "seconds": time.perf_counter() - start,
    }
    return SettingResult(oracle, epsilon, k, m, row, v_emp, v_theory, err.mean(axis=0))


def optimum_row(res: SettingResult, pop: Population) -> dict[str, Any]:
    """Per-user constants of one ε-sweep setting next to the LDP optimum.

    The ratio to the optimum uses the privacy term only: the first term of the exact variance at
    f = 0, divided by n. The optimum ``4e^ε/(e^ε−1)²`` is the smallest per-user variance of an ε-LDP
    frequency oracle for all items at once (asymptotically, §6.2): it is a bound on privacy noise
    alone. A null item's variance also holds hash-collision noise from every
    user who holds another value (the F2/k term, and for CMS (1−1/k)·n/(m−1)). That noise is not a
    privacy cost and shrinks as k and m grow, so dividing a null item's variance by the optimum
    would mix the two. At large ε the collision term can even dominate the privacy term. So the
    null columns are reported for context and as a check: empirical vs its full theory ≈ 1.
    """
    n, eps, d = pop.n, res.epsilon, len(pop.words)
    privacy_const = _privacy_const_f0(res.oracle, eps, res.k, res.m)
    opt, floor = optimum_constant(eps), rr_floor_constant(eps)
    null_emp = float(res.var_emp[d:].mean()) / n if pop.nulls else math.nan
    null_theory = float(res.var_theory[d:].mean()) / n if pop.nulls else math.nan
    return {
        "oracle": res.oracle, "epsilon": eps, "k": res.k, "m": res.m, "n": n, "reps": res.row["reps"],
        "privacy_const": privacy_const, "optimum_const": opt, "privacy_ratio_to_optimum": privacy_const / opt,
        "null_const_emp": null_emp, "null_const_theory": null_theory,
        "null_ratio_emp_to_theory": null_emp / null_theory if pop.nulls else math.nan,
        "null_emp_ratio_to_optimum": null_emp / opt,
        "rr_floor_const": floor, "privacy_ratio_to_rr_floor": privacy_const / floor,
    }


def _privacy_const_f0(oracle: str, epsilon: float, k: int, m: int) -> float:
    """The privacy term of :func:`theory` at f = 0, divided by n."""
    p = make_params(oracle, epsilon, k, m)
    r = (m / (m - 1)) ** 2
    if oracle == "hcms":
        return r * (p.c**2 - 1 / (k * m) - (1 - 1 / k) / m**2)
    return r * (p.c**2 - 1) / 4


# -- output -------------------------------------------------------------------------------------------
def format_sweep(name: str, rows: list[dict[str, Any]]) -> str:
    head = (f"{'oracle':6} {'eps':>4} {'k':>4} {'m':>5}  {'RMSE top emp':>12} {'theory':>9}  {'RMSE all emp':>12} "
            f"{'theory':>9}  {'Var emp/theory':>15} {'top':>5} {'null':>5}  {'collision':>9}  {'bias z':>6}  "
            f"{'SE²/th':>6}")
    lines = [f"== error vs {name} ==", head]
    for r in rows:
        lines.append(
            f"{r['oracle']:6} {r['epsilon']:4g} {r['k']:4d} {r['m']:5d}  {r['rmse_emp_top']:12.1f} "
            f"{r['rmse_theory_top']:9.1f}  {r['rmse_emp_all']:12.1f} {r['rmse_theory_all']:9.1f}  "
            f"{r['var_ratio_all']:7.3f} ±{r['var_ratio_all_se']:6.3f} {r['var_ratio_top']:5.2f} "
            f"{r['var_ratio_null']:5.2f}  {r['theory_collision_all'] / r['var_theory_all']:9.1%}  "
            f"{r['bias_z_rms']:6.2f}  {r['se2_ratio_all']:6.3f}")
    return "\n".join(lines)


def format_optimum(rows: list[dict[str, Any]]) -> str:
    head = (f"{'oracle':6} {'eps':>4}  {'privacy Var/n':>13} {'optimum':>9} {'ratio':>7}  "
            f"{'null Var/n emp':>14} {'theory':>9} {'emp/th':>6} {'emp/opt':>8}  {'ratio to RR floor':>17}")
    lines = ["== per-user privacy noise vs the LDP optimum 4e^ε/(e^ε−1)² ==", head]
    for r in rows:
        lines.append(
            f"{r['oracle']:6} {r['epsilon']:4g}  {r['privacy_const']:13.4g} {r['optimum_const']:9.4g} "
            f"{r['privacy_ratio_to_optimum']:7.3f}  {r['null_const_emp']:14.4g} {r['null_const_theory']:9.4g} "
            f"{r['null_ratio_emp_to_theory']:6.3f} {r['null_emp_ratio_to_optimum']:8.3f}  "
            f"{r['privacy_ratio_to_rr_floor']:17.3f}")
    return "\n".join(lines)


def _value_ticks(ax: Any, values: Sequence[float]) -> None:
    """x ticks at the swept values, labelled as plain numbers (not 2^i)."""
    ticks = sorted(set(values))
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{v:g}" for v in ticks])
    from matplotlib.ticker import NullLocator

    ax.xaxis.set_minor_locator(NullLocator())


def plot_sweep(path: Path, rows: list[dict[str, Any]], x: str, pop: Population, title: str, top: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.8))
    colors = {"cms": "tab:blue", "hcms": "tab:orange"}
    for oracle in ORACLES:
        rs = sorted((r for r in rows if r["oracle"] == oracle), key=lambda r: r[x])
        if not rs:
            continue
        xs = [r[x] for r in rs]
        for which, style, marker in (("all", "-", "o"), ("top", "--", "s")):
            label = "all items" if which == "all" else f"top {top} items"
            ax.plot(xs, [r[f"rmse_theory_{which}"] for r in rs], style, color=colors[oracle],
                    label=f"{oracle.upper()} {label}: theory")
            ax.plot(xs, [r[f"rmse_emp_{which}"] for r in rs], marker, color=colors[oracle], mfc="none",
                    label=f"{oracle.upper()} {label}: simulation")
    if x == "epsilon":
        import numpy as np

        grid = np.geomspace(min(r["epsilon"] for r in rows), max(r["epsilon"] for r in rows), 100)
        ax.plot(grid, [math.sqrt(pop.n * optimum_constant(e)) for e in grid], ":", color="gray",
                label="LDP optimum √(n·4e^ε/(e^ε−1)²)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _value_ticks(ax, [r[x] for r in rows])
    ax.set_xlabel({"epsilon": "ε", "m": "width m", "k": "number of hash functions k"}[x])
    ax.set_ylabel("RMSE of the count estimate (users)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_optimum(path: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.8))
    colors = {"cms": "tab:blue", "hcms": "tab:orange"}
    eps_all = [r["epsilon"] for r in rows]
    grid = np.geomspace(min(eps_all), max(eps_all), 100)
    for oracle in ORACLES:
        rs = sorted((r for r in rows if r["oracle"] == oracle), key=lambda r: r["epsilon"])
        if not rs:
            continue
        k, m = rs[0]["k"], rs[0]["m"]
        ax.plot(grid, [_privacy_const_f0(oracle, e, k, m) / optimum_constant(e) for e in grid], "-",
                color=colors[oracle], label=f"{oracle.upper()} privacy term / optimum (theory)")
        ax.plot([r["epsilon"] for r in rs], [r["null_emp_ratio_to_optimum"] for r in rs], "o", mfc="none",
                color=colors[oracle], label=f"{oracle.upper()} null item Var/n / optimum (simulation, + collisions)")
    ax.plot(grid, [rr_floor_constant(e) / optimum_constant(e) for e in grid], ":", color="gray",
            label="binary RR floor (single item) / optimum = 1/4")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _value_ticks(ax, eps_all)
    ax.set_xlabel("ε")
    ax.set_ylabel("per-user variance / (4e^ε/(e^ε−1)²)")
    ax.set_title("Per-user noise relative to the LDP frequency-oracle optimum", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main ---------------------------------------------------------------------------------------------
def sweep_settings(args: argparse.Namespace, sweep: str) -> list[tuple[float, int, int]]:
    if sweep == "epsilon":
        return [(e, args.k, args.m) for e in args.epsilons]
    if sweep == "m":
        return [(args.epsilon, args.k, m) for m in args.ms]
    return [(args.epsilon, k, args.m) for k in args.ks]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots):
        return 2
    try:
        for sweep in args.sweeps:
            for oracle in args.oracles:
                for eps, k, m in sweep_settings(args, sweep):
                    make_params(oracle, eps, k, m, 0 if args.fixed_hash_seed else HASH_SEED_STEP * (args.reps - 1))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    pop = make_population(args.n, args.vocab, args.zipf, args.null_items, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    cache: dict[tuple[str, float, int, int], SettingResult] = {}
    item_rows: list[dict[str, Any]] = []
    tables: list[str] = []
    by_sweep: dict[str, list[dict[str, Any]]] = {}
    settings = dict.fromkeys((oracle, *s) for sweep in args.sweeps for oracle in args.oracles
                             for s in sweep_settings(args, sweep))
    with progress(len(settings), "apple_sketches", False if args.quiet else None, unit="setting") as bar:
        for key in settings:
            cache[key] = run_setting(*key, pop, args.reps, args.seed, args.hcms_sim, args.fixed_hash_seed, args.top)
            oracle, eps, k, m = key
            note = f"  {oracle} ε={eps:g} k={k} m={m}: {cache[key].row['seconds']:.1f} s"
            (bar.write if bar else print)(note, file=sys.stderr)  # above the bar, or a plain line
            bar.update(1)
    for sweep in args.sweeps:
        rows = []
        for oracle in args.oracles:
            for eps, k, m in sweep_settings(args, sweep):
                res = cache[(oracle, eps, k, m)]
                rows.append(res.row)
                truth = pop.truth
                for i, item in enumerate(pop.candidates):
                    item_rows.append({"sweep": sweep, "oracle": oracle, "epsilon": eps, "k": k, "m": m, "item": item,
                                      "rank": i + 1 if i < len(pop.words) else 0, "true_count": int(truth[i]),
                                      "var_emp": res.var_emp[i], "var_theory": res.var_theory[i],
                                      "mean_error": res.mean_error[i]})
        by_sweep[sweep] = rows
        write_csv(args.out / f"error_vs_{sweep}.csv", SWEEP_COLUMNS, rows)
        tables.append(format_sweep({"epsilon": "ε"}.get(sweep, sweep), rows))
    write_csv(args.out / "per_item.csv", ITEM_COLUMNS, item_rows)
    opt_rows: list[dict[str, Any]] = []
    if "epsilon" in by_sweep:
        opt_rows = [optimum_row(cache[(r["oracle"], r["epsilon"], r["k"], r["m"])], pop) for r in by_sweep["epsilon"]]
        write_csv(args.out / "ratio_to_optimum.csv", OPTIMUM_COLUMNS, opt_rows)
        tables.append(format_optimum(opt_rows))

    if not args.no_plots:
        common = f"n={pop.n}, {len(pop.words)} words, Zipf s={args.zipf:g}, {args.reps} reps"
        for sweep, rows in by_sweep.items():
            fixed = {"epsilon": f"k={args.k}, m={args.m}", "m": f"ε={args.epsilon:g}, k={args.k}",
                     "k": f"ε={args.epsilon:g}, m={args.m}"}[sweep]
            plot_sweep(args.out / f"error_vs_{sweep}.png", rows, sweep, pop,
                       f"CMS/HCMS error vs {sweep} ({fixed}; {common})", args.top)
        if opt_rows:
            plot_optimum(args.out / "ratio_to_optimum.png", opt_rows)

    elapsed = time.perf_counter() - start
    top_share = pop.counts[: args.top].sum() / pop.n
    print(f"population: n={pop.n}, {len(pop.words)} words (Zipf s={args.zipf:g}; top {args.top} hold "
          f"{top_share:.1%}), {len(pop.nulls)} null items; {args.reps} repetitions per setting, new hash family "
          f"each{' (NO: --fixed-hash-seed)' if args.fixed_hash_seed else ''}")
    print("Var emp/theory: mean empirical variance / mean exact variance over all words (± s.e.), the top "
          f"{args.top}, and null items;\ncollision: share of the hash-collision term in the exact variance; "
          "bias z: RMS over items of mean error / its s.e. (≈1 if unbiased);\nSE²/th: the decoder's mean "
          "reported std_error² / the exact variance (all words)\n")
    print("\n\n".join(tables))
    print(f"\n{len(cache)} settings x {args.reps} reps: {elapsed:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
