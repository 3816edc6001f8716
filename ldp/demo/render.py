"""The demo's printed report: one compact table per question, truth beside estimate."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.decoders.results import Estimates
from ldp.demo.minutes import CAP, render_minutes
from ldp.display.tables import Column, format_value, render as render_table


def compact(est: Estimates, max_rows: int = 10) -> str:
    """``item, true, estimate, 95% CI, in CI`` (and ``detected`` where the decoder tests)."""
    cols = est.columns()
    ci = lambda lo_hi: "[{}, {}]".format(*(format_value(x, ",.0f", "-") for x in lo_hi))  # noqa: E731
    columns = [Column("item", align="left"), Column("true", ",.0f", missing="-"),
               Column("estimate", ",.0f", missing="-"), Column(f"{round(100 * est.confidence)}% CI", ci),
               Column("in CI", lambda c: "yes" if c else "NO")]
    values = [est.items, cols["true_count"], est.count, zip(est.ci_low, est.ci_high, strict=True),
              [bool(c) for c in cols["covered"]]]
    if "detected" in cols:
        columns.append(Column("detected"))
        values.append(cols["detected"])
    lines = [render_table(columns, zip(*values, strict=True), max_rows=max_rows, more="... {} more")]
    covered = np.asarray(cols["covered"], dtype=bool)
    lines.append(f"{int(covered.sum())} of {covered.size} true counts inside their {round(100 * est.confidence)}% CI")
    return "\n".join("    " + ln for ln in "\n".join(lines).split("\n"))


def render(result: dict[str, Any]) -> str:
    """Human-readable demo report."""
    out = [
        f"ldp demo{' --quick' if result['quick'] else ''}: simulated collections with every protocol "
        f"({result['seconds']['total']:.1f} s)",
        "",
        *_devices_section(result), "",
        *_emoji_section(result), "",
        *_words_section(result), "",
        *_regression_section(result), "",
        *_scale_section(result), "",
        *_minutes_section(result), "",
        "Next: `ldp plan --recommend --epsilon 1 --d 1000` picks a protocol (`--recommend --mean` a mean "
        "mechanism); `ldp compare` runs the full local-vs-central comparison; `ldp demo --plots DIR` draws these "
        "tables.",
    ]
    return "\n".join(out)


def _devices_section(result: dict[str, Any]) -> list[str]:
    """1. The devices with their ledgers: what was sent, refused and rejected, the three questions, the ε spent."""
    est, p, sec = result["estimates"], result["privacy"], result["seconds"]
    rejected = "; ".join(f"{metric}: " + ", ".join(f"{n} {reason}" for reason, n in sorted(why.items()))
                         for metric, why in result["rejected"].items() if why)
    return [
        f"1. {result['n_clients']:,} devices, each with its own budget ledger, answer three questions "
        f"({sec['clients']:.1f} s)",
        f"   reports sent: {result['reports_sent']:,}; refused by a device's budget (a second report the same "
        f"day): {result['reports_refused_by_budget']}; rejected by the server: {rejected or 'none'}",
        "",
        f"   Dark mode on?  binary randomized response with fair coins, ε = {p['per_report']['dark_mode']:.4g} (ln 3)",
        compact(est["dark_mode"]),
        "",
        f"   Most-used app category?  GRR over {len(est['app_category'].items)} categories, "
        f"ε = {p['per_report']['app_category']:.4g}",
        compact(est["app_category"]),
        "",
        f"   Homepage URL?  RAPPOR, decoded against {len(est['homepage'].items)} candidate URLs, "
        f"ε = {p['per_report']['homepage']:.4g} per report, at most {p['homepage_per_value_lifetime']:.4g} "
        "per URL ever",
        compact(est["homepage"], max_rows=8),
        "",
        f"   Privacy spent today per device: at most ε = {p['per_client_today_max']:.4g} "
        f"(mean {p['per_client_today_mean']:.4g}), under the daily cap of {p['window_cap_all_metrics']:.4g} "
        "across metrics.",
    ]


def _emoji_section(result: dict[str, Any]) -> list[str]:
    """2. The emoji: Count Mean Sketch and Hadamard CMS, sent as binary frames."""
    est, emoji, sec = result["estimates"], result["emoji"], result["seconds"]
    return [
        f"2. Which emoji?  {emoji['reports']:,} reports each for Count Mean Sketch and Hadamard CMS, "
        f"ε = {emoji['epsilon']:g}, sent as binary frames ({sec['emoji']:.1f} s)",
        f"   CMS ({emoji['report_bits']['emoji_cms']} bits a report; the planner predicted a standard error of "
        f"{emoji['planned_std_error']['emoji_cms']:,.0f} for the top emoji)",
        compact(est["emoji_cms"], max_rows=6),
        f"   HCMS ({emoji['report_bits']['emoji_hcms']} bits a report; planned standard error "
        f"{emoji['planned_std_error']['emoji_hcms']:,.0f})",
        compact(est["emoji_hcms"], max_rows=6),
    ]


def _words_section(result: dict[str, Any]) -> list[str]:
    """3. New words found with no dictionary (Sequence Fragment Puzzle)."""
    words = result["words"]
    return [
        f"3. Which new words are people typing?  Sequence Fragment Puzzle, no dictionary, {words['n']:,} users, "
        f"ε = {words['epsilon']:g} per report ({result['seconds']['words']:.1f} s)",
        f"   found {words['stats']['discovered']} words ({words['false_words']} not in the vocabulary); "
        f"recall of the 10 most popular: {words['recall_top10']:.0%}",
        compact(result["estimates"]["new_words"], max_rows=8),
    ]


def _regression_section(result: dict[str, Any]) -> list[str]:
    """4. Linear regression, local against central DP."""
    reg = result["regression"]
    return [
        f"4. Linear regression: local DP against central DP at ε = {reg['epsilon']:g}, δ = {reg['delta']:g} "
        f"({result['seconds']['regression']:.1f} s)",
        reg["table"],
        f"   {reg['takeaway']}",
    ]


def _scale_section(result: dict[str, Any]) -> list[str]:
    """5. The app-category question at scale, drawn exactly at the aggregate level."""
    scale = result["scale"]
    return [
        f"5. The app-category question at {scale['n']:,} users, drawn exactly at the aggregate level "
        f"({result['seconds']['scale'] * 1e3:.0f} ms)",
        compact(result["estimates"]["app_category_at_scale"]),
    ]


def _minutes_section(result: dict[str, Any]) -> list[str]:
    """6. Daily minutes of use for a week: the planner's mean mechanism, and Sunday's histogram."""
    minutes = result["minutes"]
    return [
        f"6. Daily minutes of use, capped at {CAP:g}: {minutes['n']:,} devices, one report a day for a week with "
        f"{minutes['protocol']} at ε = {minutes['epsilon']:.4g} ({result['seconds']['minutes']:.1f} s)",
        "   the planner's choice at this ε (worst-case SE of a day's mean: "
        + ", ".join(f"{name} {se:.3g}" for name, se in minutes["ranking"]) + " minutes)",
        render_minutes(minutes),
        f"   A device spends ε = {minutes['epsilon']:.4g} a day on this metric, {7 * minutes['epsilon']:.4g} over "
        "the week (sequential composition).",
        "   Sunday's minutes as a histogram: GRR over 5 buckets "
        f"(ε = {minutes['histogram_epsilon']:.4g} more that day)",
        compact(result["estimates"]["minutes_histogram"]),
    ]


def to_jsonable(result: dict[str, Any]) -> dict[str, Any]:
    """The result with every :class:`Estimates` as a list of row dicts."""
    out = dict(result)
    out["estimates"] = {k: v.to_dicts() for k, v in result["estimates"].items()}
    return out
