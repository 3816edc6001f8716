"""``ldp.jobs.store.same_reports``: two aggregate files hold the same reports' statistics when they are the same
bytes, or equal in every array but those the fold's own coins fill (RAPPOR's ``pair_cells`` and ``pair_halves``).
Breaks if it ignores a counted array, the counts, or the parameters."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.rappor import RapporParams
from ldp.jobs.store import same_reports, write_aggregate


def _agg(params: RapporParams, seed: int, n: int = 400) -> RapporAggregate:
    rng = np.random.default_rng(seed)
    agg = RapporAggregate(params)
    agg.keep_pairs = True
    k, m = params.num_bloombits, params.num_cohorts
    bits = rng.integers(0, 2, (n, k), dtype=np.uint8)
    agg._fold({"cohort": rng.integers(0, m, n), "bits": np.packbits(bits, axis=1, bitorder="little")})
    agg.n = n
    return agg


def test_the_same_reports_agree_whatever_the_coins_and_others_do_not(tmp_path: Path) -> None:
    params = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=64, p=0.5, q=0.75, f=0.5)
    a, b, other = _agg(params, 1), _agg(params, 1), _agg(params, 2)
    assert a.pair_halves.size and not np.array_equal(a.pair_halves, b.pair_halves)  # fresh coins each fold
    paths = {}
    for name, agg in (("a", a), ("b", b), ("other", other)):
        paths[name] = tmp_path / f"{name}.agg"
        write_aggregate(paths[name], agg)
    assert same_reports(paths["a"], paths["b"]) and same_reports(paths["a"], paths["a"])
    assert not same_reports(paths["a"], paths["other"])
    b.ones[0, 0] += 1  # one counted array differs
    write_aggregate(paths["b"], b)
    assert not same_reports(paths["a"], paths["b"])
