"""Simulated collections: populations (:mod:`ldp.simulation.population`), the two honest simulation paths and what
they ask of a protocol (:mod:`ldp.simulation.base`), the entry points :func:`simulate`, :func:`accuracy` and
:func:`default_candidates` (:mod:`ldp.simulation.collect`), and each protocol family's own simulation: means
(:mod:`ldp.simulation.numeric`), several attributes (:mod:`ldp.simulation.multi`), discovery
(:mod:`ldp.simulation.pem`, :mod:`ldp.simulation.rappor_ngrams`), candidate scoring (:mod:`ldp.simulation.rappor`,
:mod:`ldp.simulation.sfp`, :mod:`ldp.simulation.sketch`) and Google's RAPPOR regression test
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
