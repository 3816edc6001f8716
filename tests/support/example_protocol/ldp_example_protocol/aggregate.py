"""The server half of ``example-krr``: GRR's aggregate (counts of reported indices, the unbiased estimator and its
exact variance) serving the example's parameters."""

from __future__ import annotations

from ldp.decoders.randomized_response import GRRAggregate
from ldp_example_protocol.encoder import ExampleKRRParams


class ExampleKRRAggregate(GRRAggregate):
    params_type = ExampleKRRParams
