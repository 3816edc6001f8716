"""Writes projective_layouts.json: Python's default layouts of ``pgr`` and ``hpg`` on a grid of (epsilon,
domain_size), with the rare-value variance of each choice (``best_pgr_field``, ``best_hpg_layout`` and
``rare_variance`` of ``ldp/encoders/projective_layout.py``), and Python's answer (the fingerprint and cost, or the
refusal's type, code and fields) to parameters that exercise what the vector files do not: a field that is not
prime, the decoder's step limit, no feasible layout (``param_limit`` of the least excess: ``aggregate_cells`` or
``decode_work``), ``hpg``'s given field that holds the domain in one block (``two_blocks``), a given ``q`` or
``blocks`` with the other left out, ε past 20 (every prime up to ``MAX_FIELD`` a candidate), and ε so large or so
small (1e-300, 1e-30, 701, 1e300) that no candidate's ``γ`` is strictly inside (0, 1): the default is then the first
feasible layout, its variance infinite (``null`` here), and the params refuse ε (``epsilon_too_large`` or
``epsilon_too_small``); at 1e-15 only some candidates have a finite variance, and one of them is chosen.
tests/projective.rs checks the Rust client against it.

    python clients/rust/tests/data/projective_layouts.py   # from the repository's root
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ldp.conformance.refusals import builtin_type
from ldp.encoders.projective_geometry import HPGParams, PGRParams
from ldp.encoders.projective_layout import best_hpg_layout, best_pgr_field, dimension, rare_variance
from ldp.errors import Refusal

EPSILONS = [1e-300, 1e-30, 1e-15, 0.05, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 16.0,
            19.9, 20.0, 25.0, 40.0, 701.0, 1e300]
DOMAINS = [2, 3, 4, 5, 7, 13, 31, 100, 257, 1024, 4096, 10_000, 65_536, 1_000_000, 1 << 28, 1 << 32]
# (epsilon, domain_size, q, blocks): hpg searches with one of q and blocks given
HPG_GIVEN = [(1.0, 100, 3, None), (4.0, 1000, 2, None), (8.0, 65_536, 23, None), (2.0, 100, None, 5),
             (6.0, 4096, None, 64), (0.5, 10, 7, None), (3.0, 1_000_000, None, 2), (1.0, 5, 5, None),
             (1.0, 100, 101, None), (25.0, 1_000_000, 7, None), (40.0, 100, None, 4), (701.0, 1000, 5, None),
             (1e-300, 1000, None, 3), (1e-15, 1000, None, 2)]

LABELS = list("abcde")
PARAMS = [
    ("pgr", {"epsilon": 1.0, "domain_size": 13, "q": 4}),
    ("pgr", {"epsilon": 1.0, "domain_size": 13, "q": 1}),
    ("pgr", {"epsilon": 1.0, "domain_size": 10, "q": 65521}),
    ("pgr", {"epsilon": 1.0, "domain_size": 3, "q": 65519}),
    ("pgr", {"epsilon": 1.0, "domain_size": 1 << 32, "q": 65521}),
    ("pgr", {"epsilon": 1.0, "domain_size": 1 << 32, "q": 2}),
    ("pgr", {"epsilon": 1.0, "domain_size": 1 << 32}),
    ("pgr", {"epsilon": 1.0, "domain_size": (1 << 28) + 1}),
    ("pgr", {"epsilon": 1e-10, "domain_size": 13, "q": 3}),
    ("pgr", {"epsilon": 1e-10, "domain_size": 13}),
    ("pgr", {"epsilon": 750.0, "domain_size": 13, "q": 3}),
    ("pgr", {"epsilon": 19.9, "domain_size": 10}),
    ("pgr", {"epsilon": 20.0, "domain_size": 10}),
    ("pgr", {"epsilon": 25.0, "domain_size": 1000}),
    ("pgr", {"epsilon": 40.0, "domain_size": 1_000_000}),
    ("pgr", {"epsilon": 750.0, "domain_size": 13}),
    ("pgr", {"epsilon": 701.0, "domain_size": 1000}),
    ("pgr", {"epsilon": 1e300, "domain_size": 1000}),
    ("pgr", {"epsilon": 1e-300, "domain_size": 1000}),
    ("pgr", {"epsilon": 1e-30, "domain_size": 1000}),
    ("pgr", {"epsilon": 1e-15, "domain_size": 1000}),
    ("pgr", {"epsilon": 701.0, "domain_size": 1 << 32}),
    ("pgr", {"epsilon": 1e-300, "domain_size": 1 << 32}),
    ("pgr", {"epsilon": 1.0, "domain_size": 1 << 28}),
    ("pgr", {"epsilon": 8.0, "domain_size": 1 << 26}),
    ("pgr", {"epsilon": 25.0, "domain_size": 1 << 32}),
    ("pgr", {"epsilon": 12.0, "domain_size": 1_000_000}),
    ("pgr", {"epsilon": 1.5, "domain_size": 5, "labels": LABELS}),
    ("pgr", {"epsilon": 1.5, "domain_size": 5, "q": 4, "labels": ["a"]}),
    ("pgr", {"epsilon": 1.5, "domain_size": 6, "labels": LABELS}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 4}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 4, "blocks": 2}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 4, "blocks": 1}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 4, "blocks": 21}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 65537, "blocks": 2}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": "x"}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "blocks": "x"}),
    ("hpg", {"epsilon": 1.0, "domain_size": 3}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1 << 32, "q": 2, "blocks": 2}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1 << 32, "q": 65521, "blocks": 1 << 32}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1 << 32}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1 << 32, "q": 3}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1000, "blocks": 1000}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1 << 29}),
    ("hpg", {"epsilon": 1.0, "domain_size": 5, "q": 5}),
    ("hpg", {"epsilon": 1.0, "domain_size": 100, "q": 101}),
    ("hpg", {"epsilon": 1.0, "domain_size": 100, "q": 100}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1 << 32, "q": 65521}),
    ("hpg", {"epsilon": 1.0, "domain_size": 1 << 32, "blocks": 2}),
    ("hpg", {"epsilon": 20.0, "domain_size": 1000}),
    ("hpg", {"epsilon": 40.0, "domain_size": 65_536}),
    ("hpg", {"epsilon": 1e-10, "domain_size": 20}),
    ("hpg", {"epsilon": 1e-10, "domain_size": 20, "q": 3, "blocks": 2}),
    ("hpg", {"epsilon": 750.0, "domain_size": 20, "q": 3, "blocks": 2}),
    ("hpg", {"epsilon": 701.0, "domain_size": 20}),
    ("hpg", {"epsilon": 1e300, "domain_size": 1000}),
    ("hpg", {"epsilon": 1e-300, "domain_size": 20}),
    ("hpg", {"epsilon": 1e-30, "domain_size": 1000, "q": 7}),
    ("hpg", {"epsilon": 1e-15, "domain_size": 1000}),
    ("hpg", {"epsilon": 701.0, "domain_size": 1000, "blocks": 4}),
    ("hpg", {"epsilon": 701.0, "domain_size": 1 << 32}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "q": 3}),
    ("hpg", {"epsilon": 1.0, "domain_size": 20, "blocks": 3}),
    ("hpg", {"epsilon": 6.0, "domain_size": 1024}),
    ("hpg", {"epsilon": 2.0, "domain_size": 7, "labels": list("abcdefg")}),
]


def variance(epsilon: float, domain_size: int, q: int, blocks: int) -> float | None:
    """:func:`rare_variance` of the layout; ``None`` (``null``) when infinite (no ``γ`` strictly inside (0, 1))."""
    var = rare_variance(epsilon, q, dimension(q, blocks, domain_size), blocks, domain_size)
    return None if math.isinf(var) else var


def answer(protocol: str, params: dict) -> dict:
    cls = PGRParams if protocol == "pgr" else HPGParams
    try:
        p = cls.from_dict(params)
    except Refusal as exc:
        return {"error": {"type": builtin_type(exc), "code": exc.code, "fields": dict(exc.fields)}}
    return {"resolved": p.to_dict(), "fingerprint": p.fingerprint, "epsilon": p.privacy_cost.epsilon}


def main() -> None:
    pgr, hpg = [], []
    for epsilon in EPSILONS:
        for d in DOMAINS:
            q = best_pgr_field(epsilon, d)
            pgr.append({"epsilon": epsilon, "domain_size": d, "q": q,
                        "variance": None if q is None else variance(epsilon, d, q, 1)})
            if d >= 4:
                layout = best_hpg_layout(epsilon, d)
                hpg.append({"epsilon": epsilon, "domain_size": d, "q": None, "blocks": None,
                            "layout": None if layout is None else list(layout),
                            "variance": None if layout is None else variance(epsilon, d, *layout)})
    for epsilon, d, q, blocks in HPG_GIVEN:
        layout = best_hpg_layout(epsilon, d, q, blocks)
        hpg.append({"epsilon": epsilon, "domain_size": d, "q": q, "blocks": blocks,
                    "layout": None if layout is None else list(layout),
                    "variance": None if layout is None else variance(epsilon, d, *layout)})
    params = [{"protocol": protocol, "params": p, **answer(protocol, p)} for protocol, p in PARAMS]
    out = {"pgr": pgr, "hpg": hpg, "params": params}
    # one entry a line
    text = "{\n" + ",\n".join(
        f"{json.dumps(key)}: [\n" + ",\n".join(json.dumps(item, ensure_ascii=True, allow_nan=False) for item in items)
        + "\n]" for key, items in out.items()) + "\n}\n"
    (Path(__file__).parent / "projective_layouts.json").write_text(text)


if __name__ == "__main__":
    main()
