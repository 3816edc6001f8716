"""The demo's numeric metric: daily minutes of use, a mean estimated every day of a week, and its histogram.

Each device has its own habit (a log-normal level) and varies from day to day; values are capped at
240 minutes by the params (``clip=True``: the cap is part of the fingerprint). The mean mechanism is
the planner's recommendation at ε (:func:`ldp.plan.numeric.recommend_mean`); every day's collection is
drawn exactly at the aggregate level (``Aggregate.simulate``), and the last day's values are also
collected as a histogram with bucketized GRR (with 5 buckets it beats dBitFlip at ε = 1:
docs/protocols/histograms.md, "Which to choose").
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from ldp.batch.histogram import bucketize
from ldp.decoders.histogram import BucketGRRAggregate
from ldp.decoders.mean_results import MeanEstimate
from ldp.display.tables import Column, format_value, render
from ldp.encoders.histogram import BucketGRRParams
from ldp.plan.numeric import recommend_mean
from ldp.simulation.numeric import simulate_mean

__all__ = ["CAP", "EDGES", "daily_minutes", "render_minutes"]

CAP = 240.0  # minutes of use a day, the bound of the mean mechanism
EDGES = (0, 15, 30, 60, 120, 240)  # the histogram's buckets, in minutes
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _week(n: int, gen: np.random.Generator) -> np.ndarray:
    """``(7, n)`` daily minutes: a per-device habit, day-to-day noise, more at the weekend."""
    habit = gen.lognormal(np.log(40.0), 0.8, n)
    weekend = np.array([1.0, 1.0, 1.0, 1.0, 1.1, 1.4, 1.5])[:, None]
    week: np.ndarray = habit * weekend * gen.lognormal(0.0, 0.4, (len(DAYS), n))  # above the cap: clipped
    return week


def daily_minutes(n: int, gen: np.random.Generator, epsilon: float) -> dict[str, Any]:
    """A week of daily means of ``n`` devices' minutes of use at ``epsilon`` per daily report, and the last
    day's histogram with bucketized GRR at ``epsilon``."""
    t0 = time.perf_counter()
    ranking = recommend_mean(epsilon, n=n, low=0.0, high=CAP)
    params = replace(ranking[0].params, clip=True)
    week = _week(n, gen)
    days = []
    for name, values in zip(DAYS, week, strict=True):
        est: MeanEstimate = simulate_mean(params, values, rng=gen).estimate()
        est = est.with_truth(float(np.minimum(values, CAP).mean()))
        days.append({"day": name, **est.row()})
    hist = BucketGRRParams(epsilon, EDGES, clip=True)
    truth = np.bincount(bucketize(hist, week[-1]), minlength=hist.num_buckets)
    est_hist = BucketGRRAggregate.simulate(hist, truth, gen).estimate().with_truth(truth.tolist())
    return {"estimates": {"minutes_histogram": est_hist}, "n": n, "protocol": params.protocol,
            "epsilon": params.privacy_cost.epsilon, "planned_std_error": ranking[0].std_error, "days": days,
            "ranking": [(p.protocol, p.std_error) for p in ranking],
            "histogram_epsilon": hist.privacy_cost.epsilon, "seconds": time.perf_counter() - t0}


def render_minutes(part: dict[str, Any], indent: str = "    ") -> str:
    """The week's table: day, true mean, estimate, CI, in CI."""
    cols = [Column("day", align="left"), Column("true mean", ".1f"), Column("estimate", ".1f"),
            Column("95% CI", lambda lo_hi: "[{}, {}]".format(*(format_value(x, ".1f") for x in lo_hi))),
            Column("in CI", lambda c: "yes" if c else "NO")]
    rows = [[d["day"], d["true_mean"], d["mean"], (d["ci_low"], d["ci_high"]), d["covered"]] for d in part["days"]]
    inside = sum(bool(d["covered"]) for d in part["days"])
    return (render(cols, rows, indent=indent)
            + f"\n{indent}{inside} of {len(rows)} true means inside their 95% CI")
