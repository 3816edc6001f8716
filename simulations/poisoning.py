#!/usr/bin/env python3
"""Poisoning attacks against the law tests: damage and detection rate per protocol, attack and β (prints JSON).

    python simulations/poisoning.py                      # n = 100,000, 10 trials per cell (a few minutes)
    python simulations/poisoning.py --n 20000 --trials 4 # quick
    python simulations/poisoning.py --protocols rappor   # one protocol's rows

Every cell runs ``--trials`` collections of ``--n`` users (Zipf over ``--d`` items, ε = ``--epsilon``), a fraction
β of them fake, ``--targets`` targets drawn at random per trial, the law tests at family-wise ``--alpha`` on
the poisoned window (aggregate and reports). β = 0 is the honest row: its detection rate is the false-alarm rate.
``mga-bare`` (the MGA unpadded) runs only where the protocol's MGA pads (SUE, OUE, RAPPOR).
Each row: mean target gain (the paper's frequency gain, summed over the targets), its standard deviation over the
trials, and the share of trials flagged. docs/poisoning.md quotes the default run.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from ldp.encoders.local_hashing import OLHParams
from ldp.encoders.randomized_response import GRRParams
from ldp.encoders.rappor import RapporParams
from ldp.encoders.unary import OUEParams, SUEParams
from ldp.simulation.attack import Attacker, attacker_for, simulate_attack
from ldp.simulation.population import zipf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--targets", type=int, default=10)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--fractions", default="0,0.01,0.05,0.1")
    ap.add_argument("--attacks", default="mga,mga-bare,random-report,random-value")
    ap.add_argument("--protocols", default="oue,sue,olh,grr,rappor", help="comma-separated protocol names")
    ap.add_argument("--seed", type=int, default=31)
    a = ap.parse_args()
    protocols: list[Any] = [OUEParams(a.epsilon, a.d), SUEParams(a.epsilon, a.d), OLHParams(a.epsilon, a.d),
                 GRRParams(a.epsilon, a.d),
                 RapporParams(num_bloombits=64, num_hashes=2, num_cohorts=32, p=0.25, q=0.75, f=0.5)]
    protocols = [p for p in protocols if p.protocol in a.protocols.split(",")]
    pop = zipf(a.d)
    rows = []
    gen = np.random.default_rng(a.seed)
    for params in protocols:
        for attack in a.attacks.split(","):
            for beta in (float(b) for b in a.fractions.split(",")):
                if beta == 0 and attack != "mga":
                    continue
                if attack == "mga-bare" and type(attacker_for(params)).mga_bare is Attacker.mga_bare:
                    continue
                t0 = time.perf_counter()
                res = [simulate_attack(params, pop, a.n, attack=attack if beta else "random-value", fraction=beta,
                                       targets=a.targets, rng=gen, alpha=a.alpha) for _ in range(a.trials)]
                gains = np.array([r.gain for r in res])
                rows.append({"protocol": params.protocol, "epsilon": round(params.privacy_cost.epsilon, 4),
                             "attack": attack if beta else "honest", "fraction": beta, "n": a.n,
                             "gain": round(float(gains.mean()), 4), "gain_sd": round(float(gains.std(ddof=1)), 4),
                             "detected": sum(r.detected for r in res) / a.trials, "trials": a.trials,
                             "verdicts": sorted({r.evidence.verdict for r in res}),
                             "seconds": round(time.perf_counter() - t0, 2)})
                print(json.dumps(rows[-1]), flush=True)
    print(json.dumps({"n": a.n, "d": a.d, "epsilon": a.epsilon, "targets": a.targets, "alpha": a.alpha,
                      "trials": a.trials, "rows": rows}))


if __name__ == "__main__":
    main()
