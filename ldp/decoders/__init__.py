"""Server-side decoders (numpy): aggregates, estimators and exact variances for every protocol."""

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from ldp.decoders.association import Association, Variable, associate, pair_cost
from ldp.decoders.base import Aggregate, frame_to_batch
from ldp.decoders.hadamard_response import HRAggregate, hr_variance
from ldp.decoders.histogram import BucketGRRAggregate, BucketOUEAggregate, DBitFlipAggregate, dbitflip_variance
from ldp.decoders.local_hashing import LocalHashingAggregate, lh_variance
from ldp.decoders.longitudinal import LGRRAggregate, MemoMeanAggregate
from ldp.decoders.mean_results import MeanEstimate
from ldp.decoders.multi import MultiAggregate, MultiEstimates, multi_variance, recommend_mode
from ldp.decoders.numeric import DuchiAggregate, HybridAggregate, PiecewiseAggregate
from ldp.decoders.pem import PEMAggregate, PEMDiscovery
from ldp.decoders.randomized_response import GRRAggregate, RRAggregate, grr_variance, rr_variance
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, RapporEstimates
from ldp.decoders.rappor_ngrams import RapporNgramsAggregate
from ldp.decoders.rappor_ngrams_discovery import NgramDiscovery
from ldp.decoders.results import Estimates
from ldp.decoders.sketch import SketchAggregate, sketch_variance
from ldp.decoders.subset_selection import SSAggregate, ss_variance
from ldp.decoders.unary import UnaryAggregate, unary_variance

__all__ = ["HRAggregate", "hr_variance", "SSAggregate", "ss_variance", "LocalHashingAggregate", "lh_variance",
           "Aggregate", "CandidateMap", "Estimates", "GRRAggregate", "RRAggregate", "RapporAggregate",
           "RapporEstimates", "SketchAggregate", "frame_to_batch", "sketch_variance", "grr_variance", "rr_variance",
           "DBitFlipAggregate", "BucketGRRAggregate", "dbitflip_variance", "MeanEstimate", "DuchiAggregate",
           "PiecewiseAggregate", "HybridAggregate", "LGRRAggregate", "MemoMeanAggregate",
           "MultiAggregate", "MultiEstimates", "multi_variance", "recommend_mode",
           "UnaryAggregate", "unary_variance", "BucketOUEAggregate", "PEMAggregate", "PEMDiscovery",
           "Association", "Variable", "associate", "pair_cost", "RapporNgramsAggregate", "NgramDiscovery"]
