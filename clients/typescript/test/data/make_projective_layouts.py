"""Writes ``projective_layouts.json``: the Python client's default layouts of ``pgr`` and ``hpg`` and what its params
make of a few dicts, for test/projective-geometry.test.mjs (the TypeScript search must choose the same ``q`` and
``blocks``, from the same doubles, and refuse as Python does).

Run from this folder with the repository's Python environment (it imports ``ldp``)::

    python make_projective_layouts.py

* ``pgr``: ``[epsilon, domain_size, best_pgr_field(epsilon, domain_size)]`` over a grid of ε (past ε = 20 too, where
  ``field_candidates`` takes ``min(ε, 700)``) and d, and a seeded sample of both;
* ``hpg``: ``[epsilon, domain_size, q, blocks, best_hpg_layout(epsilon, domain_size, q, blocks)]`` over the same,
  with ``q`` and ``blocks`` each null or given;
* ``variances``: ``[epsilon, q, t, blocks, domain_size, rare_variance(...)]`` (the float's repr; ``null`` for
  ``inf``), every feasible layout of a few searches;
* ``params``: a params dict of each protocol and what Python makes of it: the resolved ``to_dict()``, ``t``, ``K``,
  ``s``, ``γ`` and ``ε*`` (floats as their repr), or the refusal's ``type``, ``code`` and ``fields`` (an int beyond
  2^53 as ``{"int": "digits"}``): among them ``_no_layout``'s, ``param_limit`` with the least excess of the candidates
  (``aggregate_cells`` or ``decode_work``) or ``param_relation`` ``two_blocks`` (hpg's ``q`` holds d in one block), and
  ``epsilon_too_large``/``epsilon_too_small`` where ``γ`` is 0 or 1 at every feasible candidate (the search takes the
  first feasible one, whose params refuse ε);
* ``no_layout``: every search of ``pgr`` and ``hpg`` above that finds nothing, as a params dict and Python's refusal of
  it (as in ``params``);
* ``hyperplanes``: ``[q, t, point, r, index]``, the index of the ``r``-th point of the hyperplane of point ``point``
  of ``PG(t−1, q)``, seeded samples over large fields and dimensions.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ldp.conformance.refusals import refusal_of
from ldp.encoders.projective_geometry import HPGParams, PGRParams
from ldp.encoders.projective_layout import (
    best_hpg_layout,
    best_pgr_field,
    dimension,
    field_candidates,
    rare_variance,
)
from ldp.encoders.projective_space import hyperplane_point, point_index, point_vector, points
from ldp.errors import Refusal

HERE = Path(__file__).resolve().parent
EPSILONS = [1e-3, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0,
            10.0, 10.5, 11.0, 12.0, 14.0, 16.0, 19.9, 20.0, 25.0, 40.0]
DOMAINS = [2, 3, 4, 5, 6, 7, 8, 13, 14, 21, 31, 32, 57, 100, 133, 1000, 1024, 4096, 10_000, 65_536, 100_000,
           10**6, 2**20, 2**24, 10**8, 2**32]


def sample() -> list[tuple[float, int]]:
    """The grid, then 200 seeded (ε, d): ε log-uniform in [0.01, 19.9], d log-uniform in [2, 2^32]."""
    rng = random.Random(20240611)
    extra = [(round(10 ** rng.uniform(-2, 1.2988), 6), int(2 ** rng.uniform(1, 32))) for _ in range(200)]
    return [(e, d) for e in EPSILONS for d in DOMAINS] + extra


def variances() -> list[list[Any]]:
    out = []
    for e, d in [(1.0, 13), (2.0, 1024), (6.0, 1024), (8.0, 65536), (0.1, 100), (3.0, 2**32), (12.0, 10**6),
                 (25.0, 1000), (40.0, 10**6)]:
        for q in field_candidates(e)[:40]:
            for blocks in (1, 2, 7, -(-d // (q + 1))):
                if blocks > d:
                    continue
                t = dimension(q, blocks, d)
                if blocks * points(q, t) > 2**28:
                    continue
                v = rare_variance(e, q, t, blocks, d)
                out.append([e, q, t, blocks, d, None if v == float("inf") else repr(v)])
    return out


PARAMS: list[tuple[str, dict[str, Any]]] = [
    ("pgr", {"epsilon": 1.0, "domain_size": 13}),
    ("pgr", {"epsilon": 2.0, "domain_size": 1024}),
    ("pgr", {"epsilon": 6.0, "domain_size": 1024}),
    ("pgr", {"epsilon": 0.3, "domain_size": 10**6}),
    ("pgr", {"epsilon": 3.0, "domain_size": 2**32}),
    ("pgr", {"epsilon": 1.0, "domain_size": 13, "q": 4}),
    ("pgr", {"epsilon": 1.0, "domain_size": 13, "q": 65521}),
    ("pgr", {"epsilon": 1.0, "domain_size": 2**20, "q": 65521}),
    ("pgr", {"epsilon": 1.0, "domain_size": 2**32, "q": 2}),
    ("pgr", {"epsilon": 1.0, "domain_size": 2**32, "q": 65521}),
    ("pgr", {"epsilon": 1e-300, "domain_size": 13, "q": 3}),
    ("pgr", {"epsilon": 700.0, "domain_size": 13, "q": 3}),
    ("pgr", {"epsilon": 45.0, "domain_size": 13, "q": 3}),
    ("pgr", {"epsilon": 1.0, "domain_size": 2, "q": 65521}),
    ("pgr", {"epsilon": 5.0, "domain_size": 100, "q": 151}),
    ("pgr", {"epsilon": 1.0, "domain_size": 3, "labels": ["a", "b", "b"]}),
    ("hpg", {"epsilon": 6.0, "domain_size": 1024}),
    ("hpg", {"epsilon": 8.0, "domain_size": 65536}),
    ("hpg", {"epsilon": 1.0, "domain_size": 4}),
    ("hpg", {"epsilon": 0.5, "domain_size": 2**32}),
    ("hpg", {"epsilon": 4.0, "domain_size": 10**6, "q": 7}),
    ("hpg", {"epsilon": 4.0, "domain_size": 10**6, "blocks": 50}),
    ("hpg", {"epsilon": 4.0, "domain_size": 10**6, "q": 8}),
    ("hpg", {"epsilon": 4.0, "domain_size": 10**6, "q": 8, "blocks": 3}),
    ("hpg", {"epsilon": 4.0, "domain_size": 10**6, "q": 7, "blocks": 10**6}),
    ("hpg", {"epsilon": 4.0, "domain_size": 2**32, "q": 65521, "blocks": 2**32}),
    ("hpg", {"epsilon": 4.0, "domain_size": 2**32, "q": 2, "blocks": 2**28}),
    ("hpg", {"epsilon": 4.0, "domain_size": 2**32, "q": 2, "blocks": 2**26}),
    ("hpg", {"epsilon": 4.0, "domain_size": 2**28, "q": 2, "blocks": 10**8}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 3, "blocks": 21}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 1, "blocks": 2}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 65522}),
    ("hpg", {"epsilon": 1e-300, "domain_size": 20, "q": 3, "blocks": 2}),
    ("hpg", {"epsilon": 19.0, "domain_size": 10**8}),
    # past ε = 20: every prime a candidate
    ("pgr", {"epsilon": 20.0, "domain_size": 2**20}),
    ("pgr", {"epsilon": 25.0, "domain_size": 1000}),
    ("pgr", {"epsilon": 40.0, "domain_size": 1000}),
    ("hpg", {"epsilon": 25.0, "domain_size": 10**6}),
    ("hpg", {"epsilon": 40.0, "domain_size": 10**6}),
    ("hpg", {"epsilon": 40.0, "domain_size": 10**6, "q": 7}),
    # no layout: every candidate over 2^28 outputs (aggregate_cells, the fewest), else the least decode work
    ("pgr", {"epsilon": 1.0, "domain_size": 2**28}),
    ("pgr", {"epsilon": 1.0, "domain_size": 2**32}),
    ("pgr", {"epsilon": 8.0, "domain_size": 2**26}),
    ("pgr", {"epsilon": 701.0, "domain_size": 2**26}),
    ("hpg", {"epsilon": 1.0, "domain_size": 2**29}),
    ("hpg", {"epsilon": 1.0, "domain_size": 2**32, "q": 2}),
    ("hpg", {"epsilon": 1.0, "domain_size": 2**32, "blocks": 2}),
    ("hpg", {"epsilon": 12.0, "domain_size": 2**28, "q": 65521}),
    ("hpg", {"epsilon": 701.0, "domain_size": 2**32, "blocks": 2}),
    # γ 0 or 1 at every feasible candidate (no finite variance): the first feasible one, then ε refused for what it is
    ("pgr", {"epsilon": 701.0, "domain_size": 1000}),
    ("pgr", {"epsilon": 1e-300, "domain_size": 1000}),
    ("hpg", {"epsilon": 701.0, "domain_size": 20}),
    ("hpg", {"epsilon": 1e-300, "domain_size": 20}),
    ("hpg", {"epsilon": 701.0, "domain_size": 20, "q": 3}),
    ("hpg", {"epsilon": 1e-300, "domain_size": 10**6, "q": 7}),
    ("hpg", {"epsilon": 701.0, "domain_size": 10**6, "blocks": 50}),
    ("hpg", {"epsilon": 701.0, "domain_size": 59110953, "blocks": 3}),  # F_2 over the decode limit: F_3
    ("hpg", {"epsilon": 1e-300, "domain_size": 59110953, "blocks": 3}),
    # hpg's q given and every t at it one block: two_blocks
    ("hpg", {"epsilon": 1.0, "domain_size": 5, "q": 5}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 19}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 65521}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 18}),
]


def exact(v: Any) -> Any:
    """An int beyond 2^53 as ``{"int": "digits"}`` (``JSON.parse`` would round it), anything else as it is."""
    return {"int": str(v)} if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 else v


def params_outcome(protocol: str, d: dict[str, Any]) -> dict[str, Any]:
    cls = PGRParams if protocol == "pgr" else HPGParams
    try:
        p = cls.from_dict(d)
    except Refusal as exc:
        error = refusal_of(exc, "params", cls.declared_rules())
        error.pop("message")
        return {"error": {**error, "fields": {k: exact(v) for k, v in error["fields"].items()}}}
    return {"params": p.to_dict(), "t": p.dimension, "order": p.order, "set_size": p.set_size,
            "gamma": repr(p.gamma), "effective_epsilon": repr(p.effective_epsilon), "fingerprint": p.fingerprint}


def main() -> None:
    grid = sample()
    pgr = [[e, d, best_pgr_field(e, d)] for e, d in grid]
    hpg = []
    for i, (e, d) in enumerate(grid):
        if d < 4:
            continue
        hpg.append([e, d, None, None, best_hpg_layout(e, d)])
        if i % 3 == 0:
            q = [2, 3, 5, 7, 13, 31][i % 6]
            hpg.append([e, d, q, None, best_hpg_layout(e, d, q, None)])
        if i % 3 == 1:
            blocks = min(d, [2, 3, 10, 64][i % 4])
            hpg.append([e, d, None, blocks, best_hpg_layout(e, d, None, blocks)])
    no_layout = [{"protocol": "pgr", "given": {"epsilon": e, "domain_size": d}} for e, d, q in pgr if q is None]
    no_layout += [{"protocol": "hpg", "given": {"epsilon": e, "domain_size": d, "q": q, "blocks": blocks}}
                  for e, d, q, blocks, layout in hpg if layout is None]
    for item in no_layout:
        item.update(params_outcome(item["protocol"], item["given"]))
        assert "error" in item, item
    rng = random.Random(7)
    hyperplanes = []
    for q, t in [(65521, 2), (65519, 2), (4093, 3), (257, 3), (101, 4), (3, 12), (2, 20), (2, 28), (31, 5)]:
        for _ in range(20):
            point, r = rng.randrange(points(q, t)), rng.randrange(points(q, t - 1))
            hyperplanes.append([q, t, point, r, point_index(hyperplane_point(point_vector(point, q, t), r, q), q)])
    out = {"pgr": pgr, "hpg": hpg, "variances": variances(), "no_layout": no_layout, "hyperplanes": hyperplanes,
           "params": [{"protocol": p, "given": d, **params_outcome(p, d)} for p, d in PARAMS]}
    text = json.dumps(out, indent=None, separators=(",", ":"), allow_nan=False) + "\n"
    (HERE / "projective_layouts.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
