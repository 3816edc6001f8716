"""Subset Selection, server side: the per-value support counts, estimator, exact variance.

SS is a pure frequency oracle (:mod:`ldp.decoders.pure`) with ``p* = p`` (the realized
``ωe^ε/(ωe^ε + d − ω)``) and ``q* = (ω − p)/(d − 1)``: ``O_v``, the reports whose subset holds ``v``, is a sum
of ``f_v`` Bernoulli(p*) and ``n − f_v`` Bernoulli(q*) indicators, independent across users (not across values:
each subset has exactly ω elements, which does not matter for one value's variance). So
``ĉ_v = (O_v − n·q*)/(p* − q*)`` is unbiased and, for the rounded ω exactly,

    ``Var[ĉ_v] = (f_v·p*(1−p*) + (n − f_v)·q*(1−q*))/(p* − q*)²``.

Server time (issue 61 item 5, ``peers_server`` of ``simulations/bench_peers.py``): at d = 16, ε = 1 the fold of
10⁶ reports took 66 ms, 44 ms of it the check that each row has ω ones (a byte-table popcount summed along each
2-byte row); :func:`row_ones` counts them in 1–2 ms, and fold + estimate is 6–11 ms (the estimate 0.1 ms) against
1.6–2.2 s for multi-freq-ldpy's ``SS_Aggregator_MI`` (a Python loop over each report's ω values): 150–360×.

Simulation: the law of the aggregate has no product form (each subset has exactly ω ones), so
:meth:`SSAggregate.simulate` encodes every report with the vectorized kernel (exact, O(n·d) work).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.histogram import row_padding_mask
from ldp.decoders.base import RejectHandler
from ldp.decoders.randomized_response import _true_counts
from ldp.decoders.unary import UnaryAggregate, unary_variance
from ldp.encoders.subset_selection import SSParams
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

__all__ = ["SSAggregate", "row_ones", "ss_variance"]

_WORDS = {1: "u1", 2: "<u2", 4: "<u4"}  # rows of these byte lengths are one word; others are read as 64-bit words


def ss_variance(params: SSParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_v]`` of each value's count estimate given the true counts ``f_v`` (module docstring)."""
    return unary_variance(params, true_counts)


def row_ones(rows: npt.NDArray[np.uint8], nbits: int) -> npt.NDArray[np.int64]:
    """Set bits among the first ``nbits`` of each packed ``(n, ceil(nbits/8))`` row, as
    :func:`~ldp.batch.histogram.row_popcount` of the masked rows: ``np.bitwise_count`` on the widest words the row
    length divides into, the word counts then added by halving the row (numpy's reduction along a row of a few
    elements costs about 40 ns a row: it was 44 ms of the 66 ms fold of 10⁶ reports at d = 16; this takes 1–2 ms)."""
    r = np.asarray(rows, dtype=np.uint8)
    n, nbytes = r.shape
    if nbytes in _WORDS or nbytes % 8 == 0:
        r = r & row_padding_mask(nbits) if nbits % 8 else np.ascontiguousarray(r)
    else:  # zero bytes up to whole 64-bit words
        padded = np.zeros((n, -(-nbytes // 8) * 8), np.uint8)
        padded[:, :nbytes] = r
        padded[:, nbytes - 1] &= row_padding_mask(nbits)[-1]
        r = padded
    words = r.view(_WORDS.get(r.shape[1], "<u8"))
    c = np.bitwise_count(words).astype(np.uint16 if nbits < 1 << 16 else np.uint32)
    while c.shape[1] > 1:
        h = c.shape[1] // 2
        head = c[:, :h] + c[:, h:2 * h]
        if c.shape[1] % 2:
            head[:, 0] += c[:, 2 * h]
        c = head
    return c[:, 0].astype(np.int64)


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
        bad = row_ones(batch.columns["bits"], p.domain_size) != p.omega
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
