"""The demo's client-side part: every simulated device encodes with its own budget ledger.

Population -> each client encodes three metrics (a yes/no question with randomized response, its
most-used app category with GRR, its homepage URL with RAPPOR), charged to its ledger first; one
client in ten tries a second category report the same day and its budget refuses it -> the
reports travel as JSON lines, a few damaged on the way -> the server aggregates, rejecting and
counting what is malformed or foreign -> estimates beside the truth.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

import numpy as np

from ldp.decoders.randomized_response import GRRAggregate, RRAggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.randomized_response import BinaryRREncoder, BinaryRRParams, GRREncoder, GRRParams
from ldp.encoders.rappor import RapporEncoder, RapporParams
from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.simulation.collect import zipf

CATEGORIES = ("games", "social", "news", "video", "music", "maps", "shopping", "weather")
HOMEPAGES = tuple(f"https://{s}.example/" for s in (
    "search", "news", "mail", "video", "social", "shop", "wiki", "maps", "weather", "sports", "bank", "travel"))
UNUSED = tuple(f"https://{s}.example/" for s in ("unused", "nobody", "empty", "ghost", "void", "none"))
HOMEPAGE_PARAMS = RapporParams(16, 2, 64, 0.5, 0.75, 0.5)  # google/rappor's demo parameters
DAMAGED = (3, 17, 40)  # line numbers cut in half in transit


def run_clients(n: int, gen: np.random.Generator, epsilon: float, dark_mode_rate: float) -> dict[str, Any]:
    """Simulate ``n`` devices with ledgers and the server that reads their JSON lines."""
    t0 = time.perf_counter()
    category = GRRParams.from_labels(epsilon, CATEGORIES)
    dark = BinaryRRParams.forced_response()  # the seed theses' fair-coin scheme: ε = ln 3
    truth, users = _population(n, gen, dark_mode_rate)
    window_cap = PrivacyCost(epsilon + math.log(3) + 1.5)
    lines, home_lines, refused, spent = _devices(users, gen, category, dark, epsilon, window_cap)
    t_clients = time.perf_counter() - t0
    _in_transit(lines)

    t1 = time.perf_counter()
    aggs = GRRAggregate(category), RRAggregate(dark), RapporAggregate(HOMEPAGE_PARAMS)
    estimates = _server(aggs, lines, home_lines, truth)
    return {
        "n_clients": n, "reports_sent": len(lines) + len(home_lines), "reports_refused_by_budget": refused,
        "rejected": {"app_category": dict(aggs[0].rejected), "dark_mode": dict(aggs[1].rejected),
                     "homepage": dict(aggs[2].rejected)},
        "estimates": estimates,
        "privacy": {
            "per_report": {"app_category": category.privacy_cost.epsilon, "dark_mode": dark.privacy_cost.epsilon,
                           "homepage": HOMEPAGE_PARAMS.epsilon_one},
            "homepage_per_value_lifetime": HOMEPAGE_PARAMS.epsilon_inf,
            "per_client_today_max": max(spent), "per_client_today_mean": float(np.mean(spent)),
            "window_cap_all_metrics": window_cap.epsilon,
        },
        "seconds": {"clients": t_clients, "server": time.perf_counter() - t1},
    }


def _population(n: int, gen: np.random.Generator,
                dark_mode_rate: float) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The true counts of each metric and each user's value (app category and homepage by Zipf's law, dark mode
    at ``dark_mode_rate``)."""
    truth_cat = zipf(len(CATEGORIES), 1.1).counts(n, gen)
    users_cat = gen.permutation(np.repeat(np.arange(len(CATEGORIES)), truth_cat))
    users_dark = gen.random(n) < dark_mode_rate
    truth_dark = np.array([n - users_dark.sum(), users_dark.sum()])
    truth_home = zipf(len(HOMEPAGES), 1.5).counts(n, gen)
    users_home = gen.permutation(np.repeat(np.arange(len(HOMEPAGES)), truth_home))
    return ({"app_category": truth_cat, "dark_mode": truth_dark, "homepage": truth_home},
            {"app_category": users_cat, "dark_mode": users_dark, "homepage": users_home})


