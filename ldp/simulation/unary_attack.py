"""The maximal gain attack on unary encoding (SUE, OUE; Cao, Jia and Gong 2021, §4).

A fake report sets every target's bit to 1 and, so that its number of 1s looks like an honest report's, as many
other bits as make ``l = round(p + (d − 1)q)`` ones in all (the honest mean), drawn uniformly among the non-target
bits. When ``l < r`` (more targets than an honest report has ones) only the targets are set. The bare variant
(``mga-bare``) sets the targets' bits only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.encoders.unary import OUEParams, SUEParams
from ldp.simulation.attack import Attacker

__all__ = ["UnaryAttacker", "unary_mga_ones"]

BLOCK = 4096


def unary_mga_ones(params: Any) -> int:
    """``l = round(p + (d − 1)q)``: the ones of an MGA report (targets included)."""
    return int(round(params.p + (params.domain_size - 1) * params.q))


class UnaryAttacker(Attacker):
    """MGA for SUE and OUE (module docstring)."""

    params_type = (SUEParams, OUEParams)

    def mga(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
            candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        return self._reports(params, targets, m, gen, unary_mga_ones(params))

    def mga_bare(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
                 candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        return self._reports(params, targets, m, gen, 0)

    @staticmethod
    def _reports(params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator,
                 ones: int) -> dict[str, Any]:
        """``m`` reports: the targets' bits, then uniform other bits up to ``ones`` in all."""
        d = params.domain_size
        ones = max(ones, targets.size)
        rows = np.empty((m, (d + 7) // 8), np.uint8)
        for a in range(0, m, BLOCK):
            keys = gen.random((min(BLOCK, m - a), d))
            keys[:, targets] = -1.0  # targets first, then a uniform order of the others
            order = np.argsort(keys, axis=1)[:, :ones]
            bits = np.zeros(keys.shape, bool)
            np.put_along_axis(bits, order, True, axis=1)
            rows[a:a + keys.shape[0]] = np.packbits(bits, axis=1, bitorder="little")
        return {"bits": rows}
