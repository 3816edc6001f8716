"""Writes (or checks) conformance/layouts/projective.json: the default layouts of ``pgr`` and ``hpg`` as the Python
client chooses them when a spec leaves ``q`` (or ``blocks``) out, and what its params make of parameters the vector
files do not exercise, for the TypeScript, Kotlin and Rust clients to match.

The keys (ldp/encoders/projective_layout.py, projective_geometry.py, projective_space.py); a variance is
``rare_variance`` of the layout, ``null`` where it is infinite (no ``γ`` strictly inside (0, 1)):

* ``pgr``: ``[epsilon, domain_size, q, variance]``, ``q = best_pgr_field(ε, d)`` (``null``: no feasible layout, and
  no variance), over a grid of ε (from 1e-300 to 1e300: past ε ≈ 10.4 every prime up to 65521 is a candidate, past
  700 and below about 1e-16 no candidate's ``γ`` is inside (0, 1), the default then the first feasible layout) and
  d (2 to 2^32), then 200 seeded (ε, d);
* ``hpg``: ``[epsilon, domain_size, q, blocks, layout, variance]``, ``layout = best_hpg_layout(ε, d, q, blocks)``
  (``[q, blocks]``, or ``null``), ``q`` and ``blocks`` as given to the search (``null``: searched for): the grid's d
  from 4, then searches with one of them given;
* ``variances``: ``[epsilon, q, t, blocks, domain_size, variance]``, every feasible layout of a few searches, the
  chosen one or not;
* ``hyperplanes``: ``[q, t, point, r, index]``: the index of the ``r``-th point of the hyperplane of point ``point``
  of ``PG(t−1, q)``, seeded samples over large fields and dimensions;
* ``params``: each a ``protocol``, the ``given`` params dict and what ``from_dict`` makes of it: ``resolved``
  (``to_dict()``), ``fingerprint``, ``t``, ``order`` (K), ``set_size`` (s), ``gamma`` (the realized γ),
  ``effective_epsilon`` and ``cost`` (the privacy cost's ε); or ``error``, the refusal as the vector files write
  one (``type``, ``code``, ``fields``, Python's ``message``). Among them every search above that finds no layout
  (``param_limit`` of the least excess, ``aggregate_cells`` or ``decode_work``, or ``param_relation``
  ``two_blocks``), every one at an extreme ε that finds one (most refuse ε: ``epsilon_too_large``,
  ``epsilon_too_small``), and the cases listed in :data:`PARAMS`.

A client agrees when its search chooses the same layouts, its variances are the same doubles, its hyperplane points
the same, and it resolves each accepted dict to the same params and fingerprint (the same ``t``, K, s and γ, its ε
and cost within a few ulps) and refuses each refused one with the same type, code and fields. Integers are exact
(a refusal's ``got`` may pass 2^53). Standard library and the ldp package only; tests/conformance/
test_layout_vectors.py checks the file is fresh.

Run from anywhere: python conformance/layout_vectors.py [--check]"""
from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

root = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(root))  # this checkout's ldp, whatever the environment has installed
sys.path.insert(0, str(root / "conformance"))
from spec_vectors import render, write_or_check  # noqa: E402, F401  # render: the test's

from ldp.conformance.refusals import refusal_of  # noqa: E402  # after the path is set
from ldp.encoders.projective_geometry import HPGParams, PGRParams  # noqa: E402
from ldp.encoders.projective_layout import (  # noqa: E402
    best_hpg_layout,
    best_pgr_field,
    dimension,
    field_candidates,
    rare_variance,
)
from ldp.encoders.projective_space import hyperplane_point, point_index, point_vector, points  # noqa: E402
from ldp.errors import Refusal  # noqa: E402

PATH = root / "conformance" / "layouts" / "projective.json"
FORMAT = 1

EXTREMES = (1e-300, 1e-30, 1e-16, 1e-15, 701.0, 1e300)
"""ε where ``γ`` is 1 (``expm1(ε)·s`` below K's half ulp) or 0 (past 700) at every candidate, or at some."""
EPSILONS = (*EXTREMES[:4], 0.001, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.2,
            2.5, 3.0, 3.3, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0, 9.0, 10.0, 10.5, 12.0, 16.0, 19.9,
            20.0, 25.0, 40.0, *EXTREMES[4:])
DOMAINS = (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 16, 20, 21, 31, 32, 40, 50, 57, 64, 100, 121, 133, 256, 257, 500, 1000,
           1024, 4096, 10_000, 65_536, 100_000, 10**6, 1 << 20, 10**7, 1 << 24, 1 << 26, 10**8, 1 << 28, 1 << 29,
           1 << 32)
WIDE_DOMAINS = (2, 3, 4, 5, 13, 20, 100, 1000, 1024, 65_536, 10**6, 1 << 20, 1 << 24, 1 << 26, 10**8, 1 << 28,
                1 << 29, 1 << 32)
