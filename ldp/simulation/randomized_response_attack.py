"""The maximal gain attack on GRR (Cao, Jia and Gong 2021, §4): each fake user reports a target, drawn uniformly
among the targets. A GRR report is one value, so this report is one an honest user could send."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.encoders.randomized_response import GRRParams
from ldp.simulation.attack import Attacker

__all__ = ["GRRAttacker"]


class GRRAttacker(Attacker):
    """MGA for GRR (module docstring)."""

    params_type = GRRParams

    def mga(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
            candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        index = gen.choice(targets, size=m).astype(np.min_scalar_type(params.domain_size - 1))
        return {"index": index}
