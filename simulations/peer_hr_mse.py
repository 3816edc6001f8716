#!/usr/bin/env python3
"""MSE of ldp's Hadamard Responses (``hr-block`` at the planner's blocks, and plain ``hr``) against pure-ldp's
``HadamardResponse``, live, on the same simulated users.

    /work/peervenv/bin/python simulations/peer_hr_mse.py --site /work/venv/lib/python3.11/site-packages
    python simulations/peer_hr_mse.py --site /path/to/a/venv/with/pure_ldp/site-packages --quick

This source tree's ``ldp`` is put first on ``sys.path``; each ``--site`` directory is appended last, so the
interpreter's own packages win and a site only fills in what is missing (pure-ldp in ldp's venv, or ldp's
dependencies — mmh3, bitarray, scikit-learn — in a venv that has only pure-ldp). Both must run the same numpy.

The population: ``n`` users over ``d`` values with Zipf counts ``∝ 1/rank^1.1`` (largest remainders), the same
users for every protocol and repetition. Each repetition draws fresh client randomness for every protocol:
ldp through its batch encoders (``encode_batch``, the client's exact law, tested against it), pure-ldp through
its own ``privatise`` per user (its randomness from numpy's and Python's global generators, seeded per
repetition) and ``estimate_all`` unnormalized. Its ε ≤ 1 branch is plain HR; above 1 it is Acharya et al.'s
blocked HR with ``B = 2^⌊log2 min(e^ε, 2d)⌋`` blocks of ``b = 2^⌈log2(d/B + 1)⌉`` outputs, values randomly
permuted into blocks of ``b − 1``. The MSE is on the frequency scale, ``mean over values and repetitions of
((ĉ − f)/n)²``, with its standard error over repetitions; ``exact`` is the mean exact variance
(``Σ Var[ĉ]/(d·n²)``): ldp's formulas, and for pure-ldp the same estimator's variance at its parameters and the
permutation it drew, ``(2B + e^ε − 1)(2n + (e^ε − 1)F_i)/(e^ε − 1)² − f_x`` (plain HR: ``n/(2p − 1)² − f_x``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import random
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
DOMAINS = (16, 1024)
ZIPF_S = 1.1


def zipf_counts(d: int, n: int, s: float = ZIPF_S) -> np.ndarray:
    """Counts ``∝ 1/rank^s`` over ``d`` values summing to ``n`` (largest remainders): a fixed population."""
    w = 1.0 / np.arange(1, d + 1) ** s
    raw = n * w / w.sum()
    counts = np.floor(raw).astype(np.int64)
    counts[np.argsort(counts - raw)[: n - int(counts.sum())]] += 1
    return counts


def peer_hr() -> Any:
    """pure-ldp's ``frequency_oracles.hadamard_response`` package, its code unmodified. pure-ldp 1.2.0's
    ``frequency_oracles/__init__.py`` imports every oracle, RAPPOR's needing scikit-learn and statsmodels; the
    parent package is registered here as a bare package of that directory instead, so only the HR modules (and
    ``pure_ldp.core``) run."""
    name = "pure_ldp.frequency_oracles"
    if name not in sys.modules:
        spec = importlib.util.find_spec("pure_ldp")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("No module named 'pure_ldp'")
        package = types.ModuleType(name)
        package.__path__ = [str(Path(list(spec.submodule_search_locations)[0]) / "frequency_oracles")]
        sys.modules[name] = package
    return importlib.import_module(f"{name}.hadamard_response")


def peer_available() -> str | None:
    """``None`` when pure-ldp's HR imports, else why not."""
    try:
        peer_hr()
    except ImportError as e:
        return f"pure-ldp not installed ({e})"
    return None


def peer_round(eps: float, d: int, values: np.ndarray, seed: int) -> tuple[np.ndarray, float]:
    """pure-ldp's HR: count estimates of one collection, and its exact mean variance (count scale) at the
    parameters and permutation it drew."""
    hr_module = peer_hr()
    HadamardResponseClient, HadamardResponseServer = hr_module.HadamardResponseClient, hr_module.HadamardResponseServer

    np.random.seed(seed % 2**32)
    random.seed(seed)
    server = HadamardResponseServer(eps, d, index_mapper=lambda x: x)
    client = HadamardResponseClient(eps, d, server.get_hash_funcs(), index_mapper=lambda x: x)
    for v in values.tolist():
        server.aggregate(client.privatise(v))
    est = np.asarray(server.estimate_all(range(d)), dtype=np.float64)
    f = np.bincount(values, minlength=d).astype(np.float64)
    n, e = float(values.size), math.exp(eps)
    if eps <= 1:
        p = e / (e + 1)
        var = n / (2 * p - 1) ** 2 - f
    else:
        hr = server.hr
        block = np.asarray(hr.permute, dtype=np.int64) // (hr.partsz - 1)
        big = np.bincount(block, weights=f)[block]
        var = (2 * hr.part + e - 1) * (2 * n + (e - 1) * big) / (e - 1) ** 2 - f
    return est, float(var.mean())


