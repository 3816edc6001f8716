"""The charge-on-change protocol, server side: GRR's aggregate and estimator, and the exact variance of one window's
counts and of the change between two windows.

One window. Each device sends one report, its current epoch's response: over the devices' secrets a GRR of its
value with ``p = e^ε/(e^ε + k − 1)``, ``q = (1 − p)/(k − 1)``, independent across devices. So GRR's estimator
``ĉ_v = (C_v − n·q)/(p − q)`` is unbiased with ``Var[ĉ_v] = (f_v·p(1 − p) + (n − f_v)·q(1 − q))/(p − q)²``.

Two windows, the same ``n`` devices. ``Δ̂_v = ĉ'_v − ĉ_v = (C'_v − C_v)/(p − q)`` estimates the change of the count
without bias. A device whose two reports are in one epoch sends the same response twice and adds exactly nothing to
``C'_v − C_v``; one whose reports are in different epochs (values ``u`` then ``w``, possibly equal after a change
and a change back) sends two independent GRRs. With ``moved[u, w]`` such devices and ``π_v(x) = p`` if ``x = v``
else ``q``:

    ``Var[Δ̂_v] = Σ_{u,w} moved[u, w]·(π_v(u)(1 − π_v(u)) + π_v(w)(1 − π_v(w)))/(p − q)²``,

the noise of the devices that moved only, where fresh responses every window would give ``Var[ĉ_v] + Var[ĉ'_v]``
over all ``n`` devices (:func:`change_variance`, :func:`fresh_change_variance`). This is the point of replaying within
an epoch for tracking a statistic over time (Joseph et al. 2018, §1): the estimate moves only when devices do.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from ldp.decoders.randomized_response import GRRBackedAggregate, grr_variance
from ldp.decoders.results import Estimates
from ldp.encoders.thresh import ThreshParams

__all__ = ["ThreshAggregate", "thresh_variance", "change_estimate", "change_variance", "fresh_change_variance"]

Floats = npt.NDArray[np.float64]


def thresh_variance(params: ThreshParams, true_counts: npt.ArrayLike) -> Floats:
    """Exact ``Var[ĉ_v]`` of one window (GRR's, module docstring)."""
    return grr_variance(params.grr, true_counts)


def _moved(params: ThreshParams, moved: npt.ArrayLike) -> Floats:
    m = np.asarray(moved, dtype=np.float64)
    k = params.domain_size
    if m.shape != (k, k) or (m.size and (not np.isfinite(m).all() or m.min() < 0)):
        raise ValueError(f"moved must be a ({k}, {k}) array of non-negative counts, got shape {m.shape}")
    return m


def change_variance(params: ThreshParams, moved: npt.ArrayLike) -> Floats:
    """Exact ``Var[Δ̂_v]`` between two windows of the same devices, ``moved[u, w]`` of which reported in different
    epochs with values ``u`` then ``w`` (module docstring); devices that stayed in one epoch add nothing."""
    m = _moved(params, moved)
    p, q = params.p, params.q
    a, b = p * (1.0 - p), q * (1.0 - q)
    before, after = m.sum(axis=1), m.sum(axis=0)  # movers by their old value u, by their new value w
    total = m.sum()
    # Σ_{u,w} m[u,w]·(π_v(u)(1−π_v(u)) + π_v(w)(1−π_v(w))) = (before_v + after_v)·a + (2·total − before_v − after_v)·b
    return ((before + after) * a + (2.0 * total - before - after) * b) / (p - q) ** 2


def fresh_change_variance(params: ThreshParams, counts_before: npt.ArrayLike, counts_after: npt.ArrayLike) -> Floats:
    """``Var[ĉ'_v − ĉ_v]`` had every report been a fresh GRR (independent windows): the sum of the two windows'."""
    return thresh_variance(params, counts_before) + thresh_variance(params, counts_after)


def change_estimate(before: ThreshAggregate, after: ThreshAggregate) -> Floats:
    """``Δ̂_v = (C'_v − C_v)/(p − q)``: the change of each value's count between two windows of the same devices."""
    if before.params != after.params or before.n != after.n:
        raise ValueError("the two windows must have the same parameters and the same number of devices "
                         f"(got n = {before.n} and {after.n})")
    p, q = before.params.p, before.params.q
    return (after.counts - before.counts) / (p - q)


class ThreshAggregate(GRRBackedAggregate):
    """GRR's sufficient statistics (reports naming each value) for the charge-on-change protocol."""

    params_type: ClassVar[type] = ThreshParams
    params: ThreshParams

    def estimate(self, confidence: float = 0.95) -> Estimates:
        """GRR's unbiased counts of devices per value (one report each), with plug-in standard errors and CIs."""
        return replace(self._as_grr().estimate(confidence), protocol=self.params.protocol,
                       privacy=self.params.privacy_cost)

    @staticmethod
    def exact_variance(params: ThreshParams, true_counts: npt.ArrayLike) -> Floats:
        return thresh_variance(params, true_counts)
