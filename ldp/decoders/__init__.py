"""Server-side decoders (numpy): aggregates, estimators and exact variances for every protocol."""

from ldp.decoders.base import Aggregate, frame_to_batch
from ldp.decoders.randomized_response import GRRAggregate, RRAggregate, grr_variance, rr_variance
from ldp.decoders.results import Estimates

__all__ = ["Aggregate", "Estimates", "GRRAggregate", "RRAggregate", "frame_to_batch", "grr_variance", "rr_variance"]
