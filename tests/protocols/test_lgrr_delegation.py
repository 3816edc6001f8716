"""L-GRR's aggregate is GRR's over the composed channel (issue 48): its folded bytes, estimates, exact variance,
aggregate-level draw and planner variance are pinned, bit for bit, to what L-GRR's own copy of GRR's estimator gave
before it delegated (the digests below were computed from that copy, commit "L-GRR: pin the aggregate's outputs"),
and equal GRR's formulas with L-GRR's ``(p*, q*)``."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ldp.decoders.base import Aggregate
from ldp.decoders.longitudinal import LGRRAggregate, lgrr_variance
from ldp.encoders.longitudinal import LGRREncoder, LGRRParams

CASES = [
    (LGRRParams(2.0, 0.5, 3), [600, 300, 100]),
    (LGRRParams(3.0, 1.0, 4, ("n", "e", "s", "w")), [10, 0, 400, 90]),
    (LGRRParams(1.0, 0.3, 2), [700, 300]),
    (LGRRParams(4.0, 1.0, 10), list(range(10, 110, 10))),
    (LGRRParams(8.0, 2.0, 37), [3] * 36 + [900]),
]

PINNED = {
    0: "a7ba7c4d55da2bf3dbbb2d4ded58ce9b29d25585c50d98ce74a6c9c5a2a169eb",
    1: "39ad7d09ee3bf6358d13a4b2ae1721da9d06ead3041969266e8aebcd90e43d6f",
    2: "d1f161788b5ba474fe405102ee249a2f46f4dc6fcd5901a1903181f535f1b541",
    3: "c50ab24b20a7e5a5ea7b695638ae097fb07259d24f06221dc9665f3a4444a904",
    4: "bfdbf730e8a277b786b65f7e1260ae186c1bbe7178708c35536f04ab123275c3",
}


def _outputs(params: LGRRParams, truth: list[int], seed: int) -> list[bytes]:
    """Everything L-GRR's aggregate answers on one seeded collection, as bytes."""
    values = [v for v, c in enumerate(truth) for _ in range(c)]
    batch = LGRREncoder(params, rng=seed, simulation=True).encode_batch(values, seed)
    agg = LGRRAggregate(params)
    agg.add(batch)
    est = agg.estimate(confidence=0.9)
    sim = LGRRAggregate.simulate(params, np.array(truth), rng=seed)
    n = sum(truth)
    return [agg.to_bytes(), Aggregate.from_bytes(agg.to_bytes()).to_bytes(), "\n".join(est.items).encode(),
            est.protocol.encode(), str(est.n).encode(), est.count.tobytes(), est.std_error.tobytes(),
            est.ci_low.tobytes(), est.ci_high.tobytes(), sim.to_bytes(), sim.estimate().count.tobytes(),
            np.asarray(LGRRAggregate.exact_variance(params, truth)).tobytes(),
            float(LGRRAggregate.count_variance(params, n, truth[0], params.domain_size)).hex().encode(),
            float(LGRRAggregate.count_variance(params, float(n), 0.25 * n, params.domain_size)).hex().encode()]


def _digest(case: int) -> str:
    params, truth = CASES[case]
    h = hashlib.sha256()
    for seed in (1, 2, 3):
        for part in _outputs(params, truth, seed):
            h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_aggregate_answers_what_it_did_before_delegating(case):
    assert _digest(case) == PINNED[case]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_aggregate_is_grr_over_the_composed_channel(case):
    params, truth = CASES[case]
    ps, qs = params.p_star, params.q_star
    t, n = np.array(truth, dtype=float), sum(truth)
    var = (t * ps * (1 - ps) + (n - t) * qs * (1 - qs)) / (ps - qs) ** 2
    np.testing.assert_allclose(LGRRAggregate.exact_variance(params, truth), var, rtol=1e-12)
    np.testing.assert_allclose(lgrr_variance(params, truth), var, rtol=1e-12)
    assert LGRRAggregate.count_variance(params, n, truth[0], params.domain_size) == pytest.approx(var[0], rel=1e-12)
    agg = LGRRAggregate.simulate(params, np.array(truth), rng=7)
    est = agg.estimate()
    c = agg.counts.astype(float)
    np.testing.assert_allclose(est.count, (c - n * qs) / (ps - qs), rtol=1e-12, atol=1e-9)
    assert est.protocol == "lgrr" and est.items == [params.label_of(i) for i in range(params.domain_size)]
