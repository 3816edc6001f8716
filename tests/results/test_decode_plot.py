"""``ldp decode --plot``: counts, a mean, and a multi metric's panels (needs matplotlib)."""

from __future__ import annotations

import numpy as np
import pytest

from ldp.decoders.multi import MultiEstimates
from ldp.decoders.numeric import DuchiAggregate
from ldp.decoders.randomized_response import GRRAggregate
from ldp.encoders.numeric import DuchiParams
from ldp.encoders.randomized_response import GRRParams
from ldp.jobs.decode import plot_estimates


@pytest.fixture
def estimates():
    pytest.importorskip("matplotlib")
    mean = DuchiAggregate.simulate(DuchiParams(1.0, 0.0, 10.0), np.full(1000, 3.0), 1).estimate()
    counts = GRRAggregate.simulate(GRRParams(1.0, 4), [10, 20, 30, 40], 1).estimate()
    return mean, counts


@pytest.mark.parametrize("which", ["mean", "counts", "multi"])
def test_every_kind_of_estimate_plots(estimates, which, tmp_path):
    mean, counts = estimates
    est = {"mean": mean, "counts": counts, "multi": MultiEstimates({"minutes": mean, "category": counts})}[which]
    path = tmp_path / "plot.png"
    plot_estimates(est, path, title=which)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
