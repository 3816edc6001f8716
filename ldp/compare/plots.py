"""The comparison's figures (matplotlib, imported only here): simulation as points, theory as lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ldp.compare.counting import CountingSetup
from ldp.compare.regression import RegressionSetup

__all__ = ["write_plots"]

DPI = 100
# the central mechanisms' and regression methods' (a local protocol's: LocalProtocol.color and .label)
COLORS = {"laplace": "tab:red", "gaussian": "tab:orange", "local": "tab:blue", "central_gaussian": "tab:orange",
          "ssp": "tab:red", "adassp": "tab:brown", "ols": "black"}
LABELS = {"laplace": "central Laplace", "gaussian": "central Gaussian", "local": "local Gaussian (per user)",
          "central_gaussian": "central Gaussian (same release, once)", "ssp": "SSP", "adassp": "AdaSSP",
          "ols": "OLS (not private)"}


def _styles(cs: CountingSetup) -> tuple[dict[str, str], dict[str, str]]:
    """:data:`COLORS` and :data:`LABELS` with the colours and labels of the setup's local protocols."""
    local = cs.local()
    return {**COLORS, **{lp.protocol: lp.color for lp in local}}, {**LABELS, **{lp.protocol: lp.label for lp in local}}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> None:
    """Save at :data:`DPI` as a small palette PNG (:func:`ldp.simulation.save_png`)."""
    from ldp.simulation.collect import save_png

    save_png(fig, path, DPI)


