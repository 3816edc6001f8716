"""``ldp demo --plots DIR``: one figure per question, estimates with their CIs beside the truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

TITLES = {
    "dark_mode": "Dark mode on? (randomized response)",
    "app_category": "Most-used app category (GRR)",
    "homepage": "Homepage URL (RAPPOR)",
    "emoji_cms": "Emoji (Count Mean Sketch)",
    "emoji_hcms": "Emoji (Hadamard CMS)",
    "new_words": "New words (Sequence Fragment Puzzle)",
    "app_category_at_scale": "App category at 10^8 users (aggregate-level)",
    "minutes_histogram": "Sunday's minutes of use (bucketized GRR)",
}


def write_plots(result: dict[str, Any], out_dir: str | Path, max_items: int = 15) -> list[Path]:
    """Write ``demo-<question>.png`` for every question (and the regression curves); returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for key, title in TITLES.items():
        est = result["estimates"][key]
        k = min(len(est.items), max_items)
        y = np.arange(k)[::-1]
        truth = est.columns()["true_count"][:k]
        fig, ax = plt.subplots(figsize=(7, 0.35 * k + 1.4))
        ax.barh(y, truth, color="#c8d6e5", label="truth")
        ax.errorbar(est.count[:k], y, xerr=[est.count[:k] - est.ci_low[:k], est.ci_high[:k] - est.count[:k]],
                    fmt="o", color="#c0392b", ms=4, capsize=3, label=f"estimate, {round(100 * est.confidence)}% CI")
        ax.set_yticks(y, [str(s) for s in est.items[:k]])
        ax.set_xlabel("users")
        ax.set_title(f"{title}, n = {est.n:,}")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        path = out / f"demo-{key.replace('_', '-')}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    reg = result["regression"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in reg["curves"].items():
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", label=label)
    ax.set_xlabel("users n")
    ax.set_ylabel("mean squared error of the coefficients")
    ax.set_title(f"Linear regression, ε = {reg['epsilon']:g}, δ = {reg['delta']:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "demo-regression.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return paths + [path, _minutes_plot(result["minutes"], out, plt)]


def _minutes_plot(part: dict[str, Any], out: Path, plt: Any) -> Path:
    """The week's daily means with their CIs beside the truth."""
    days = part["days"]
    x = np.arange(len(days))
    est = np.array([d["mean"] for d in days])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(x, [d["true_mean"] for d in days], "s", color="#8395a7", label="true mean")
    ax.errorbar(x, est, yerr=[est - [d["ci_low"] for d in days], [d["ci_high"] for d in days] - est], fmt="o",
                color="#c0392b", capsize=3, label="estimate, 95% CI")
    ax.set_xticks(x, [d["day"] for d in days])
    ax.set_ylabel("minutes of use (mean)")
    ax.set_title(f"Daily minutes, {part['protocol']} at ε = {part['epsilon']:g}, n = {part['n']:,}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "demo-minutes.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
