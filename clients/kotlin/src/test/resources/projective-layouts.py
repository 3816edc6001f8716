"""Writes projective-layouts.json beside this file: Python's default pgr and hpg layouts (best_pgr_field,
best_hpg_layout) over a grid of (epsilon, domain_size), which ProjectiveGeometryTest checks the Kotlin search
against. Run from the repository root: python clients/kotlin/src/test/resources/projective-layouts.py"""

import json
from pathlib import Path

from ldp.encoders.projective_layout import best_hpg_layout, best_pgr_field

EPSILONS = [0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.2, 2.5, 3.0, 3.3, 3.5, 4.0,
            4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0, 9.0, 10.0, 11.0, 12.0, 14.0, 16.0, 18.0, 19.9]
DOMAINS = [2, 3, 4, 5, 6, 7, 8, 10, 13, 16, 20, 31, 40, 50, 64, 100, 121, 256, 500, 1000, 1024, 4096, 10000, 65536,
           100000, 1 << 20, 10**7, 1 << 24, 1 << 28, 1 << 32]


def layout(e, d, q=None, b=None):
    found = best_hpg_layout(e, d, q, b)
    return [e, d, q, b, list(found) if found else None]


pgr = [[e, d, best_pgr_field(e, d)] for e in EPSILONS for d in DOMAINS]
hpg = [layout(e, d) for e in EPSILONS for d in DOMAINS if d >= 4]
for e in [0.5, 1.0, 2.0, 4.0, 8.0]:  # one of q and blocks given
    for d in [4, 20, 1000, 65536, 1 << 24]:
        hpg += [layout(e, d, q=q) for q in [2, 3, 7, 31]]
        hpg += [layout(e, d, b=b) for b in [2, 3, 17] if b <= d]

rows = lambda xs: ",\n".join("  " + json.dumps(x) for x in xs)  # noqa: E731
text = (f'{{\n "generated_by": "python clients/kotlin/src/test/resources/projective-layouts.py",\n'
        f' "pgr": [\n{rows(pgr)}\n ],\n "hpg": [\n{rows(hpg)}\n ]\n}}\n')
Path(__file__).with_name("projective-layouts.json").write_text(text)
print(len(pgr), "pgr and", len(hpg), "hpg layouts")
