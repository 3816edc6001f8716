"""What one report costs in a plan: its size on the wire (:func:`report_bits`) and its privacy per
report, per distinct value and in all (:func:`plan_privacy`), with the memoized protocols' caps (RAPPOR's
ε∞, the longitudinal protocols' charging modes, the n-gram RAPPOR's three PRRs)."""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math

from ldp.encoders.base import ProtocolParams
from ldp.encoders.cms import CmsParams
from ldp.encoders.hadamard_response import HRParams
from ldp.encoders.hcms import HcmsParams
from ldp.encoders.histogram import BucketGRRParams, BucketOUEParams, DBitFlipParams
from ldp.encoders.local_hashing import LocalHashingParams
from ldp.encoders.longitudinal import CHARGING, LGRRParams
from ldp.encoders.pem import PEMParams
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.encoders.rappor import RapporParams
from ldp.encoders.rappor_ngrams import RapporNgramsParams
from ldp.encoders.sfp import SfpParams
from ldp.encoders.unary import LOUEParams, UnaryParams
from ldp.plan.ngrams import ngrams_privacy, ngrams_report_bits
from ldp.plan.pem import pem_report_bits
from ldp.privacy.accountant import PrivacyCost

__all__ = ["report_bits", "plan_privacy", "lgrr_charges"]


def report_bits(params: ProtocolParams, d: int) -> int:
    """Bits of one report's payload on the wire (``d``: the domain size, for GRR's value)."""
    lg = lambda x: max(1, math.ceil(math.log2(x))) if x > 1 else 0  # noqa: E731
    if isinstance(params, BinaryRRParams):
        return 1
    if isinstance(params, (GRRParams, BucketGRRParams, LGRRParams)):
        return lg(d)
    if isinstance(params, (HRParams, LocalHashingParams)):  # uints: j in [0, K); seed and y in [0, g)
        return sum(lg(f.size) for f in params.schema)
    if isinstance(params, (UnaryParams, BucketOUEParams)):  # one bit per value
        return params.domain_size
    if isinstance(params, DBitFlipParams):  # two k-bit fields on the wire
        return 2 * params.num_buckets
    if isinstance(params, RapporParams):
        return params.num_bloombits + lg(params.num_cohorts)
    if isinstance(params, HcmsParams):
        return 1 + lg(params.num_hashes) + lg(params.width)
    if isinstance(params, CmsParams):
        return params.width + lg(params.num_hashes)
    if isinstance(params, SfpParams):
        return lg(params.num_positions) + report_bits(params.word_params, d) + report_bits(params.fragment_params, d)
    if isinstance(params, PEMParams):
        return pem_report_bits(params)
    if isinstance(params, RapporNgramsParams):
        return ngrams_report_bits(params)
    raise TypeError(type(params).__name__)


def plan_privacy(params: ProtocolParams, reports: int, distinct: int) -> tuple[PrivacyCost, PrivacyCost, PrivacyCost]:
    """Per report; per distinct value over ``reports`` reports; in all, by sequential composition.

    RAPPOR memoizes its PRR: one value costs at most ε∞ however often it is reported, so the
    total is at most ``min(R·ε₁, D·ε∞)`` for ``R`` reports of ``D`` distinct values."""
    one = params.privacy_cost
    if isinstance(params, RapporNgramsParams):  # three memoized PRRs: the string's and P n-grams'
        return ngrams_privacy(params, reports, distinct)
    if isinstance(params, RapporParams) and math.isfinite(params.epsilon_inf):
        per_value = PrivacyCost(min(reports * one.epsilon, params.epsilon_inf))
        return one, per_value, PrivacyCost(min(reports * one.epsilon, min(distinct, reports) * params.epsilon_inf))
    if isinstance(params, (LGRRParams, LOUEParams)):  # charging="min", the encoder's default
        per_value = lgrr_charges(params, reports)["min"]
        return one, per_value, PrivacyCost(min(reports * params.report_charge.epsilon,
                                               min(distinct, reports) * params.memo_cap.epsilon))
    return one, one.times(reports), one.times(reports)


def lgrr_charges(params: LGRRParams | LOUEParams, reports: int) -> dict[str, PrivacyCost]:
    """What the ledger charges for ``reports`` reports of one value under each charging mode:
    ``min(R·c, cap)`` with ``c = report_charge`` (``"min"``), ``cap = epsilon_perm`` on the first (``"upfront"``)."""
    cap = params.memo_cap
    out = {"min": PrivacyCost(min(reports * params.report_charge.epsilon, cap.epsilon)), "upfront": cap}
    assert set(out) == set(CHARGING)
    return out
