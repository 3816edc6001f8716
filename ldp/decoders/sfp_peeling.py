"""SFP's peeled oracle: scoring records in a sketch given its one fixed hash family.

The detection thresholds of :meth:`~ldp.decoders.sfp.SfpAggregate.discover` hold over random hash families
(apple-and-theory.md §1.4). Given the one family of a deployment, a record or word sharing rows with heavy
ones is biased upward (by thousands of absent records per position on a heavy head), so both of its tests are
peeled (:func:`peeled_oracle`): the detected records are taken off the sketch and everything is scored again
without them.
"""

from __future__ import annotations

import numpy as np

from ldp.decoders.sketch import SketchAggregate

__all__ = ["peeled_oracle", "PEEL_LIMIT"]

PEEL_LIMIT = 5000
""":func:`peeled_oracle` peels from at most this many records above the threshold (the largest)."""


def peeled_oracle(agg: SketchAggregate, table: np.ndarray, level: float,
                  limit: int = PEEL_LIMIT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`~ldp.decoders.sketch.SketchAggregate.oracle` given the hash family: the heavy records
    are peeled off the sketch, and every record is scored again without them.

    Given the family, ``E[M[j, b]] = Σ_{x: h_j(x) = b} f(x)`` (CMS and HCMS alike), so a record
    sharing ``C`` of the ``k`` rows with a heavy one ``y`` is estimated at about ``m/(m−1)·(C/k −
    1/m)·f(y)`` more than its count (apple-and-theory.md §1.4: the estimator is unbiased only over
    the hash draw). Greedy, largest first (at most ``limit`` records above the threshold): a record
    is peeled when its estimate less that bias from the records already peeled is still above
    its threshold, at that value ``f̂``. With ``A`` the sketch of the peeled set ``S`` at ``f̂`` and
    ``F_S = Σ f̂``, the residual sketch ``M − A + F_S/m`` scores every record without ``S`` in one
    more pass over the table; a record of ``S`` gets its own ``f̂`` back. The threshold's ``F2``
    plug-in comes from the residual, so it no longer counts ``S``'s collisions either."""
    sk = agg.sketch()
    count, se, threshold = agg.oracle(table, level, sketch=sk)
    k, m = agg.params.num_hashes, agg.params.width
    above = np.flatnonzero(count > threshold)
    above = above[np.argsort(-count[above], kind="stable")][:limit]
    if above.size == 0:
        return count, se, threshold
    rows = table[above]
    peel: list[int] = []
    f: list[float] = []
    for i, x in enumerate(above.tolist()):
        est = float(count[x])
        if peel:
            shared = (rows[peel] == rows[i]).sum(axis=1)
            est -= m / (m - 1) * float(np.dot(shared / k - 1 / m, f))
        if est > threshold[x]:
            peel.append(i)
            f.append(est)
    idx, fs = above[peel], np.array(f)
    mass = np.zeros((k, m))
    for j in range(k):
        np.add.at(mass[j], table[idx, j], fs)
    count, se, threshold = agg.oracle(table, level, sketch=sk - mass + fs.sum() / m)
    count[idx] += fs
    return count, se, threshold