def _devices(users: dict[str, np.ndarray], gen: np.random.Generator, category: GRRParams, dark: BinaryRRParams,
             epsilon: float, window_cap: PrivacyCost) -> tuple[list[str], list[str], int, list[float]]:
    """Each device's reports, charged to its own ledger (a window cap over all metrics, one per metric): the
    category and dark mode lines (alternating), the homepage lines, the second category reports the budget
    refused, and the ε each device spent today (``epsilon``: the category's cap per window)."""
    policy_total = BudgetPolicy(per_window=window_cap, lifetime=PrivacyCost(40.0))
    metrics = {"app_category": BudgetPolicy(per_window=PrivacyCost(epsilon)),
               "dark_mode": BudgetPolicy(per_window=PrivacyCost(math.log(3))),
               "homepage": BudgetPolicy(lifetime=PrivacyCost(2 * HOMEPAGE_PARAMS.epsilon_inf))}
    lines: list[str] = []
    home_lines: list[str] = []
    refused = 0
    spent = []
    for i in range(len(users["dark_mode"])):
        with BudgetLedger(":memory:", total=policy_total, metrics=metrics) as ledger:
            rng = int(gen.integers(2**63))  # seeded per client for reproducibility; real clients use the OS CSPRNG
            cat_enc = GRREncoder(category, rng=rng, ledger=ledger, metric="app_category", simulation=True)
            dark_enc = BinaryRREncoder(dark, rng=rng + 1, ledger=ledger, metric="dark_mode", simulation=True)
            lines.append(cat_enc.encode(CATEGORIES[users["app_category"][i]]).to_json())
            lines.append(dark_enc.encode(bool(users["dark_mode"][i])).to_json())
            home_enc = RapporEncoder(HOMEPAGE_PARAMS, rng=rng + 2, ledger=ledger, metric="homepage",
                                     simulation=True)
            home_lines.append(home_enc.encode(HOMEPAGES[users["homepage"][i]]).to_json())
            if i % 10 == 0:  # one client in ten tries a second report today: its budget refuses it
                try:
                    cat_enc.encode(CATEGORIES[users["app_category"][i]])
                except BudgetExceeded:
                    refused += 1
            spent.append(ledger.spent().epsilon)
    return lines, home_lines, refused, spent


def _in_transit(lines: list[str]) -> None:
    """What happens to the lines on the way, in place: a few cut in half, and a foreign report added."""
    for j in DAMAGED:
        if j < len(lines):
            lines[j] = lines[j][: len(lines[j]) // 2]
    lines.append('{"v":1,"protocol":"grr","params":"0000000000000000","payload":{"index":2}}')  # a foreign report


def _server(aggs: tuple[GRRAggregate, RRAggregate, RapporAggregate], lines: list[str], home_lines: list[str],
            truth: dict[str, np.ndarray]) -> dict[str, Any]:
    """The server's side: the lines folded into each metric's aggregate, and the estimates beside the truth."""
    agg_cat, agg_dark, agg_home = aggs
    agg_cat.add_json_lines(lines[0::2])
    agg_dark.add_json_lines(lines[1::2])
    agg_home.add_json_lines(home_lines)
    candidates = HOMEPAGES + UNUSED
    est_home = agg_home.estimate(candidates).with_truth(list(truth["homepage"]) + [0] * len(UNUSED)).sorted()
    dark_est = agg_dark.estimate().with_truth(truth["dark_mode"].tolist())
    return {"dark_mode": replace(dark_est, items=["off", "on"]),
            "app_category": agg_cat.estimate().with_truth(truth["app_category"].tolist()),
            "homepage": est_home}