def _seed004(path: Path, tables: dict[str, list[dict[str, Any]]], cs: CountingSetup) -> None:
    plt = _plt()
    colors, labels = _styles(cs)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    series = tables["seed004_series"]
    for ax, mech, title in ((axes[0], "rr", "randomized response (fair coins), cf. Fig. 3.6"),
                            (axes[1], "laplace", "Laplace Lap(1/ε) on the count, cf. Fig. 3.8")):
        rs = [r for r in series if r["mechanism"] == mech]
        n = np.array([r["n"] for r in rs])
        sd = np.array([r["theory_sd_fraction"] for r in rs])
        ax.fill_between(n, 0.2 - 2 * sd, 0.2 + 2 * sd, color="0.85", label="0.2 ± 2 SD (theory)")
        ax.plot(n, [r["estimate_fraction"] for r in rs], ".", ms=2.5, color=colors[mech], label="estimate")
        ax.axhline(0.2, color="black", lw=0.8)
        ax.set_ylim(-0.6, 1.0)
        ax.set_xlabel("participants n0")
        ax.set_ylabel("estimated fraction of smokers")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    ax = axes[2]
    errors = tables["seed004_errors"]
    for mech in ("rr", "laplace"):
        rs = [r for r in errors if r["mechanism"] == mech]
        sizes = [r["n"] for r in rs]
        ax.plot(sizes, [r["rmse_fraction"] for r in rs], ".", ms=2.5, color=colors[mech],
                label=f"{labels[mech]}: RMSE over {rs[0]['trials']} runs")
        ax.plot(sizes, [r["theory_sd_fraction"] for r in rs], "-", color="black", lw=0.8)
    ax.plot([], [], "-", color="black", lw=0.8, label="theory: RR ∝ 1/√n0, Laplace √2/(ε·n0)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("participants n0")
    ax.set_ylabel("error of the fraction")
    ax.set_title("error vs n (ε = ln 3)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


def _counting(path: Path, rows: list[dict[str, Any]], sweep: str, cs: CountingSetup) -> None:
    plt = _plt()
    colors, labels = _styles(cs)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, binary in zip(axes, (True, False), strict=True):
        sel = [r for r in rows if r["sweep"] == sweep and (r["domain"] == 2) == binary]
        for proto in dict.fromkeys(r["protocol"] for r in sel):
            rs = sorted((r for r in sel if r["protocol"] == proto), key=lambda r: r[sweep])
            x = [r[sweep] for r in rs]
            ax.plot(x, [r["theory_se_fraction"] for r in rs], "-" if rs[0]["kind"] == "local" else "--",
                    color=colors[proto], lw=1)
            ax.plot(x, [r["rmse_fraction"] for r in rs], "o", mfc="none", ms=5, color=colors[proto],
                    label=labels[proto])
        ax.plot([], [], "-", color="gray", lw=1, label="theory (local: exact variance)")
        ax.plot([], [], "--", color="gray", lw=1, label="theory (central: noise SD)")
        ax.set_xscale("log", base=10 if sweep == "n" else 2)
        ax.set_yscale("log")
        ax.set_xlabel("users n" if sweep == "n" else "ε")
        ax.set_ylabel("standard error of a fraction")
        fixed = f"ε = {sel[0]['epsilon']:g}" if sweep == "n" else f"n = {sel[0]['n']}"
        what = "binary attribute (20% yes)" if binary else f"{cs.d} values, Zipf {cs.zipf_s:g}"
        ax.set_title(f"{what}, {fixed}; central: replace-one, δ = {cs.delta:g}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        low = min(min(r["rmse_fraction"], r["theory_se_fraction"]) for r in sel)
        ax.set_ylim(bottom=low / 30)  # room for the legend below the curves
        ax.legend(fontsize=7, loc="lower left", ncol=2)
    fig.tight_layout()
    _save(fig, path)


def _regression(path: Path, rows: list[dict[str, Any]], mult: list[dict[str, Any]], rs: RegressionSetup) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ax = axes[0]
    for method in dict.fromkeys(r["method"] for r in rows):
        sel = sorted((r for r in rows if r["method"] == method), key=lambda r: r["n"])
        n = [r["n"] for r in sel]
        ax.plot(n, [r["theory_mse"] for r in sel], "-", color=COLORS[method], lw=1)
        ax.plot(n, [r["mse"] for r in sel], "o", mfc="none", ms=5, color=COLORS[method], label=LABELS[method])
    ax.axhline(rs.theta_norm**2, color="gray", ls=":", label="θ̂ = 0")
    ax.plot([], [], "-", color="gray", lw=1, label="first-order theory")
    ax.set_ylim(min(r["mse"] for r in rows) / 100, 4 * rs.theta_norm**2)  # room for the legend below
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("users n")
    ax.set_ylabel("mean ‖θ̂ − θ‖²")
    ax.set_title(f"linear regression, d = {rs.d}, (ε, δ) = ({rs.epsilon:g}, {rs.delta:g}), replace-one", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower left", ncol=2)
    ax = axes[1]
    for central in dict.fromkeys(r["central"] for r in mult):
        sel = sorted((r for r in mult if r["central"] == central), key=lambda r: r["n_central"])
        n = [r["n_central"] for r in sel]
        ax.plot(n, [r["theory_multiplier"] for r in sel], "-", color=COLORS[central], lw=1)
        ax.plot(n, [r["multiplier"] for r in sel], "o", mfc="none", ms=6, color=COLORS[central],
                label=f"vs {LABELS[central]}")
    ax.plot([], [], "-", color="gray", lw=1, label="theory n_L/n_C = (S + A_L)/(S·n_C + A_C)·n_C")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("users of central DP, n_C")
    ax.set_ylabel("users local DP needs / n_C")
    ax.set_title("equal accuracy: the n multiplier (points: interpolated simulation)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)


def write_plots(out: Path, tables: dict[str, list[dict[str, Any]]], cs: CountingSetup,
                rs: RegressionSetup) -> list[Path]:
    """``compare-seed004.png``, ``compare-counting-n.png``, ``compare-counting-epsilon.png``,
    ``compare-regression.png`` in ``out``."""
    paths = [out / "compare-seed004.png", out / "compare-counting-n.png", out / "compare-counting-epsilon.png",
             out / "compare-regression.png"]
    _seed004(paths[0], tables, cs)
    _counting(paths[1], tables["counting"], "n", cs)
    _counting(paths[2], tables["counting"], "epsilon", cs)
    _regression(paths[3], tables["regression"], tables["multiplier"], rs)
    return paths