def ldp_round(params: Any, values: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """ldp's count estimates of one collection (batch encoder, aggregate, estimate)."""
    from ldp.protocols import get_protocol

    proto = get_protocol(params.protocol)
    agg = proto.aggregate_type(params)
    agg.add(proto.encoder_type(params, simulation=True).encode_batch(values, gen))
    return np.asarray(agg.estimate().count, dtype=np.float64)


def measure(eps: float, d: int, n: int, reps: int, seed: int, peer: bool = True) -> dict[str, Any]:
    """One cell: measured MSE (± SE) and exact mean variance of hr-block, hr and (when ``peer``) pure-ldp's HR."""
    from ldp.decoders.hadamard_block import hrb_variance
    from ldp.decoders.hadamard_response import hr_variance
    from ldp.encoders.hadamard_block import HRBlockParams
    from ldp.encoders.hadamard_response import HRParams

    truth = zipf_counts(d, n)
    values = np.repeat(np.arange(d), truth)
    block, plain = HRBlockParams.for_epsilon(eps, d), HRParams(eps, d)
    gen = np.random.default_rng([seed, d, int(eps * 1000)])
    scale = float(n) ** 2
    sq: dict[str, list[float]] = {"hr_block": [], "hr": [], "peer": []}
    peer_exact: list[float] = []
    seconds = {"hr_block": 0.0, "hr": 0.0, "peer": 0.0}
    for r in range(reps):
        order = gen.permutation(values)  # users in a fresh order: pure-ldp's per-user loop sees no sorted input
        for name, params in (("hr_block", block), ("hr", plain)):
            t0 = time.perf_counter()
            est = ldp_round(params, order, gen)
            seconds[name] += time.perf_counter() - t0
            sq[name].append(float(np.mean((est - truth) ** 2)) / scale)
        if peer:
            t0 = time.perf_counter()
            est, exact = peer_round(eps, d, order, seed * 1_000_003 + r)
            seconds["peer"] += time.perf_counter() - t0
            sq["peer"].append(float(np.mean((est - truth) ** 2)) / scale)
            peer_exact.append(exact / scale)
    row: dict[str, Any] = {"epsilon": eps, "d": d, "n": n, "reps": reps, "blocks": block.nblocks,
                           "block_order": block.block_order, "K": block.order}
    exact = {"hr_block": float(hrb_variance(block, truth).mean()) / scale,
             "hr": float(hr_variance(plain, truth).mean()) / scale}
    if peer:
        exact["peer"] = float(np.mean(peer_exact))
    for name, values_ in sq.items():
        if values_:
            row[f"mse_{name}"] = float(np.mean(values_))
            row[f"se_{name}"] = float(np.std(values_, ddof=1) / math.sqrt(len(values_))) if len(values_) > 1 else 0.0
            row[f"exact_{name}"] = exact[name]
            row[f"seconds_{name}"] = seconds[name] / reps
    if peer:
        row["measured_ratio"] = row["mse_hr_block"] / row["mse_peer"]
        row["exact_ratio"] = exact["hr_block"] / exact["peer"]
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (MSE on the frequency scale)."""
    peer = "mse_peer" in rows[0]
    head = ["ε", "d", "B×b", "hr-block MSE", "exact", "hr MSE", "exact"]
    if peer:
        head += ["pure-ldp HR MSE", "exact", "hr-block / pure-ldp (measured)", "(exact)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [f"{r['epsilon']:g}", str(r["d"]), f"{r['blocks']}×{r['block_order']}",
                 f"{r['mse_hr_block']:.3e} ± {r['se_hr_block']:.1e}", f"{r['exact_hr_block']:.3e}",
                 f"{r['mse_hr']:.3e} ± {r['se_hr']:.1e}", f"{r['exact_hr']:.3e}"]
        if peer:
            cells += [f"{r['mse_peer']:.3e} ± {r['se_peer']:.1e}", f"{r['exact_peer']:.3e}",
                      f"{r['measured_ratio']:.3f}", f"{r['exact_ratio']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", action="append", default=[], help="a site-packages directory appended to sys.path")
    ap.add_argument("--n", type=int, default=100_000, help="users (default %(default)s)")
    ap.add_argument("--reps", type=int, default=10, help="repetitions per cell (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="n = 20,000 and 4 repetitions")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--no-peer", action="store_true", help="ldp only")
    args = ap.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.path.extend(args.site)
    n, reps = (20_000, 4) if args.quick else (args.n, args.reps)
    missing = None if args.no_peer else peer_available()
    if missing:
        print(f"{missing}: ldp only", file=sys.stderr)
    rows = []
    for d in DOMAINS:
        for eps in EPSILONS:
            rows.append(measure(eps, d, n, reps, args.seed, peer=missing is None and not args.no_peer))
            print(f"ε={eps:g} d={d} done", file=sys.stderr)
    print(f"n = {n:,} Zipf({ZIPF_S}) users, {reps} repetitions per cell; MSE of the frequencies (ĉ/n), "
          "± its standard error over repetitions; exact = mean exact variance")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
