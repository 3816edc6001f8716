"""Subset Selection, server side: the per-value support counts, estimator, exact variance.

SS is a pure frequency oracle (:mod:`ldp.decoders.pure`) with ``p* = p`` (the realized
``ωe^ε/(ωe^ε + d − ω)``) and ``q* = (ω − p)/(d − 1)``: ``O_v``, the reports whose subset holds ``v``, is a sum
of ``f_v`` Bernoulli(p*) and ``n − f_v`` Bernoulli(q*) indicators, independent across users (not across values:
each subset has exactly ω elements, which does not matter for one value's variance). So
``ĉ_v = (O_v − n·q*)/(p* − q*)`` is unbiased and, for the rounded ω exactly,

    ``Var[ĉ_v] = (f_v·p*(1−p*) + (n − f_v)·q*(1−q*))/(p* − q*)²``.

Simulation: the law of the aggregate has no product form (each subset has exactly ω ones), so
:meth:`SSAggregate.simulate` encodes every report with the vectorized kernel (exact, O(n·d) work).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.histogram import row_padding_mask, row_popcount
from ldp.decoders.base import RejectHandler
from ldp.decoders.randomized_response import _true_counts
from ldp.decoders.unary import UnaryAggregate, unary_variance
from ldp.encoders.subset_selection import SSParams
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

__all__ = ["SSAggregate", "ss_variance"]


def ss_variance(params: SSParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_v]`` of each value's count estimate given the true counts ``f_v`` (module docstring)."""
    return unary_variance(params, true_counts)


class SSAggregate(UnaryAggregate):
    """Sufficient statistics of Subset Selection: per value, the reports whose subset holds it (the estimator
    and ``exact_variance`` are unary encoding's pure-oracle ones, with SS's ``p*`` and ``q*``)."""

    params_type: ClassVar[Any] = SSParams
    params: SSParams

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        """The base's checks, after rejecting (``bad_value``) the rows without exactly ω ones."""
        p = self.params
        got = {f.name: f for f in batch.schema}
        if ((batch.protocol, batch.fingerprint) != (p.protocol, p.fingerprint) or set(got) != {"bits"}
                or got["bits"].kind != "bits" or got["bits"].size != p.domain_size):
            return super()._add_batch(batch, on_reject)  # rejected whole by the base
        bad = row_popcount(batch.columns["bits"] & row_padding_mask(p.domain_size)) != p.omega
        if not bad.any():
            return super()._add_batch(batch, on_reject)
        return self._add_batch_without(batch, bad, "bad_value", f"not exactly omega={p.omega} ones", on_reject,
                                       super()._add_batch)

    @classmethod
    def simulate(cls, params: SSParams, true_counts: Any, rng: Any = None) -> SSAggregate:
        """An exact draw by encoding every report (vectorized, in chunks of about 2^20 reports)."""
        from ldp.batch.subset_selection import ss_encode_batch

        t = _true_counts(true_counts, params.domain_size)
        gen, agg = as_generator(rng), cls(params)
        values = np.repeat(np.arange(params.domain_size), t)
        for start in range(0, values.size, 1 << 20):
            agg._fold({"bits": ss_encode_batch(params, values[start:start + (1 << 20)], gen)})
        agg.n = int(t.sum())
        return agg
