"""A maximal gain attack on RAPPOR (both modes), in the spirit of Cao, Jia and Gong's MGA for unary encoding (the
paper does not treat RAPPOR).

A fake report takes a uniform cohort, sets every Bloom bit of every target in that cohort to 1 and, so that its
number of 1s looks honest, as many other bits as make ``l = round(k·p* + h(q* − p*))`` ones in all (the honest
mean of a filter with ``h`` set bits), drawn uniformly among the others. When the targets' bits exceed ``l``
only they are set. The bare variant (``mga-bare``) sets the targets' bits only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.encoders.rappor import RapporParams
from ldp.simulation.attack import Attacker

__all__ = ["RapporAttacker", "rappor_mga_ones"]

BLOCK = 4096


def rappor_mga_ones(params: Any) -> int:
    """``l = round(k·p* + h(q* − p*))``: the ones of an MGA report (the targets' bits included)."""
    return int(round(params.num_bloombits * params.p_star + params.num_hashes * (params.q_star - params.p_star)))


class RapporAttacker(Attacker):
    """MGA for RAPPOR (module docstring); ``candidates`` names the targets' strings."""

    params_type = RapporParams

    def mga(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
            candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        return self._reports(params, targets, m, gen, candidates, rappor_mga_ones(params))

    def mga_bare(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
                 candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        return self._reports(params, targets, m, gen, candidates, 0)

    @staticmethod
    def _reports(params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator,
                 candidates: Sequence[str] | None, ones: int) -> dict[str, Any]:
        """``m`` reports in uniform cohorts: the targets' bits, then uniform other bits up to ``ones`` in all."""
        from ldp.batch.rappor import bloom_index_table

        if candidates is None:
            raise ValueError("RAPPOR's attack needs the candidate strings the targets index")
        k, cohorts = params.num_bloombits, params.num_cohorts
        idx = bloom_index_table(params, [candidates[int(t)] for t in targets])  # (r, m, h)
        union = np.zeros((cohorts, k), bool)
        for c in range(cohorts):
            union[c, np.unique(idx[:, c, :])] = True
        coh = gen.integers(0, cohorts, size=m).astype(np.min_scalar_type(cohorts - 1))
        rows = np.empty((m, (k + 7) // 8), np.uint8)
        for a in range(0, m, BLOCK):
            base = union[coh[a:a + BLOCK]]
            keys = np.where(base, -1.0, gen.random(base.shape))  # the targets' bits first, then the others
            take = np.maximum(base.sum(axis=1), ones)
            rank = np.argsort(np.argsort(keys, axis=1), axis=1)
            rows[a:a + base.shape[0]] = np.packbits(rank < take[:, None], axis=1, bitorder="little")
        return {"cohort": coh, "bits": rows}
