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

from ldp.cli.compare import add_compare_arguments  # noqa: F401  (re-exported)
from ldp.compare.counting import (
    CountingSetup,
    central_noise_sd,
    protocol_rows,
    seed004_errors,
    seed004_rows,
    seed004_slopes,
)
from ldp.display.tables import Column, render as render_table
from ldp.extras import install_hint
from ldp.simulation.collect import write_rows_csv

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
    """The full run (20-26 s on 2 cores) or the quick one (about 3 s); ``trials`` overrides every repetition
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
    is a terminal; :mod:`ldp.display.progress`)."""
    if plots and out_dir is None:
        raise ValueError("plots need an output folder (out_dir)")
    if plots and importlib.util.find_spec("matplotlib") is None:
        raise ValueError(f"plots need matplotlib: {install_hint('matplotlib', 'plot')}")
    start = time.perf_counter()
    st = settings(quick, trials)
    from ldp.compare.regression import RegressionSetup, multiplier_rows, regression_rows  # scikit-learn: fitting
    from ldp.display.progress import progress as progress_bar

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
    result: dict[str, Any] = {"tables": tables, "summary": _headline(tables, cs, st), "files": files,
              "settings": {"quick": quick, "seed": seed, **st.__dict__}}
    result["seconds"] = time.perf_counter() - start
    result["text"] = render(result)
    return result


# -- the printable summary -------------------------------------------------------------------------------
THESIS = ("the smoker survey of an introductory thesis on",
          "differential privacy and its practicability (§3.2, Figures 3.6 and 3.8)")
NAMES = {  # what the user reads for each central mechanism and method (a local protocol: LocalProtocol.name)
    "laplace": "Laplace", "gaussian": "Gaussian", "local": "local (noisy statistics)",
    "central_gaussian": "central Gaussian", "ssp": "central SSP", "adassp": "central AdaSSP",
    "ols": "no privacy (OLS)",
}
NOT_REACHED = "-"  # a multiplier the simulated local curve did not reach


def _g(v: Any, digits: int = 3) -> str:
    return NOT_REACHED if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def _decade(x: float) -> bool:
    return abs(math.log10(x) - round(math.log10(x))) < 1e-9


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def _size(n: float) -> str:
    """A number of people as ``1,000`` (not ``1e+03``)."""
    return f"{int(n):,}" if float(n).is_integer() else _g(n)


def _grid(title: str, rows: list[dict[str, Any]], key: str, col: str, cell: Any, head: Any = _size,
          decades: bool = False, name: str = "") -> str:
    """A table: one line per ``key``, one column per ``col`` value (only powers of 10 if ``decades``),
    each headed ``head(value)``; ``name`` heads the first column."""
    cols = sorted(c for c in {r[col] for r in rows} if not decades or _decade(c))
    keys = list(dict.fromkeys(r[key] for r in rows))
    by = {(r[key], r[col]): r for r in rows}
    columns = [Column(name or key, align="left")] + [Column(head(c), cell, width=10) for c in cols]
    return render_table(columns, ([str(k)] + [by.get((k, c)) for c in cols] for k in keys), title=title, indent="  ")


def _legend(*lines: str) -> str:
    """The lines that explain a table's columns, and a blank line after them."""
    return "\n".join(("  Columns: " if i == 0 else "    ") + ln for i, ln in enumerate(lines)) + "\n"


def _names(cs: CountingSetup) -> dict[str, str]:
    """:data:`NAMES` and the names of the setup's local protocols."""
    return {**NAMES, **{lp.protocol: lp.name for lp in cs.local()}}


def _protocol_label(r: dict[str, Any], names: dict[str, str]) -> str:
    what = "yes/no" if r["domain"] == 2 else f"{r['domain']} values"
    return f"{names[r['protocol']]}, {what} ({r['kind']})"


