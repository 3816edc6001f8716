"""Disguised poisoning of RAPPOR (issue 72): fake reports that promote a target string while their number of 1s
follows the honest law, for measuring :mod:`ldp.jobs.rappor_poisoning` against them.

A fake report takes a cohort (uniform, or one fixed cohort), sets its target's Bloom bits in that cohort (all of
them, or only the first: ``one_bit``), draws a number of 1s ``L`` from the honest law of a full filter
(``Binomial(h, q*) + Binomial(k − h, p*)``, at least the bits it sets) and sets ``L`` minus those bits among the
others, uniformly. With several targets, the fake reports take them in turn.

Attacks (:data:`DISGUISES`): ``single`` (one target), ``alternating`` (two targets in turn), ``one-cohort`` (one
target, every fake report in cohort 0), ``one-bit`` (one target, one of its bits set per cohort) and ``honest`` (no
fake report). ``alternating`` takes any number of targets in turn (:func:`disguised_window`'s ``targets``).
The honest users hold values drawn from Zipf(1) over ``d`` synthetic candidates
(:func:`~ldp.decoders.rappor_decode.synthetic_rappor_candidates`); the gain is the targets' estimated frequency
(least squares over every candidate) with the fake users minus without.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["DISGUISES", "DisguisedWindow", "disguised_reports", "disguised_window"]

DISGUISES = ("honest", "single", "alternating", "one-cohort", "one-bit")


def disguised_reports(params: Any, targets: Sequence[str], m: int, rng: Any = None, *, cohort: int | None = None,
                      one_bit: bool = False) -> dict[str, npt.NDArray[Any]]:
    """The columns (``cohort``, ``bits``) of ``m`` disguised fake reports (module docstring), vectorised."""
    from ldp.batch.rappor import bloom_index_table
    from ldp.jobs.rappor_poisoning import rappor_ones_pmfs

    if not targets:
        raise ValueError("give at least one target string")
    gen = np.random.default_rng(rng)
    k, cohorts = params.num_bloombits, params.num_cohorts
    idx = bloom_index_table(params, list(targets))  # (r, m, h)
    coh = (gen.integers(0, cohorts, size=m) if cohort is None else np.full(m, int(cohort))).astype(np.intp)
    which = np.arange(m) % len(targets)
    base = np.zeros((m, k), bool)
    chosen = idx[which, coh]  # (m, h)
    if one_bit:
        chosen = chosen[:, :1]
    base[np.arange(m)[:, None], chosen] = True
    law = rappor_ones_pmfs(params)[-1]
    ones = np.maximum(gen.choice(law.size, size=m, p=law / law.sum()), base.sum(axis=1))
    keys = np.where(base, -1.0, gen.random((m, k)))  # the set bits first, then the others in random order
    rank = np.argsort(np.argsort(keys, axis=1), axis=1)
    rows = np.packbits(rank < ones[:, None], axis=1, bitorder="little")
    return {"cohort": coh.astype(np.min_scalar_type(cohorts - 1)), "bits": rows}


@dataclass(frozen=True)
class DisguisedWindow:
    """One simulated window: the poisoned aggregate (folded as the ingest service folds), the targets and their gain."""

    aggregate: Any
    targets: tuple[str, ...]
    gain: float


def disguised_window(params: Any, attack: str, n: int = 20_000, fraction: float = 0.05, rng: Any = None, *,
                     d: int = 64, gain: bool = True, targets: int | None = None,
                     keep_pairs: bool = True) -> DisguisedWindow:
    """``n`` users, ``round(fraction·n)`` of them fake running ``attack`` (:data:`DISGUISES`) for targets drawn
    among the candidates ``8..d−1`` (not the most popular; ``targets`` of them, taken in turn: by default 2 for
    ``alternating``, 1 otherwise), the fake reports spread evenly among the honest ones, folded in one batch (the
    fold's own coins drawn from ``rng`` too: the window is reproducible; ``keep_pairs``: the aggregate keeps
    ``pair_bins`` at any ``k``, as a fold that knows the candidates does); ``gain``: also decode the window
    without and with the fake users (least squares over the ``d`` candidates)."""
    from ldp.batch.rappor_evidence import BitsTogether
    from ldp.batch.rappor_pairs import PairChoice
    from ldp.decoders.rappor import RapporAggregate
    from ldp.decoders.rappor_decode import CandidateMap, decode, synthetic_rappor_candidates
    from ldp.protocols import get_protocol
    from ldp.reports import ReportBatch
    from ldp.simulation.population import zipf

    if attack not in DISGUISES:
        raise ValueError(f"attack must be one of {DISGUISES}, got {attack!r}")
    gen = np.random.default_rng(rng)
    cands = synthetic_rappor_candidates(params, d)
    fake = 0 if attack == "honest" else int(round(fraction * n))
    count = targets if targets is not None else 2 if attack == "alternating" else 1
    picks = gen.choice(np.arange(8, d), size=count, replace=False)
    chosen = tuple(cands[int(i)] for i in picks)
    values = np.repeat(np.arange(d), zipf(d).counts(n - fake, gen))
    enc: Any = get_protocol(params.protocol).encoder_type(params)
    honest = dict(enc.encode_batch(gen.permutation(values), gen, candidates=cands).columns)
    bad = disguised_reports(params, chosen, fake, gen, cohort=0 if attack == "one-cohort" else None,
                            one_bit=attack == "one-bit")
    is_fake = np.zeros(n, bool)
    is_fake[np.arange(fake, dtype=np.int64) * n // max(fake, 1)] = True
    both = {}
    for key in ("cohort", "bits"):
        col = np.asarray(honest[key])
        out = np.empty((n, *col.shape[1:]), col.dtype)
        out[~is_fake], out[is_fake] = col, np.asarray(bad[key]).astype(col.dtype)
        both[key] = out
    agg = RapporAggregate(params)
    agg.keep_pairs = keep_pairs
    agg._together = BitsTogether(params, gen.integers(2**63))  # the fold's coins from the seed: reproducible
    agg._pairs = PairChoice(params, gen.integers(2**63))
    agg.add(ReportBatch(params.protocol, params.fingerprint, params.schema, both))
    change = 0.0
    if gain and fake:
        clean = RapporAggregate(params)
        clean.add(ReportBatch(params.protocol, params.fingerprint, params.schema, honest))
        cmap = CandidateMap.from_candidates(params, cands)
        before = np.asarray(decode(clean, cmap, selection="none").count) / max(clean.n, 1)
        after = np.asarray(decode(agg, cmap, selection="none").count) / n
        change = float((after - before)[picks].sum())
    return DisguisedWindow(agg, chosen, change)