"""The grid's d from ε = 10 on, where a search weighs (nearly) every prime up to 65521."""
EXTREME_DOMAINS = (2, 4, 13, 20, 1000, 65_536, 1 << 26, 1 << 28, 1 << 29, 1 << 32)
"""The d of the searches at an extreme ε whose params are asked for (every one without a layout is)."""
# hpg's searches with one of q and blocks given: every (ε, d, q) and (ε, d, blocks) of these, then HPG_GIVEN
GIVEN_EPSILONS, GIVEN_DOMAINS = (0.5, 1.0, 2.0, 4.0, 8.0, 25.0), (4, 20, 1000, 65_536, 1 << 24, 1 << 32)
GIVEN_Q, GIVEN_BLOCKS = (2, 3, 7, 31, 65521), (2, 3, 17)
HPG_GIVEN = [(e, d, q, None) for e in EXTREMES for d in (20, 1000) for q in (2, 7, 65521)] + [
    (e, d, None, b) for e in EXTREMES for d in (20, 1000) for b in (2, 17)] + [
    (1.0, 100, 3, None), (4.0, 1000, 2, None), (8.0, 65_536, 23, None), (2.0, 100, None, 5), (6.0, 4096, None, 64),
    (0.5, 10, 7, None), (3.0, 10**6, None, 2), (1.0, 5, 5, None), (1.0, 100, 101, None), (25.0, 10**6, 7, None),
    (40.0, 100, None, 4), (701.0, 1000, 5, None), (1e-300, 1000, None, 3), (1e-15, 1000, None, 2)]


def _pgr(epsilon: float, domain_size: int, **given: Any) -> tuple[str, dict[str, Any]]:
    return "pgr", {"epsilon": epsilon, "domain_size": domain_size, **given}


def _hpg(epsilon: float, domain_size: int, **given: Any) -> tuple[str, dict[str, Any]]:
    return "hpg", {"epsilon": epsilon, "domain_size": domain_size, **given}


