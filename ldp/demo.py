"""``ldp demo``: one simulated collection, end to end, in a few seconds.

Population -> every client encodes with its own budget ledger (some reports refused when the
budget is spent) -> reports travel as JSON lines (a few corrupted on the way) -> the server
aggregates, rejecting and counting what is malformed -> estimates with confidence intervals
beside the truth -> the privacy each client spent. Then the same collection at 10^8 users,
simulated at the aggregate level.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ldp.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.decoders.randomized_response import GRRAggregate, RRAggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.randomized_response import BinaryRREncoder, BinaryRRParams, GRREncoder, GRRParams
from ldp.encoders.rappor import RapporEncoder, RapporParams
from ldp.randomness import as_generator
from ldp.simulation import simulate, zipf

CATEGORIES = ("games", "social", "news", "video", "music", "maps", "shopping", "weather")
HOMEPAGES = tuple(f"https://{s}.example/" for s in (
    "search", "news", "mail", "video", "social", "shop", "wiki", "maps", "weather", "sports", "bank", "travel"))
UNUSED = tuple(f"https://{s}.example/" for s in ("unused", "nobody", "empty", "ghost", "void", "none"))
HOMEPAGE_PARAMS = RapporParams(16, 2, 64, 0.5, 0.75, 0.5)  # google/rappor's demo parameters


def run_demo(n: int = 5000, seed: int | None = None, epsilon: float = 1.0, dark_mode_rate: float = 0.3) -> dict[str, Any]:
    """Run the demo collection; returns everything it measured as plain data."""
    if n < 10:
        raise ValueError(f"the demo needs at least 10 clients, got {n}")
    gen = as_generator(seed)
    t0 = time.perf_counter()
    category = GRRParams.from_labels(epsilon, CATEGORIES)
    dark = BinaryRRParams.forced_response()  # the seed theses' fair-coin scheme: ε = ln 3
    truth_cat = zipf(len(CATEGORIES), 1.1).counts(n, gen)
    truth_dark = np.array([0, 0])
    users_cat = gen.permutation(np.repeat(np.arange(len(CATEGORIES)), truth_cat))
    users_dark = gen.random(n) < dark_mode_rate
    truth_dark[:] = [n - users_dark.sum(), users_dark.sum()]

    truth_home = zipf(len(HOMEPAGES), 1.5).counts(n, gen)
    users_home = gen.permutation(np.repeat(np.arange(len(HOMEPAGES)), truth_home))

    policy_total = BudgetPolicy(per_window=PrivacyCost(epsilon + math.log(3) + 1.5), lifetime=PrivacyCost(40.0))
    metrics = {"app_category": BudgetPolicy(per_window=PrivacyCost(epsilon)),
               "dark_mode": BudgetPolicy(per_window=PrivacyCost(math.log(3))),
               "homepage": BudgetPolicy(lifetime=PrivacyCost(2 * HOMEPAGE_PARAMS.epsilon_inf))}
    home_lines: list[str] = []
    lines: list[str] = []
    refused = 0
    spent = []
    for i in range(n):
        with BudgetLedger(":memory:", total=policy_total, metrics=metrics) as ledger:
            rng = int(gen.integers(2**63))  # seeded per client for reproducibility; real clients use the OS CSPRNG
            cat_enc = GRREncoder(category, rng=rng, ledger=ledger, metric="app_category")
            dark_enc = BinaryRREncoder(dark, rng=rng + 1, ledger=ledger, metric="dark_mode")
            lines.append(cat_enc.encode(CATEGORIES[users_cat[i]]).to_json())
            lines.append(dark_enc.encode(bool(users_dark[i])).to_json())
            home_enc = RapporEncoder(HOMEPAGE_PARAMS, rng=rng + 2, ledger=ledger, metric="homepage")
            home_lines.append(home_enc.encode(HOMEPAGES[users_home[i]]).to_json())
            if i % 10 == 0:  # one client in ten tries a second report today: its budget refuses it
                try:
                    cat_enc.encode(CATEGORIES[users_cat[i]])
                except BudgetExceeded:
                    refused += 1
            spent.append(ledger.spent().epsilon)
    t_clients = time.perf_counter() - t0

    corrupt = [3, 17, 40]  # damage a few lines in transit
    for j in corrupt:
        lines[j] = lines[j][: len(lines[j]) // 2]
    lines.append('{"v":1,"protocol":"grr","params":"0000000000000000","payload":{"index":2}}')

    t1 = time.perf_counter()
    agg_cat, agg_dark = GRRAggregate(category), RRAggregate(dark)
    agg_cat.add_json_lines(lines[0::2])
    agg_dark.add_json_lines(lines[1::2])
    est_cat = agg_cat.estimate().with_truth(truth_cat)
    est_dark = agg_dark.estimate().with_truth(truth_dark)
    agg_home = RapporAggregate(HOMEPAGE_PARAMS)
    agg_home.add_json_lines(home_lines)
    candidates = HOMEPAGES + UNUSED
    est_home = agg_home.estimate(candidates).with_truth(list(truth_home) + [0] * len(UNUSED)).sorted()
    t_server = time.perf_counter() - t1

    big_n = 10**8
    t2 = time.perf_counter()
    big_truth = zipf(len(CATEGORIES), 1.1).counts(big_n, exact=True)
    big = simulate(category, big_truth, method="aggregate", rng=gen).estimate().with_truth(big_truth)
    big_home_truth = dict(zip(HOMEPAGES, zipf(len(HOMEPAGES), 1.5).counts(10**6, exact=True).tolist()))
    big_home = RapporAggregate.simulate(HOMEPAGE_PARAMS, big_home_truth, gen).estimate(candidates)
    big_home = big_home.with_truth([big_home_truth.get(c, 0) for c in candidates]).sorted()
    t_big = time.perf_counter() - t2
    return {
        "n_clients": n, "reports_sent": len(lines), "reports_refused_by_budget": refused,
        "rejected": {"app_category": dict(agg_cat.rejected), "dark_mode": dict(agg_dark.rejected),
                     "homepage": dict(agg_home.rejected)},
        "estimates": {"app_category": est_cat, "dark_mode": est_dark, "homepage": est_home,
                      "app_category_1e8_aggregate_level": big, "homepage_1e6_aggregate_level": big_home},
        "privacy": {
            "per_report": {"app_category": category.privacy_cost.epsilon, "dark_mode": dark.privacy_cost.epsilon,
                           "homepage": HOMEPAGE_PARAMS.epsilon_one},
            "homepage_per_value_lifetime": HOMEPAGE_PARAMS.epsilon_inf,
            "per_client_today_max": max(spent), "per_client_today_mean": float(np.mean(spent)),
            "window_cap_all_metrics": policy_total.per_window.epsilon,  # type: ignore[union-attr]
        },
        "seconds": {"clients": t_clients, "server": t_server, "aggregate_level_1e8": t_big},
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable demo report."""
    est = result["estimates"]
    p = result["privacy"]
    out = [
        f"ldp demo: {result['n_clients']} simulated clients, each with its own budget ledger",
        f"  reports sent: {result['reports_sent']}, refused by the budget (second report today): "
        f"{result['reports_refused_by_budget']}",
        f"  server rejected (malformed / foreign): {result['rejected']}",
        "",
        "Which app category do people use most?  (GRR, counts of users)",
        est["app_category"].table(),
        "",
        "Have they enabled dark mode?  (randomized response with fair coins)",
        est["dark_mode"].table(),
        "",
        "Which homepage is set?  (RAPPOR over strings, decoded against a candidate list; counts of users)",
        est["homepage"].table(max_rows=len(HOMEPAGES) + len(UNUSED)),
        "",
        "The same collections simulated at the aggregate level "
        f"({result['seconds']['aggregate_level_1e8'] * 1e3:.0f} ms): app category at 100,000,000 users",
        est["app_category_1e8_aggregate_level"].table(),
        "",
        "... and homepage at 1,000,000 users",
        est["homepage_1e6_aggregate_level"].table(max_rows=len(HOMEPAGES) + len(UNUSED)),
        "",
        f"Privacy: ε per report {p['per_report']['app_category']:.4g} (category) + {p['per_report']['dark_mode']:.4g} "
        f"(dark mode) + {p['per_report']['homepage']:.4g} (homepage; at most "
        f"{p['homepage_per_value_lifetime']:.4g} per homepage ever, however often it is reported); "
        f"each client spent at most ε={p['per_client_today_max']:.4g} today "
        f"(cap {p['window_cap_all_metrics']:.4g} per day across metrics).",
        f"Time: clients {result['seconds']['clients']:.2f} s, server {result['seconds']['server']:.3f} s.",
    ]
    return "\n".join(out)


def to_jsonable(result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result)
    out["estimates"] = {k: v.to_dicts() for k, v in result["estimates"].items()}
    return out
