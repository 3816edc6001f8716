"""Run every comparison, write CSVs (and PNGs), and summarize: :func:`run_compare`, the ``ldp compare`` command."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ldp.cli_compare import add_compare_arguments  # noqa: F401  (re-exported)
from ldp.compare.counting import (
    CountingSetup,
    central_noise_sd,
    protocol_rows,
    seed004_errors,
    seed004_rows,
    seed004_slopes,
)
from ldp.simulation import write_rows_csv
from ldp.tables import Column
from ldp.tables import render as render_table

__all__ = ["Settings", "settings", "run_compare", "render", "compare_command", "COLUMNS"]

COLUMNS: dict[str, tuple[str, ...]] = {
    "seed004_series": ("mechanism", "trial", "n", "epsilon", "true_count", "estimate_count", "estimate_fraction",
                       "error_count", "abs_error_fraction", "theory_sd_count", "theory_sd_fraction"),
    "seed004_errors": ("mechanism", "n", "trials", "rmse_count", "theory_sd_count", "rmse_fraction",
                       "theory_sd_fraction", "mean_abs_error_fraction"),
    "seed004_slopes": ("mechanism", "scale", "slope", "theory_slope", "slope_se", "points", "trials"),
    "counting": ("sweep", "protocol", "kind", "domain", "n", "epsilon", "delta", "trials", "items", "rmse_count",
                 "theory_se_count", "rmse_fraction", "theory_se_fraction", "mse_ratio", "mse_ratio_se",
                 "per_user_variance"),
    "regression": ("method", "n", "trials", "noise_draws", "epsilon", "delta", "mse", "mse_se", "theory_mse",
                   "noise_sd_xx", "noise_sd_xy", "trivial_mse"),
    "multiplier": ("central", "n_central", "mse_central", "theory_mse_central", "n_local", "multiplier",
                   "theory_n_local", "theory_multiplier"),
}
REFERENCE_N = 1000  # n_C of the headline multipliers


@dataclass(frozen=True)
class Settings:
    """Sizes of one run (``--quick`` or full)."""

    seed004_step: int
    seed004_trials: int
    ns: tuple[int, ...]
    n_epsilon: int
    epsilon: float
    epsilons: tuple[float, ...]
    trials: int
    regression_ns: tuple[int, ...]
    regression_trials: int
    noise_draws: int


def settings(quick: bool, trials: int | None = None) -> Settings:
    """The full run (~20 s) or the quick one (a few seconds); ``trials`` overrides every repetition
    count (seed-004 runs, runs per protocol setting, regression data sets)."""
    if quick:
        s = Settings(5, 3, (10**3, 10**4, 10**5), 10**4, 1.0, (0.5, 2.0, 8.0), 5, (10**3, 10**4, 10**5, 10**6), 2, 5)
    else:
        s = Settings(5, 20, (10**3, 3 * 10**3, 10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6), 10**4, 1.0,
                     (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), 20,
                     (10**3, 3 * 10**3, 10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6, 3 * 10**6, 10**7), 5, 20)
    if trials is not None:
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 2:
            raise ValueError(f"trials must be an int >= 2, got {trials!r}")
        s = replace(s, seed004_trials=trials, trials=trials, regression_trials=trials)
    return s


def _headline(tables: dict[str, list[dict[str, Any]]], cs: CountingSetup, st: Settings) -> dict[str, Any]:
    """The key numbers: seed-004 slopes, per-user variances and counting multipliers, regression multipliers."""
    out: dict[str, Any] = {"seed004_slopes": {f"{r['mechanism']}_{r['scale']}": r["slope"]
                                              for r in tables["seed004_slopes"]}}
    counting = {}
    at = st.n_epsilon if st.n_epsilon in st.ns else min(st.ns)  # privacy-dominated (sketch collisions grow with n)
    for r in tables["counting"]:
        if r["sweep"] != "n" or r["kind"] != "local" or r["n"] != at:
            continue
        b = central_noise_sd("laplace", r["epsilon"], binary=r["domain"] == 2, relation=cs.relation)
        central = [c for c in tables["counting"] if c["sweep"] == "n" and c["protocol"] == "laplace"
                   and c["domain"] == r["domain"] and c["n"] == r["n"]][0]
        counting[r["protocol"]] = {
            "per_user_variance": r["per_user_variance"], "laplace_sd_count": b,
            "error_ratio_vs_laplace": r["rmse_count"] / central["rmse_count"],
            f"n_local_for_central_{REFERENCE_N}": r["per_user_variance"] * REFERENCE_N**2 / b**2}
    out["counting_at_n"] = at
    out["counting"] = counting
    reg = {}
    for r in tables["multiplier"]:
        if r["n_central"] == REFERENCE_N:
            reg[r["central"]] = {"multiplier": r["multiplier"], "theory_multiplier": r["theory_multiplier"]}
    out[f"regression_multiplier_at_{REFERENCE_N}"] = reg
    return out


def run_compare(*, quick: bool = False, seed: int | None = 0, out_dir: str | Path | None = None,
                plots: bool = False, trials: int | None = None, progress: bool | None = None) -> dict[str, Any]:
    """Run the seed-004 reproduction, the protocol sweeps (vs n at ε = 1 and vs ε) and the regression
    comparison. Returns ``{"tables": {name: rows}, "summary": key numbers, "text": printable summary,
    "files": written paths, "seconds": elapsed}``; writes ``<name>.csv`` (and ``compare-*.png``
    when ``plots``) into ``out_dir``. ``progress``: a bar per table on stderr (``None``: when stderr
    is a terminal; :mod:`ldp.progress`)."""
    if plots and out_dir is None:
        raise ValueError("plots need an output folder (out_dir)")
    if plots and importlib.util.find_spec("matplotlib") is None:
        raise ValueError("plots need matplotlib (pip install matplotlib, or 'ldp[plot]')")
    start = time.perf_counter()
    st = settings(quick, trials)
    from ldp.compare.regression import RegressionSetup, multiplier_rows, regression_rows  # scikit-learn: fitting
    from ldp.progress import progress as progress_bar

    cs, rs = CountingSetup(), RegressionSetup()
    g004, gn, geps, greg = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))
    steps = {  # each with its own generator
        "seed004": lambda: seed004_rows(sizes=np.arange(st.seed004_step, 3001, st.seed004_step),
                                        trials=st.seed004_trials, rng=g004),
        "counting vs n": lambda: protocol_rows(ns=st.ns, epsilons=[st.epsilon], trials=st.trials, rng=gn, setup=cs,
                                               sweep="n"),
        "counting vs ε": lambda: protocol_rows(ns=[st.n_epsilon], epsilons=st.epsilons, trials=st.trials, rng=geps,
                                               setup=cs, sweep="epsilon"),
        "regression": lambda: regression_rows(ns=st.regression_ns, trials=st.regression_trials,
                                              noise_draws=st.noise_draws, rng=greg, setup=rs)}
    done: dict[str, list[dict[str, Any]]] = {}
    with progress_bar(len(steps), "compare", progress, unit="table") as bar:
        for name, step in steps.items():
            bar.set_postfix_str(name)
            done[name] = step()
            bar.update(1)
    raw, regression = done["seed004"], done["regression"]
    errors = seed004_errors(raw)
    counting = done["counting vs n"] + done["counting vs ε"]
    tables = {"seed004_series": [r for r in raw if r["trial"] == 0], "seed004_errors": errors,
              "seed004_slopes": seed004_slopes(errors), "counting": counting, "regression": regression,
              "multiplier": multiplier_rows(regression, rs)}
    files: list[str] = []
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, rows in tables.items():
            write_rows_csv(out / f"{name}.csv", COLUMNS[name], rows)
            files.append(str(out / f"{name}.csv"))
        if plots:
            from ldp.compare.plots import write_plots

            files += [str(p) for p in write_plots(out, tables, cs, rs)]
    result = {"tables": tables, "summary": _headline(tables, cs, st), "files": files,
              "settings": {"quick": quick, "seed": seed, **st.__dict__}}
    result["seconds"] = time.perf_counter() - start
    result["text"] = render(result)
    return result


# -- the printable summary -------------------------------------------------------------------------------
def _g(v: Any, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def _decade(x: float) -> bool:
    return abs(math.log10(x) - round(math.log10(x))) < 1e-9


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def _grid(title: str, rows: list[dict[str, Any]], key: str, col: str, cell: Any, decades: bool = False) -> str:
    """A table: one line per ``key``, one column per ``col`` value (only powers of 10 if ``decades``)."""
    cols = sorted(c for c in {r[col] for r in rows} if not decades or _decade(c))
    keys = list(dict.fromkeys(r[key] for r in rows))
    by = {(r[key], r[col]): r for r in rows}
    columns = [Column(key, align="left", width=20)] + [Column(_g(c), cell, width=18) for c in cols]
    return render_table(columns, ([str(k)] + [by.get((k, c)) for c in cols] for k in keys), title=title,
                        rule=False, sep="")


def render(result: dict[str, Any]) -> str:
    """A compact text summary of :func:`run_compare`'s result."""
    t, s = result["tables"], result["summary"]
    parts = ["Counting smokers, local vs central (the smoker experiment of thesis seed 004): 3,000 people, 20% smoke;",
             "n0 of them answer by randomized response with fair coins (local), or their exact count gets",
             "Laplace noise Lap(1/ε) (central), both at ε = ln 3.",
             "  slope of log RMSE on log n0   (simulated ± its standard error / theory)"]
    for r in t["seed004_slopes"]:
        parts.append(f"  {r['mechanism']:<8} {r['scale']:<9} {r['slope']:+.3f} ± {r['slope_se']:.3f} / "
                     f"{r['theory_slope']:+.1f}")
    picks = {5, 100, 1000, 3000}
    parts.append(_grid("  RMSE of the smoker fraction, simulated / theory, by the number n0 of people asked:",
                       [r for r in t["seed004_errors"] if r["n"] in picks], "mechanism", "n",
                       lambda r: f"{_g(r['rmse_fraction'], 2)}/{_g(r['theory_sd_fraction'], 2)}"))

    def cell(r: dict[str, Any]) -> str:
        return f"{_g(r['rmse_fraction'], 2)}/{_g(r['theory_se_fraction'], 2)}"

    for sweep, col, what in (("n", "n", f"ε = {result['settings']['epsilon']:g}"),
                             ("epsilon", "epsilon", f"n = {result['settings']['n_epsilon']}")):
        rows = [dict(r, label=f"{r['protocol']} (d={r['domain']})") for r in t["counting"] if r["sweep"] == sweep]
        parts.append("")
        parts.append(_grid(f"SE of a fraction, simulated/theory, {what} (central: replace-one):", rows, "label", col,
                           cell, decades=sweep == "n"))
    parts.append(f"\nUsers local DP needs to match central Laplace's fraction error at n_C = {REFERENCE_N} "
                 f"(n_L = per-user variance · n_C² / SD_Laplace²; variances at n = {s['counting_at_n']}):")
    for proto, c in s["counting"].items():
        parts.append(f"  {proto:<8} per-user variance {_g(c['per_user_variance'])}, "
                     f"Laplace SD {_g(c['laplace_sd_count'])}: n_L = {_g(c[f'n_local_for_central_{REFERENCE_N}'])}")
    parts.append("")
    parts.append(_grid("Linear regression: mean ‖θ̂ − θ‖², simulated (first-order theory)", t["regression"], "method",
                       "n", lambda r: f"{_g(r['mse'], 2)} ({_g(r['theory_mse'], 2)})", decades=True))
    parts.append(_grid("Users local DP needs for the MSE of central DP at n_C (multiplier n_L/n_C, simulated / "
                       "theory):", [r for r in t["multiplier"] if _decade(r["n_central"]) or _finite(r["multiplier"])],
                       "central", "n_central", lambda r: f"{_g(r['multiplier'])}/{_g(r['theory_multiplier'])}"))
    if result["files"]:
        parts.append(f"\nwrote {len(result['files'])} files to {Path(result['files'][0]).parent}")
    parts.append(f"({result['seconds']:.1f} s)")
    return "\n".join(parts)