D32, ABCDE = 1 << 32, list("abcde")
PARAMS = [
    # defaults resolved: past ε = 20 too, where every prime is a candidate
    _pgr(1.0, 13), _pgr(2.0, 1024), _pgr(6.0, 1024), _pgr(0.3, 10**6), _pgr(3.0, D32), _pgr(12.0, 10**6),
    _pgr(19.9, 10), _pgr(20.0, 10), _pgr(20.0, 1 << 20), _pgr(25.0, 1000), _pgr(40.0, 1000), _pgr(40.0, 10**6),
    _pgr(25.0, D32), _hpg(6.0, 1024), _hpg(8.0, 65_536), _hpg(1.0, 4), _hpg(0.5, D32), _hpg(19.0, 10**8),
    _hpg(20.0, 1000), _hpg(25.0, 10**6), _hpg(40.0, 65_536), _hpg(40.0, 10**6), _hpg(40.0, 10**6, q=7),
    # a given field: not prime, out of range, over the decoder's steps or the aggregate's cells, ε past 700 or tiny
    _pgr(1.0, 13, q=4), _pgr(1.0, 13, q=1), _pgr(1.0, 13, q=65521), _pgr(1.0, 10, q=65521), _pgr(1.0, 3, q=65519),
    _pgr(1.0, 2, q=65521), _pgr(1.0, 1 << 20, q=65521), _pgr(1.0, D32, q=65521), _pgr(1.0, D32, q=2),
    _pgr(5.0, 100, q=151), _pgr(1e-10, 13, q=3), _pgr(1e-300, 13, q=3), _pgr(700.0, 13, q=3), _pgr(750.0, 13, q=3),
    _pgr(45.0, 13, q=3),
    _hpg(1.0, 20, q=4), _hpg(1.0, 20, q=4, blocks=2), _hpg(1.0, 20, q=4, blocks=1), _hpg(1.0, 20, q=4, blocks=21),
    _hpg(1.0, 20, q=65537, blocks=2), _hpg(1.0, 20, q="x"), _hpg(1.0, 20, blocks="x"), _hpg(1.0, 3),
    _hpg(1.0, 20, q=3), _hpg(1.0, 20, blocks=3), _hpg(1.0, 20, q=3, blocks=21), _hpg(1.0, 20, q=1, blocks=2),
    _hpg(1.0, 20, q=65522), _hpg(1.0, 100, q=100), _hpg(1.0, 1000, blocks=1000), _hpg(1.0, D32, q=3),
    _hpg(1.0, D32, q=2, blocks=2), _hpg(1.0, D32, q=65521, blocks=D32), _hpg(4.0, 10**6, q=7),
    _hpg(4.0, 10**6, blocks=50), _hpg(4.0, 10**6, q=8), _hpg(4.0, 10**6, q=8, blocks=3),
    _hpg(4.0, 10**6, q=7, blocks=10**6), _hpg(4.0, D32, q=65521, blocks=D32), _hpg(4.0, D32, q=2, blocks=1 << 28),
    _hpg(4.0, D32, q=2, blocks=1 << 26), _hpg(4.0, 1 << 28, q=2, blocks=10**8), _hpg(1e-10, 20),
    _hpg(1e-10, 20, q=3, blocks=2), _hpg(1e-300, 20, q=3, blocks=2), _hpg(750.0, 20, q=3, blocks=2),
    # labels
    _pgr(1.5, 5, labels=ABCDE), _pgr(1.5, 5, q=4, labels=["a"]), _pgr(1.5, 6, labels=ABCDE),
    _pgr(1.0, 3, labels=["a", "b", "b"]), _hpg(2.0, 7, labels=list("abcdefg")),
    # no feasible layout: every candidate over 2^28 outputs (aggregate_cells, the fewest), else the least decode work
    _pgr(1.0, 1 << 28), _pgr(1.0, (1 << 28) + 1), _pgr(1.0, D32), _pgr(8.0, 1 << 26), _pgr(701.0, 1 << 26),
    _hpg(1.0, 1 << 29), _hpg(1.0, D32), _hpg(1.0, D32, q=2), _hpg(1.0, D32, blocks=2), _hpg(1.0, D32, q=65521),
    _hpg(12.0, 1 << 28, q=65521), _hpg(701.0, D32, blocks=2), _hpg(1.0, 65_522, q=65521),
    # γ 0 or 1 at every feasible candidate: the first feasible one, then ε refused for what it is (or the least
    # excess when none is feasible); at 1e-15 only some are, and one of those is chosen
    _pgr(1e-10, 13), _pgr(701.0, 13), _pgr(750.0, 13), _pgr(1e-30, 13), _pgr(701.0, 1000), _pgr(1e300, 1000),
    _pgr(1e-300, 1000), _pgr(1e-30, 1000), _pgr(1e-15, 1000), _pgr(701.0, D32), _pgr(1e-300, D32),
    _hpg(701.0, 13), _hpg(1e-30, 13, blocks=2), _hpg(701.0, 20), _hpg(1e-300, 20), _hpg(701.0, 20, q=3),
    _hpg(1e300, 1000), _hpg(1e-30, 1000, q=7), _hpg(1e-15, 1000), _hpg(701.0, 1000, blocks=4), _hpg(701.0, D32),
    _hpg(1e-300, 10**6, q=7), _hpg(701.0, 10**6, blocks=50),
    _hpg(701.0, 59_110_953, blocks=3), _hpg(1e-300, 59_110_953, blocks=3),  # F_2 over the decode limit: F_3
    # hpg's q given and every t at it one block: two_blocks
    _hpg(1.0, 5, q=5), _hpg(1.0, 20, q=19), _hpg(1.0, 20, q=65521), _hpg(1.0, 20, q=18), _hpg(1.0, 100, q=101),
]
"""Parameters whose answer a client's test looks up, or that exercise what the grid does not."""


def _variance(epsilon: float, domain_size: int, q: int, blocks: int) -> float | None:
    """:func:`rare_variance` of the layout; ``None`` (``null``) when infinite."""
    var = rare_variance(epsilon, q, dimension(q, blocks, domain_size), blocks, domain_size)
    return None if math.isinf(var) else var


def _pgr_row(epsilon: float, domain_size: int) -> list[Any]:
    q = best_pgr_field(epsilon, domain_size)
    return [epsilon, domain_size, q, None if q is None else _variance(epsilon, domain_size, q, 1)]


def _hpg_row(epsilon: float, domain_size: int, q: int | None = None, blocks: int | None = None) -> list[Any]:
    layout = best_hpg_layout(epsilon, domain_size, q, blocks)
    return [epsilon, domain_size, q, blocks, None if layout is None else list(layout),
            None if layout is None else _variance(epsilon, domain_size, *layout)]


def _sample() -> list[tuple[float, int]]:
    """200 seeded (ε, d): ε log-uniform in [0.01, 19.9], d log-uniform in [2, 2^32]."""
    rng = random.Random(20240611)
    return [(round(10 ** rng.uniform(-2, 1.2988), 6), int(2 ** rng.uniform(1, 32))) for _ in range(200)]


