"""Simulated collections: populations and the two honest simulation paths (:mod:`ldp.simulation.collect`),
means (:mod:`ldp.simulation.numeric`), several attributes (:mod:`ldp.simulation.multi`), discovery
(:mod:`ldp.simulation.pem`, :mod:`ldp.simulation.ngrams`) and Google"s RAPPOR regression test
(:mod:`ldp.simulation.rappor_regtest`)."""

from ldp.simulation.collect import (
    POPULATIONS,
    AccuracyResult,
    MeanAccuracyResult,
    NumericPopulation,
    Population,
    accuracy,
    default_candidates,
    exponential,
    from_counts,
    gaussian,
    make_population,
    simulate,
    uniform,
    zipf,
)

__all__ = ["POPULATIONS", "AccuracyResult", "MeanAccuracyResult", "NumericPopulation", "Population", "accuracy",
           "default_candidates", "exponential", "from_counts", "gaussian", "make_population", "simulate", "uniform",
           "zipf"]
