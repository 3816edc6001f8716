"""The planner: accuracy, detection limits and privacy of a collection before it is deployed, from the decoders"
exact variance formulas. Counting protocols in :mod:`ldp.plan.frequency`, means in :mod:`ldp.plan.numeric`,
several attributes in :mod:`ldp.plan.multi`, the oracles" ranking in :mod:`ldp.plan.oracles`, report sizes in
:mod:`ldp.plan.costs`. What a counting protocol answers otherwise than a frequency oracle (discovery, charging
modes) is its :class:`~ldp.plan.planners.CountPlanner` in its planner module: :mod:`ldp.plan.pem`,
:mod:`ldp.plan.sfp`, :mod:`ldp.plan.rappor_ngrams`, :mod:`ldp.plan.longitudinal`."""

from ldp.plan.frequency import (
    PLANNED_PROTOCOLS,
    Plan,
    count_variance,
    default_params,
    lgrr_charges,
    plan,
    solve_n,
)
from ldp.plan.oracles import recommend

__all__ = ["Plan", "PLANNED_PROTOCOLS", "default_params", "count_variance", "lgrr_charges", "plan", "solve_n",
           "recommend"]