def _searches() -> tuple[list[tuple[float, int]], list[tuple[float, int, int | None, int | None]]]:
    """The ``(ε, d)`` of ``pgr``'s searches and the ``(ε, d, q, blocks)`` of ``hpg``'s, in order, each once."""
    sample = _sample()
    pgr = [(e, d) for e in EPSILONS for d in DOMAINS if e < 10 or d in WIDE_DOMAINS] + sample
    hpg: list[tuple[float, int, int | None, int | None]] = [(e, d, None, None) for e, d in pgr if d >= 4]
    for e in GIVEN_EPSILONS:
        for d in GIVEN_DOMAINS:
            hpg += [(e, d, q, None) for q in GIVEN_Q] + [(e, d, None, b) for b in GIVEN_BLOCKS if b <= d]
    hpg += HPG_GIVEN
    for i, (e, d) in enumerate(sample):  # the sample's with a given q (a third) or blocks (another third)
        if d >= 4 and i % 3 == 0:
            hpg.append((e, d, [2, 3, 5, 7, 13, 31][i % 6], None))
        if d >= 4 and i % 3 == 1:
            hpg.append((e, d, None, min(d, [2, 3, 10, 64][i % 4])))
    return list(dict.fromkeys(pgr)), list(dict.fromkeys(hpg))


def _variances() -> list[list[Any]]:
    """The layouts of a few searches within the aggregate's cells: the first 40 candidate fields, by 1, 2, 7 and
    ⌈d/(q + 1)⌉ blocks."""
    out = []
    for e, d in [(1.0, 13), (2.0, 1024), (6.0, 1024), (8.0, 65536), (0.1, 100), (3.0, D32), (12.0, 10**6),
                 (25.0, 1000), (40.0, 10**6)]:
        for q in field_candidates(e)[:40]:
            for blocks in (1, 2, 7, -(-d // (q + 1))):
                t = dimension(q, blocks, d) if blocks <= d else 0
                if blocks > d or blocks * points(q, t) > 1 << 28:
                    continue
                out.append([e, q, t, blocks, d, _variance(e, d, q, blocks)])
    return out


def _hyperplanes() -> list[list[int]]:
    rng = random.Random(7)
    out = []
    for q, t in [(65521, 2), (65519, 2), (4093, 3), (257, 3), (101, 4), (3, 12), (2, 20), (2, 28), (31, 5)]:
        for _ in range(20):
            point, r = rng.randrange(points(q, t)), rng.randrange(points(q, t - 1))
            out.append([q, t, point, r, point_index(hyperplane_point(point_vector(point, q, t), r, q), q)])
    return out


def _answer(protocol: str, given: dict[str, Any]) -> dict[str, Any]:
    """What ``from_dict`` makes of ``given``: the resolved params, or the refusal."""
    cls = PGRParams if protocol == "pgr" else HPGParams
    try:
        p = cls.from_dict(given)
    except Refusal as exc:
        return {"error": refusal_of(exc, "params", cls.declared_rules())}
    return {"resolved": p.to_dict(), "fingerprint": p.fingerprint, "t": p.dimension, "order": p.order,
            "set_size": p.set_size, "gamma": p.gamma, "effective_epsilon": p.effective_epsilon,
            "cost": p.privacy_cost.epsilon}


def _params(pgr: list[list[Any]], hpg: list[list[Any]]) -> list[dict[str, Any]]:
    """:data:`PARAMS`, then each search that finds no layout (each refused) and each at an extreme ε that finds one,
    each dict once."""
    none = [_pgr(e, d) for e, d, q, _ in pgr if q is None]
    none += [_hpg(e, d, q=q, blocks=b) for e, d, q, b, layout, _ in hpg if layout is None]
    extreme = [_pgr(e, d) for e, d, q, _ in pgr if q is not None and e in EXTREMES and d in EXTREME_DOMAINS]
    extreme += [_hpg(e, d, q=q, blocks=b) for e, d, q, b, layout, _ in hpg
                if layout is not None and e in EXTREMES and d in EXTREME_DOMAINS]
    out: dict[str, dict[str, Any]] = {}
    for protocol, given in PARAMS + none + extreme:
        key = json.dumps([protocol, given], sort_keys=True)
        if key not in out:
            out[key] = {"protocol": protocol, "given": given, **_answer(protocol, given)}
    unrefused = [g for p, g in none if "error" not in out[json.dumps([p, g], sort_keys=True)]]
    assert not unrefused, f"searches without a layout, accepted: {unrefused}"
    return list(out.values())


def document() -> dict[str, Any]:
    """The fixture: every search and params dict, and the Python client's answers."""
    pgr_searches, hpg_searches = _searches()
    pgr = [_pgr_row(e, d) for e, d in pgr_searches]
    hpg = [_hpg_row(*s) for s in hpg_searches]
    return {"format": FORMAT, "about": __doc__.split("\n\n")[0].replace("\n", " "), "pgr": pgr, "hpg": hpg,
            "variances": _variances(), "hyperplanes": _hyperplanes(), "params": _params(pgr, hpg)}


def main(argv: list[str]) -> int:
    return write_or_check(argv, PATH, document())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
