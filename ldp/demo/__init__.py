"""``ldp demo``: a simulated collection of every protocol, end to end, in seconds.

1. devices with their own budget ledgers answer a yes/no question (randomized response), name
   their most-used app category (GRR) and their homepage URL (RAPPOR); the server reads their
   JSON lines, rejects the damaged and foreign ones, and estimates;
2. emoji frequencies with Apple's Count Mean Sketch and Hadamard CMS, as binary frames;
3. new words discovered with the Sequence Fragment Puzzle, without a dictionary;
4. linear regression with local DP against central DP (:mod:`ldp.compare`);
5. the app-category question at 10^8 users, drawn exactly at the aggregate level;
6. daily minutes of use: a mean a day for a week with the planner's mean mechanism, and a histogram
   with bucketized GRR (:mod:`ldp.demo.minutes`).

:func:`run_demo` returns everything as plain data; :func:`render` prints it; ``--plots DIR``
writes one figure per question (:func:`ldp.demo.plots.write_plots`).
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import time
from collections.abc import Callable
from typing import Any

from ldp.demo.clients import CATEGORIES, run_clients
from ldp.demo.minutes import daily_minutes
from ldp.demo.render import render, to_jsonable
from ldp.demo.sections import at_scale, emoji_sketches, new_words, regression
from ldp.display.progress import progress as progress_bar
from ldp.randomness import as_generator

__all__ = ["run_demo", "render", "to_jsonable", "SIZES", "MINUTES_DEVICES"]

SIZES = {  # emoji reports, SFP users, the largest regression data set
    "full": {"emoji": 500_000, "words": 1_000_000, "regression": 1_000_000},
    "quick": {"emoji": 50_000, "words": 300_000, "regression": 100_000},
}
MINUTES_DEVICES = {"full": 200_000, "quick": 20_000}  # devices reporting their daily minutes of use


def run_demo(n: int = 5000, seed: int | None = None, epsilon: float = 1.0, dark_mode_rate: float = 0.3,
             quick: bool = False, *, progress: bool | None = None) -> dict[str, Any]:
    """Run every part of the demo; ``n`` devices keep ledgers, ``quick`` shrinks the larger parts.
    ``progress``: a bar per section on stderr (``None``: when stderr is a terminal; :mod:`ldp.display.progress`)."""
    if n < 10:
        raise ValueError(f"the demo needs at least 10 clients, got {n}")
    gen = as_generator(seed)
    t0 = time.perf_counter()
    sizes = SIZES["quick" if quick else "full"]
    sections: dict[str, Callable[[], dict[str, Any]]] = {  # run in this order: they share the generator
        "clients": lambda: run_clients(n, gen, epsilon, dark_mode_rate),
        "emoji": lambda: emoji_sketches(sizes["emoji"], gen), "words": lambda: new_words(sizes["words"], gen),
        "regression": lambda: regression(sizes["regression"], gen, quick),
        "scale": lambda: at_scale(10**8, gen, epsilon, CATEGORIES),
        "minutes": lambda: daily_minutes(MINUTES_DEVICES["quick" if quick else "full"], gen, epsilon)}
    parts: dict[str, dict[str, Any]] = {}
    with progress_bar(len(sections), "demo", progress, unit="section") as bar:
        for name, run in sections.items():
            bar.set_postfix_str(name)
            parts[name] = run()
            bar.update(1)
    result = parts.pop("clients")
    for name, part in parts.items():
        result["estimates"].update(part.pop("estimates", {}))
        result["seconds"][name] = part.pop("seconds")
        result[name] = part
    result["seconds"]["total"] = time.perf_counter() - t0
    result["quick"] = quick
    return result
