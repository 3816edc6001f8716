"""String discovery side by side: Poplar1 over two aggregators against PEM and SFP (issue 89, item 4), a section of
``simulations/benchmark.py`` (registered by :func:`register`).

The discovery threshold, the holders a string needs to be found with probability 0.9, at equal central ε:
Poplar1's walk at ``gaussian:ε:1e-8`` and ``laplace:ε`` (the whole walk's guarantee, composed over its 64 levels,
:mod:`ldp.prio.heavy_hitters`), PEM and SFP at local ε = ε (which is also their central ε), and PEM and SFP
shuffled: their reports at the largest ε₀ whose n shuffled reports are (ε, 1e-8)-DP against the analysts
(:func:`ldp.plan.poplar1.shuffled_local_epsilon`). By formula
(:mod:`ldp.plan.poplar1`) and simulated, on the same Zipf(1) data: a vocabulary of 10,000 random 8-letter words
(a–z; 64-bit strings for Poplar1, their ASCII bytes), ``n`` users drawn from it, and strings planted at holder
counts around each protocol's formula (``GRID`` times it). Simulated thresholds come from every string's found rate
(:func:`ldp.simulation.poplar1.empirical_threshold`); PEM and SFP through the project's simulation
(:func:`ldp.simulation.base.simulate_counts`, then ``discover()`` as ``ldp simulate pem`` runs it: PEM with
``top_k = 64``, α = 0.05, 5 false prefixes a round, the alphabet a–z; SFP with ε split evenly, its defaults).

The crypto columns (:func:`crypto_costs`): Poplar1's per-report cost per aggregator at every level, on the
candidates a simulated walk of 10⁵ users asks; the aggregators' jobs (:mod:`bench_poplar1_jobs`): the per-report
path against the binding's batch calls at levels 0, 31 and 63, and a whole collection of 64-bit reports measured
through every level (as many reports as ~5 minutes of CPU allow), the 10⁵-report figure extrapolated from it;
measured only when the binding has Poplar1 (:mod:`ldp.prio.poplar1`), else skipped with the reason.
"""

from __future__ import annotations

import os
import string
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ldp.plan.poplar1 import discovery_table, find_probability
from ldp.prio.heavy_hitters import NoiseLaw, calibrate, recommended_threshold, walk
from ldp.simulation.poplar1 import (
    NoiseDraws,
    PrefixCounts,
    empirical_threshold,
    found_counts,
    simulate_walks,
    words_as_ints,
)
from ldp.simulation.population import zipf

NS, EPSILONS, DELTA = (100_000, 1_000_000), (1.0, 4.0), 1e-8
LETTERS, BITS, VOCABULARY = 8, 64, 10_000
MAX_CANDIDATES, PEM_TOP_K, POWER = 4096, 64, 0.9
GRID = 2.0 ** (np.arange(-4, 4) / 3)  # 0.40x .. 1.59x the formula's holders
ALPHABET = string.ascii_lowercase


