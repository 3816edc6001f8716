"""Client-side encoders: standard library, mmh3 and bitarray only (never numpy at import time).

A client app vendors this package; it contains no numpy code. ``encode_batch`` (simulation only)
imports its numpy kernel from :mod:`ldp.batch` when called.
"""

from ldp.encoders.base import Encoder, ProtocolParams
from ldp.encoders.cms import CmsEncoder, CmsParams
from ldp.encoders.hadamard_response import HREncoder, HRParams
from ldp.encoders.hcms import HcmsEncoder, HcmsParams
from ldp.encoders.histogram import (
    BucketGRREncoder,
    BucketGRRParams,
    BucketOUEEncoder,
    BucketOUEParams,
    DBitFlipEncoder,
    DBitFlipParams,
)
from ldp.encoders.local_hashing import BLHEncoder, BLHParams, OLHEncoder, OLHParams
from ldp.encoders.longitudinal import LGRREncoder, LGRRParams, MemoMeanEncoder, MemoMeanParams
from ldp.encoders.multi import MultiEncoder, MultiParams
from ldp.encoders.numeric import (
    DuchiEncoder,
    DuchiParams,
    HybridEncoder,
    HybridParams,
    PiecewiseEncoder,
    PiecewiseParams,
)
from ldp.encoders.pem import PEMEncoder, PEMParams
from ldp.encoders.randomized_response import BinaryRREncoder, BinaryRRParams, GRREncoder, GRRParams
from ldp.encoders.rappor import RapporEncoder, RapporParams
from ldp.encoders.rappor_ngrams import RapporNgramsEncoder, RapporNgramsParams
from ldp.encoders.subset_selection import SSEncoder, SSParams
from ldp.encoders.unary import LOUEEncoder, LOUEParams, OUEEncoder, OUEParams, SUEEncoder, SUEParams
from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.reports import Report, ReportError

__all__ = [
    "HREncoder", "HRParams", "SSEncoder", "SSParams", "BLHEncoder", "BLHParams", "OLHEncoder", "OLHParams",
    "BudgetExceeded", "BudgetLedger", "BudgetPolicy", "PrivacyCost", "Encoder", "ProtocolParams",
    "BinaryRREncoder", "BinaryRRParams", "GRREncoder", "GRRParams", "RapporEncoder", "RapporParams",
    "CmsEncoder", "CmsParams", "HcmsEncoder", "HcmsParams",
    "DBitFlipEncoder", "DBitFlipParams", "BucketGRREncoder", "BucketGRRParams",
    "DuchiEncoder", "DuchiParams", "PiecewiseEncoder", "PiecewiseParams", "HybridEncoder", "HybridParams",
    "LGRREncoder", "LGRRParams", "MemoMeanEncoder", "MemoMeanParams", "MultiEncoder", "MultiParams",
    "SUEEncoder", "SUEParams", "OUEEncoder", "OUEParams", "LOUEEncoder", "LOUEParams", "BucketOUEEncoder",
    "BucketOUEParams", "PEMEncoder", "PEMParams", "RapporNgramsEncoder", "RapporNgramsParams",
    "Report", "ReportError",
]