# -- the command line --------------------------------------------------------------------------------
def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def compare_command(args: argparse.Namespace) -> int:
    """``ldp compare``: run :func:`run_compare` and print the summary (or JSON). Bad options raise
    ``ValueError``, which :func:`ldp.cli.main` reports as ``ldp compare: error: …`` (status 2)."""
    plots = args.plots
    if plots and args.out is None:
        raise ValueError("--plots needs --out DIR")
    if plots is None:
        plots = args.out is not None and importlib.util.find_spec("matplotlib") is not None
    elif plots and importlib.util.find_spec("matplotlib") is None:
        raise ValueError("plots need matplotlib (pip install matplotlib, or 'ldp[plot]'); or leave out --plots")
    result = run_compare(quick=args.quick, seed=args.seed, out_dir=args.out, plots=plots, trials=args.trials,
                         progress=False if getattr(args, "log_quiet", False) else None)
    if args.json:
        # the per-n0 seed-004 tables (1,200 rows each) are in the CSVs; their slopes are in the JSON
        tables = {k: v for k, v in result["tables"].items() if k not in ("seed004_series", "seed004_errors")}
        print(json.dumps(_jsonable({"summary": result["summary"], "settings": result["settings"], "tables": tables,
                                    "files": result["files"], "seconds": result["seconds"]})))
    else:
        print(result["text"])
    return 0
