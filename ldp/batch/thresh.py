"""Batch kernel of the charge-on-change protocol (:mod:`ldp.encoders.thresh`), the client's law vectorized.

Without a panel each row is a fresh device, whose first report is a GRR of its value (:func:`ldp.batch.
randomized_response.grr_encode_batch`). With a :class:`ThreshPanel` (``n`` devices' state, updated in place), row
``i`` is device ``i``'s next report: a fresh GRR when its value differs from its previous report's (a new epoch),
else the same response again; calling the kernel once per window simulates repeated collection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.randomized_response import grr_encode_batch
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.thresh import ThreshParams

__all__ = ["ThreshPanel", "thresh_encode_batch"]

Ints = npt.NDArray[np.int64]


class ThreshPanel:
    """``n`` devices' streams: the last value reported (``-1`` before the first), the current epoch's response,
    and the number of epochs each has opened (what its ledger has charged, in units of ε)."""

    def __init__(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"a panel needs n >= 1 devices, got {n!r}")
        self.last: Ints = np.full(n, -1, dtype=np.int64)
        self.response: Ints = np.zeros(n, dtype=np.int64)
        self.epochs: Ints = np.zeros(n, dtype=np.int64)

    @property
    def n(self) -> int:
        return int(self.last.size)


def thresh_encode_batch(params: ThreshParams, values: Any, rng: Any = None, *,
                        panel: ThreshPanel | None = None) -> np.ndarray:
    """Reported indices of ``values``: fresh devices' GRR, or the panel's devices' next reports (module docstring)."""
    if panel is None:
        return grr_encode_batch(params.grr, values, rng)
    x = checked_indices(values, params.domain_size).astype(np.int64)
    if x.size != panel.n:
        raise ValueError(f"the panel holds {panel.n} devices, got {x.size} values (one per device)")
    moved = x != panel.last
    panel.response[moved] = grr_encode_batch(params.grr, x[moved], as_generator(rng))
    panel.last[moved] = x[moved]
    panel.epochs += moved
    return panel.response.astype(np.min_scalar_type(params.domain_size - 1))