def render(result: dict[str, Any]) -> str:
    """A text summary of :func:`run_compare`'s result: every table with a legend of its columns."""
    t, s, st = result["tables"], result["summary"], result["settings"]
    cs = CountingSetup()  # run_compare's populations
    names = _names(cs)
    run = "quick run: fewer sizes and repetitions" if st.get("quick") else "full run"
    parts = [f"Local against central differential privacy, measured by simulation ({run}, seed {st.get('seed')}).",
             "Local: every person randomizes their own answer before sending it, so no one is trusted.",
             "Central: a trusted curator sees the true answers and adds noise once to what it publishes.",
             ""]
    parts += _smokers_section(t, names)
    parts += _protocols_section(t, s, st, cs, names)
    parts += _regression_section(t, names)
    if result["files"]:
        parts.append(f"wrote {len(result['files'])} files to {Path(result['files'][0]).parent}")
    parts.append(f"({result['seconds']:.1f} s)")
    return "\n".join(parts)


def _smokers_section(t: dict[str, Any], names: dict[str, str]) -> list[str]:
    """Section 1: counting smokers, randomized response against Laplace noise: how the error grows with n0."""
    parts = [f"1. Counting smokers, local vs central: {THESIS[0]}",
             f"   {THESIS[1]}.",
             "   Of 3,000 people 20% smoke; n0 of them are asked. The share of smokers is estimated by randomized",
             "   response with fair coins (local) or from the exact count plus Laplace noise Lap(1/ε) (central),",
             "   both at ε = ln 3 ≈ 1.1.",
             ""]
    parts.append(render_table(
        [Column("mechanism", align="left"), Column("estimate", align="left"), Column("slope", "+.3f"),
         Column("± SE", ".3f"), Column("theory", "+.1f")],
        ([names[r["mechanism"]], "count" if r["scale"] == "count" else "share", r["slope"], r["slope_se"],
          r["theory_slope"]] for r in t["seed004_slopes"]),
        title="  How the error grows with the number asked:", indent="  "))
    parts.append(_legend(
        "mechanism: randomized response (local) or Laplace noise on the exact count (central);",
        "estimate: count = number of smokers, share = fraction of smokers (count / n0);",
        "slope: how the simulated error scales with n0 (slope of log RMSE against log n0: +0.5 = grows",
        "like √n0, -1 = shrinks like 1/n0); ± SE: its standard error; theory: the slope theory predicts."))
    picks = {5, 100, 1000, 3000}
    parts.append(_grid("  Error of the smoker share, by the number n0 of people asked:",
                       [dict(r, label=names[r["mechanism"]]) for r in t["seed004_errors"] if r["n"] in picks],
                       "label", "n", lambda r: f"{_g(r['rmse_fraction'], 2)}/{_g(r['theory_sd_fraction'], 2)}",
                       head=lambda n: f"n0={_size(n)}", name="mechanism"))
    parts.append(_legend(
        "n0=…: people asked; each cell: simulated / theory, the root mean squared error of the estimated",
        "share over the repetitions / its theoretical standard deviation (a share: 0.01 = 1 percentage point)."))
    return parts