def random_words(rng: np.random.Generator, count: int, exclude: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """``count`` distinct random words of :data:`LETTERS` letters a–z, none of ``exclude``."""
    letters = np.array(list(ALPHABET))
    out: dict[str, None] = {}
    while len(out) < count:
        for row in rng.choice(letters, (count, LETTERS)):
            w = "".join(row)
            if w not in exclude:
                out.setdefault(w, None)
    return list(out)[:count]


def _planted(rng: np.random.Generator, formula: float, data: dict[str, Any], copies: int, offset: int = 0
             ) -> tuple[list[str], np.ndarray]:
    """New words at the grid's holder counts around ``formula``, ``copies`` of the grid (from its point ``offset``,
    cyclically), as many as fit in half of n (each at most that)."""
    half = data["n"] // 2
    grid = np.maximum(np.round(GRID * formula), 1).astype(np.int64)
    holders = np.roll(np.tile(grid[grid <= half], copies), -offset)
    holders = holders[np.cumsum(holders) <= half]
    return random_words(rng, holders.size, set(data["words"])), holders


def _poplar1_row(data: dict[str, Any], noise: str, formula: dict[str, Any], trials: int, seed: int) -> dict[str, Any]:
    """Poplar1 simulated: the same data every trial, fresh noise; every string's found rate."""
    rng = np.random.default_rng(seed)
    extra, holders = _planted(rng, formula["holders_needed"], data, copies=4)
    counts = data["counts_for"](int(holders.sum()))
    words = data["words"] + extra
    values = words_as_ints(words, BITS)
    allc = np.concatenate([counts, holders])
    prefixes = PrefixCounts(values, allc, BITS)
    cal, t = calibrate(noise, BITS), formula["threshold"]
    start = time.perf_counter()
    results = simulate_walks(prefixes, cal, t, MAX_CANDIDATES, trials, rng)
    found = found_counts(results, values)
    law = NoiseLaw.of(cal.level_noise)
    planted = slice(len(data["words"]), len(words))
    exact = [find_probability(law, t, prefixes.path_counts(int(v))) for v in values[planted]]
    return {"simulated": empirical_threshold(allc, found, trials, POWER), "trials": trials,
            "planted": int(holders.size), "capped_trials": sum(r.capped for r in results),
            "planted_found_rate": float(found[planted].sum() / (trials * holders.size)),
            "planted_found_rate_by_formula": float(np.mean(exact)), "seconds": time.perf_counter() - start}


def _local_found(protocol: str, eps: float, words: list[str], counts: np.ndarray, rng: np.random.Generator
                 ) -> tuple[set[str], bool]:
    """The words a PEM or SFP collection finds, and whether PEM's ``top_k`` bound a round (kept as many as allowed:
    then the cap, not the noise, decides what is found)."""
    from ldp.encoders.pem import PEMParams
    from ldp.encoders.sfp import SfpParams
    from ldp.simulation.base import simulate_counts

    if protocol == "pem":
        agg: Any = simulate_counts(PEMParams(eps, max_length=LETTERS, top_k=PEM_TOP_K), counts, rng=rng, values=words)
        found = agg.discover(PEM_TOP_K, 0.05, 5.0, ALPHABET)
        return set(found.strings.items), any(r["kept"] >= PEM_TOP_K for r in found.rounds[:-1])
    agg = simulate_counts(SfpParams(eps / 2, eps / 2, length=LETTERS), counts, rng=rng, values=words)
    return set(agg.discover(progress=False).words.items), False


def _local_row(data: dict[str, Any], protocol: str, eps: float, formula: float, trials: int, seed: int
               ) -> dict[str, Any]:
    """PEM or SFP simulated: per trial fresh planted strings and a fresh draw of the rest; every string's found."""
    rng = np.random.default_rng(seed)
    hs, fs, capped = [], [], 0
    start = time.perf_counter()
    for trial in range(trials):
        extra, holders = _planted(rng, formula, data, copies=2, offset=3 * trial)
        counts = np.concatenate([data["counts_for"](int(holders.sum()), rng), holders])
        words = data["words"] + extra
        found, cap = _local_found(protocol, eps, words, counts, rng)
        capped += cap
        hs.append(counts)
        fs.append(np.array([w in found for w in words], np.int64))
    return {"simulated": empirical_threshold(np.concatenate(hs), np.concatenate(fs), 1, POWER), "trials": trials,
            "capped_trials": capped, "seconds": time.perf_counter() - start}


def _data(n: int, seed: int) -> dict[str, Any]:
    """The Zipf vocabulary of ``n`` users, and ``counts_for(planted, gen)``: a draw of the ``n − planted`` users
    beside the planted ones (``gen=None``: Poplar1's, one seeded draw per n)."""
    words = random_words(np.random.default_rng([seed, 1]), VOCABULARY)
    pop = zipf(VOCABULARY, 1.0)

    def counts_for(planted: int, gen: np.random.Generator | None = None) -> np.ndarray:
        return pop.counts(n - planted, np.random.default_rng([seed, n]) if gen is None else gen)

    return {"n": n, "words": words, "counts_for": counts_for}


def _walk_candidates(data: dict[str, Any], noise: str) -> dict[int, list[int]]:
    """The prefixes one noised walk of ``data`` asks at each level (for the crypto costs)."""
    values = words_as_ints(data["words"], BITS)
    prefixes = PrefixCounts(values, data["counts_for"](0), BITS)
    cal = calibrate(noise, BITS)
    draws = NoiseDraws(NoiseLaw.of(cal.level_noise), 7)
    asked: dict[int, list[int]] = {}

    def counts_at(level: int, cands: list[int]) -> list[int]:
        asked[level] = list(cands)
        exact = prefixes.counts_at(level, cands)
        return (exact + draws.take(exact.size)).tolist()

    walk(counts_at, BITS, recommended_threshold(cal, MAX_CANDIDATES), MAX_CANDIDATES)
    return asked


def crypto_costs(data: dict[str, Any], noise: str, sample: int, reports: int = 100_000, *, quick: bool = False,
                 seed: int = 0) -> dict[str, Any]:
    """Poplar1's cost (the binding's, VDAF draft 18): sharding per report, and per aggregator per level the
    verification and aggregation of one report for the candidates a walk of ``data`` asks, timed on ``sample``
    reports at every level by the per-report calls (``levels``; their sum × ``reports``: the old extrapolation);
    then the aggregators' jobs (:func:`bench_poplar1_jobs.job_costs`): the per-report path against the batch calls
    at levels 0, 31 and 63 (1 and 2 threads), and a whole collection measured through every level on as many reports
    as ~5 minutes of both aggregators' CPU allow (quick: a pilot of 32 reports only), its 10⁵-report figure
    extrapolated from it and labelled so.
    ``{"skipped": why}`` when the binding has no Poplar1."""
    from bench_poplar1_jobs import job_costs

    from ldp.aggregators.leader import DEFAULT_JOB_SIZE
    from ldp.errors import MissingExtraError

    try:
        from ldp.prio.poplar1 import Poplar1, agg_param, bits_of, verify_continue, verify_finish

        vdaf = Poplar1(BITS, ctx=b"ldp bench string discovery")
        _ = vdaf.leader_init_batch  # a binding built before the batch calls: skipped
    except (ImportError, MissingExtraError, AttributeError) as exc:
        return {"skipped": f"the binding has no Poplar1 here ({type(exc).__name__}: {str(exc)[:200]})"}
    key = os.urandom(vdaf.verify_key_size)
    words = data["words"][:sample]
    start = time.perf_counter()
    shares = [vdaf.shard(bits_of(w, BITS)) for w in words]
    shard_us = (time.perf_counter() - start) / len(words) * 1e6
    per_level: list[dict[str, Any]] = []
    cands = _walk_candidates(data, noise)
    for level, c in sorted(cands.items()):
        param = agg_param(level, c)
        aggs = [vdaf.aggregate_init(param), vdaf.aggregate_init(param)]
        spent = np.array([_verify_timed(vdaf, key, param, nonce, public, inputs, aggs, (verify_continue, verify_finish))
                          for nonce, public, inputs in shares])
        per_level.append({"level": level, "candidates": len(c),
                          "us_per_report_median": (np.median(spent, axis=0) * 1e6).tolist(),
                          "us_per_report_mean": (spent.mean(axis=0) * 1e6).tolist()})
    total = [sum(r["us_per_report_median"][a] for r in per_level) * reports / 1e6 for a in (0, 1)]
    jobs = job_costs(vdaf, data, cands, levels=(0, 31, 63), compare_reports=64 if quick else 128,
                     pilot_reports=32 if quick else 64, cpu_budget_s=0.0 if quick else 300.0,
                     job_size=DEFAULT_JOB_SIZE, seed=seed, extrapolate_to=reports)
    return {"sampled_reports_per_level": len(shares), "shard_us_per_report": shard_us, "noise": noise,
            "levels": per_level, "whole_collection_reports": reports,
            "whole_collection_s_per_aggregator_extrapolated": {"leader": total[0], "helper": total[1]},
            "note": "levels: per aggregator the CPU of its verify_init, both verify_next and accumulate "
                    "(per-report calls, no HPKE), the message combinations charged to the leader; "
                    "whole_collection_s_per_aggregator_extrapolated is the per-level median × reports, summed over "
                    "the levels (one core, no batching); jobs.whole_collection is measured (batch calls), its 10^5 "
                    "figure scaled from it",
            "jobs": jobs}


def _verify_timed(vdaf: Any, key: bytes, param: Any, nonce: bytes, public: bytes, inputs: list[bytes],
                  aggs: list[Any], steps: tuple[Callable[..., Any], Callable[..., Any]]) -> list[float]:
    """One report through both aggregators (the flow of :func:`ldp.prio.poplar1.verify_report`), each one's CPU
    seconds timed apart: its verify_init, both verify_next and its accumulate; the shares' combination into messages is
    charged to the leader (it runs it in DAP's ping-pong)."""
    cont, fin = steps
    clock = time.process_time  # CPU seconds: the machine's other load not counted
    out = [0.0, 0.0]
    states, vs = [], []
    for a in (0, 1):
        t = clock()
        state, share = vdaf.verify_init(key, a, param, nonce, public, inputs[a])
        out[a] += clock() - t
        states.append(state)
        vs.append(share)
    t = clock()
    message = vdaf.verifier_shares_to_message(states[0], vs)
    out[0] += clock() - t
    nexts = []
    for a in (0, 1):
        t = clock()
        nexts.append(cont(vdaf, states[a], message))
        out[a] += clock() - t
    t = clock()
    message = vdaf.verifier_shares_to_message(nexts[0][0], [s for _, s in nexts])
    out[0] += clock() - t
    for a in (0, 1):
        t = clock()
        aggs[a].accumulate(fin(vdaf, nexts[a][0], message))
        out[a] += clock() - t
    return out


def run(quick: bool, seed: int) -> dict[str, Any]:
    """The whole comparison (module docstring)."""
    formulas = discovery_table(NS, EPSILONS, bits=BITS, delta=DELTA, max_candidates=MAX_CANDIDATES, power=POWER,
                               pem_top_k=PEM_TOP_K, alphabet=ALPHABET)
    pop_trials, local_trials = (12, {100_000: 3, 1_000_000: 2}) if quick else (40, {100_000: 6, 1_000_000: 3})
    rows, datas = [], {n: _data(n, seed) for n in NS}
    for i, f in enumerate(formulas):
        data = datas[f["n"]]
        salt = seed * 1000 + i
        if f["protocol"].startswith("poplar1"):
            sim = _poplar1_row(data, f["noise"], f, pop_trials, salt)
        else:
            sim = _local_row(data, f["protocol"].split("-")[0], f["local_epsilon"], f["holders_needed"],
                             local_trials[f["n"]], salt)
        rows.append({**f, "holders_needed_simulated": sim.pop("simulated"), **sim})
    out: dict[str, Any] = {"setup": {"bits": BITS, "letters": LETTERS, "vocabulary": VOCABULARY, "zipf": 1.0,
                                     "delta": DELTA, "max_candidates": MAX_CANDIDATES, "pem_top_k": PEM_TOP_K,
                                     "power": POWER, "grid": GRID.tolist()},
                           "rows": rows}
    out["crypto"] = crypto_costs(datas[100_000], f"gaussian:4:{DELTA:g}", sample=3 if quick else 8, quick=quick,
                                 seed=seed)
    return out


def register(b: ModuleType) -> None:
    """Add the string-discovery section to the benchmark module ``b``."""

    @b.benchmark("string_discovery")
    def string_discovery(ctx: Any) -> dict[str, Any]:
        return run(ctx.quick, ctx.seed)
