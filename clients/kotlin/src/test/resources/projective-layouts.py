"""Writes projective-layouts.json beside this file: Python's default pgr and hpg layouts (best_pgr_field,
best_hpg_layout) over a grid of (epsilon, domain_size), which ProjectiveGeometryTest checks the Kotlin search
against, and Python's refusal (type, code, fields) of PGRParams/HPGParams at every grid point without a layout, at
every point of the extreme ε (EXTREMES: γ is 0 or 1 for every candidate, or for some; where for every one, the
first feasible layout, then epsilon_too_large / epsilon_too_small; param_limit only where none is feasible) and at
a few more.
Run from the repository root: python clients/kotlin/src/test/resources/projective-layouts.py"""

import json
from pathlib import Path

from ldp.encoders.projective_geometry import HPGParams, PGRParams
from ldp.encoders.projective_layout import best_hpg_layout, best_pgr_field
from ldp.errors import Refusal

EPSILONS = [0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.2, 2.5, 3.0, 3.3, 3.5, 4.0,
            4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0, 9.0, 10.0, 11.0, 12.0, 14.0, 16.0, 18.0, 19.9, 20.0, 25.0, 40.0]
DOMAINS = [2, 3, 4, 5, 6, 7, 8, 10, 13, 16, 20, 31, 40, 50, 64, 100, 121, 256, 500, 1000, 1024, 4096, 10000, 65536,
           100000, 1 << 20, 10**7, 1 << 24, 1 << 26, 1 << 28, 1 << 29, 1 << 32]


def layout(e, d, q=None, b=None):
    found = best_hpg_layout(e, d, q, b)
    return [e, d, q, b, list(found) if found else None]


pgr = [[e, d, best_pgr_field(e, d)] for e in EPSILONS for d in DOMAINS]
hpg = [layout(e, d) for e in EPSILONS for d in DOMAINS if d >= 4]
for e in [0.5, 1.0, 2.0, 4.0, 8.0, 25.0]:  # one of q and blocks given
    for d in [4, 20, 1000, 65536, 1 << 24, 1 << 32]:
        hpg += [layout(e, d, q=q) for q in [2, 3, 7, 31, 65521]]
        hpg += [layout(e, d, b=b) for b in [2, 3, 17] if b <= d]

# ε where γ is 0 (past 700) or 1 (expm1(ε)·s below K's half ulp) for every candidate, or for some (1e-15, 1e-16)
EXTREMES = [1e-300, 1e-30, 1e-16, 1e-15, 701.0, 1e300]
EXTREME_DOMAINS = [2, 4, 13, 20, 1000, 65536, 1 << 26, 1 << 28, 1 << 29, 1 << 32]
pgr_extreme = [[e, d, best_pgr_field(e, d)] for e in EXTREMES for d in EXTREME_DOMAINS]
hpg_extreme = [layout(e, d) for e in EXTREMES for d in EXTREME_DOMAINS if d >= 4]
hpg_extreme += [layout(e, d, q=q) for e in EXTREMES for d in [20, 1000] for q in [2, 7, 65521]]
hpg_extreme += [layout(e, d, b=b) for e in EXTREMES for d in [20, 1000] for b in [2, 17]]
pgr += pgr_extreme
hpg += hpg_extreme


def refusal(protocol, params):
    """Python's refusal of ``params`` (None: accepted)."""
    try:
        (PGRParams if protocol == "pgr" else HPGParams)(**params)
    except Refusal as exc:
        kind = "TypeError" if isinstance(exc, TypeError) else "ValueError"
        return {"protocol": protocol, "params": params, "type": kind, "code": exc.code, "fields": exc.fields}
    return None


asked = [("pgr", {"epsilon": e, "domain_size": d}) for e, d, q in pgr if q is None]
asked += [("hpg", {"epsilon": e, "domain_size": d, "q": q, "blocks": b}) for e, d, q, b, found in hpg if found is None]
asked += [("pgr", {"epsilon": e, "domain_size": d}) for e, d, q in pgr_extreme if q is not None]
asked += [("hpg", {"epsilon": e, "domain_size": d, "q": q, "blocks": b})
          for e, d, q, b, found in hpg_extreme if found is not None]
asked += [("pgr", {"epsilon": 1.0, "domain_size": 1 << 28}), ("hpg", {"epsilon": 1.0, "domain_size": 1 << 29}),
          ("pgr", {"epsilon": 8.0, "domain_size": 1 << 26}), ("hpg", {"epsilon": 1.0, "domain_size": 5, "q": 5}),
          ("hpg", {"epsilon": 1.0, "domain_size": 65522, "q": 65521}),  # one block of a line over F_65521
          ("hpg", {"epsilon": 1.0, "domain_size": 1 << 32, "q": 65521}),  # one layout, over the aggregate's limit
          ("pgr", {"epsilon": 701.0, "domain_size": 13}), ("hpg", {"epsilon": 701.0, "domain_size": 13}),
          ("pgr", {"epsilon": 1e-30, "domain_size": 13}), ("hpg", {"epsilon": 1e-30, "domain_size": 13, "blocks": 2}),
          ("pgr", {"epsilon": 701.0, "domain_size": 1000}), ("hpg", {"epsilon": 701.0, "domain_size": 20}),
          ("pgr", {"epsilon": 1e-300, "domain_size": 1000}), ("hpg", {"epsilon": 1e-300, "domain_size": 20})]
asked = [a for i, a in enumerate(asked) if a not in asked[:i]]
refusals = [r for r in (refusal(p, params) for p, params in asked) if r is not None]

rows = lambda xs: ",\n".join("  " + json.dumps(x) for x in xs)  # noqa: E731
text = (f'{{\n "generated_by": "python clients/kotlin/src/test/resources/projective-layouts.py",\n'
        f' "pgr": [\n{rows(pgr)}\n ],\n "hpg": [\n{rows(hpg)}\n ],\n "refusals": [\n{rows(refusals)}\n ]\n}}\n')
Path(__file__).with_name("projective-layouts.json").write_text(text)
print(len(pgr), "pgr and", len(hpg), "hpg layouts,", len(refusals), "refusals of", len(asked), "asked")