def _protocols_section(t: dict[str, Any], s: dict[str, Any], st: dict[str, Any], cs: CountingSetup,
                       names: dict[str, str]) -> list[str]:
    """Section 2: every protocol against central noise on the same counts, by n and by ε, and the users local DP
    needs to match central Laplace."""

    def cell(r: dict[str, Any]) -> str:
        return f"{_g(r['rmse_fraction'], 2)}/{_g(r['theory_se_fraction'], 2)}"

    parts = ["2. Every protocol of the toolkit against central noise on the same counts: a yes/no attribute",
             f"   ({cs.binary_fraction:.0%} yes) and {cs.d} values with Zipf frequencies. The central noise "
             "protects one person's",
             "   answer being replaced by another, as local DP does."]
    for sweep, col, what, head in (
            ("n", "n", f"at ε = {st['epsilon']:g}, by the number n of users", lambda n: f"n={_size(n)}"),
            ("epsilon", "epsilon", f"with n = {st['n_epsilon']:,} users, by ε", lambda e: f"ε={e:g}")):
        rows = [dict(r, label=_protocol_label(r, names)) for r in t["counting"] if r["sweep"] == sweep]
        parts.append("")
        parts.append(_grid(f"  SE of a fraction {what}:", rows, "label", col, cell, head=head,
                           decades=sweep == "n", name="protocol"))
    parts.append(_legend(
        "protocol: the local protocol (GRR = generalized randomized response; CMS, HCMS = Apple's count",
        f"mean sketches) or the central mechanism, and what is counted (yes/no: one count; {cs.d} values: a",
        "histogram); n=… or ε=…: the number of users, or the privacy level ε (smaller = more private;",
        f"the Gaussian mechanism also has δ = {cs.delta:g});",
        "each cell: simulated / theory, the standard error of an estimated fraction (count / n) measured over",
        "the repetitions / the exact value from the decoder's variance or the noise's SD."))
    parts.append(render_table(
        [Column("protocol", align="left"), Column("variance per user", ".3g"), Column("Laplace SD", ".3g"),
         Column("users needed", ".3g")],
        ([names[p], c["per_user_variance"], c["laplace_sd_count"], c[f"n_local_for_central_{REFERENCE_N}"]]
         for p, c in s["counting"].items()), indent="  ",
        title=f"  Users local DP needs to match central Laplace's fraction error at n_C = {REFERENCE_N:,} users "
              f"(ε = {st['epsilon']:g}):"))
    parts.append(_legend(
        f"variance per user: the local estimate's count variance divided by n (at n = {s['counting_at_n']:,});",
        "Laplace SD: the central count's noise SD; users needed: n_L = variance per user · n_C² / Laplace SD²,",
        f"the number of users local DP needs for the error central DP has with {REFERENCE_N:,}."))
    return parts


def _regression_section(t: dict[str, Any], names: dict[str, str]) -> list[str]:
    """Section 3: linear regression, local against central: the coefficients' error by n, and the multiplier of
    users local DP needs."""
    reg = t["regression"][0]
    parts = [f"3. Linear regression at ε = {reg['epsilon']:g}, δ = {reg['delta']:g}: each user sends noisy "
             "sufficient statistics (local),",
             "   or a curator fits on everyone's exact data and adds noise once (central).",
             ""]
    parts.append(_grid("  Linear regression: error of the coefficients by the number n of users:",
                       [dict(r, label=names[r["method"]]) for r in t["regression"]], "label", "n",
                       lambda r: f"{_g(r['mse'], 2)} ({_g(r['theory_mse'], 2)})", head=lambda n: f"n={_size(n)}",
                       decades=True, name="method"))
    parts.append(_legend(
        "method: local, central (Gaussian noise on the statistics, SSP, AdaSSP) or no privacy;",
        "noise: simulation noise (numpy floating point), on both sides;",
        "each cell: simulated (theory), the mean squared error ‖θ̂ − θ‖² of the fitted coefficients over the",
        f"repetitions (predicting θ = 0 scores ‖θ‖² = {reg['trivial_mse']:.2g}), and in brackets its first-order "
        "theory."))
    parts.append(_grid("  Users local DP needs for the MSE of central DP with n_C users (multiplier n_L/n_C):",
                       [dict(r, label=names[r["central"]]) for r in t["multiplier"]
                        if _decade(r["n_central"]) or _finite(r["multiplier"])],
                       "label", "n_central", lambda r: f"{_g(r['multiplier'])}/{_g(r['theory_multiplier'])}",
                       head=lambda n: f"n_C={_size(n)}", name="central method"))
    n_max = max((r["n"] for r in t["regression"]), default=0)
    parts.append(_legend(
        "n_C=…: users of the central method; each cell: simulated / theory, how many times more users the",
        "local method needs for the same error (n_L / n_C); simulated by interpolating the local curve,",
        f"\"{NOT_REACHED}\" when the local error never got that low within the users simulated (up to "
        f"{_size(n_max)})."))
    return parts


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
    ``ValueError``, which :func:`ldp.cli.command` reports as ``ldp compare: error: …`` (status 2)."""
    plots = args.plots
    if plots and args.out is None:
        raise ValueError("--plots needs --out DIR")
    if plots is None:
        plots = args.out is not None and importlib.util.find_spec("matplotlib") is not None
    elif plots and importlib.util.find_spec("matplotlib") is None:
        raise ValueError(f"plots need matplotlib: {install_hint('matplotlib', 'plot')}; or leave out --plots")
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
