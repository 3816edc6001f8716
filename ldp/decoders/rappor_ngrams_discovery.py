"""Discovery for RAPPOR with unknown strings (Fanti, Pihur & Erlingsson, PETS 2016): n-grams → strings.

1. **N-grams per position** (``screen=True``, default): the reports of position ``i`` (from either slot)
   are one RAPPOR collection of the tagged n-grams ``"i|g"``; every n-gram a padded string can hold there
   (alphabet and pad, the pad only as a suffix, never first at position 0) is a candidate, so the
   dictionary is complete, and :func:`~ldp.decoders.rappor_decode.decode` keeps those detected by
   Benjamini–Hochberg at ``gram_alpha``, at most ``max_grams`` of them (the largest estimates): the EM
   below costs about ``reports × d_a × d_b`` per map. ``screen=False`` keeps every candidate (small
   alphabets only).
2. **Joint n-gram distribution per position pair** by EM (:func:`ldp.decoders.association.associate`)
   over the kept n-grams of each position plus **other** (any n-gram not kept), from the clients that
   reported that pair; the EM stops when no cell moves by more than ``tol`` or after ``max_maps`` maps
   (``summary["unconverged"]`` lists the pairs that stopped so). Standard errors
   (``se="auto"``): the observed information over the cells the EM left above 10⁻⁹ when its cost
   ``J·K²`` fits, else the bootstrap. A pair of n-grams ``(u, v)`` is **significant** when
   ``π̂_uv > z·SE_uv`` with ``z = z_{1−pair_alpha/K}``, ``K`` the pair's tested cells (``u``, ``v`` both
   kept): a one-sided test of ``π_uv = 0`` with a Bonferroni correction per table, so an absent pair
   passes with probability at most about ``pair_alpha`` per table (asymptotically; a cell near the
   boundary makes the normal approximation rough). A cell the information method holds at the boundary
   (``π̂ ≤ 10⁻⁹``, SE 0) is not significant. (Google's ``decode_ngrams.R`` computes such a threshold,
   then overwrites it with a hard-coded 0.04: a fixed share, whatever the number of reports.)
3. **Candidates**: chains ``g_0 g_1 … g_{P−1}`` whose adjacent pairs ``(g_i, g_{i+1})`` are significant,
   kept only if every non-adjacent pair ``(g_j, g_i)`` is significant too (the P-partite cliques), built
   position by position; more than ``max_candidates`` partial chains raise ``ValueError``. A pad-holding
   n-gram must be followed by all-pad n-grams. The pad suffix is removed.
4. **Strings**: the full-string RAPPOR decoded against the candidates
   (:meth:`~ldp.decoders.rappor_ngrams.RapporNgramsAggregate.estimate`, BH at ``alpha``, with the background
   column for the clients outside them and the n-gram check of :mod:`ldp.decoders.rappor_ngrams_fit`): the
   detected strings with counts, standard errors and intervals; their notes state the mass outside the
   candidates and the check.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.decoders.association import INFORMATION_WORK, Association, Variable, fit_pair, information_se, pair_data
from ldp.decoders.rappor_decode import RapporEstimates, decode
from ldp.decoders.results import Estimates
from ldp.decoders.tabular import ResultTable, jsonable
from ldp.encoders.rappor_ngrams import RapporNgramsParams, gram_value

if TYPE_CHECKING:
    from ldp.decoders.rappor_ngrams import RapporNgramsAggregate

__all__ = ["NgramDiscovery", "discover", "join_candidates", "possible_grams", "MAX_GRAMS"]

MAX_GRAMS = 1 << 16
"""Most candidate n-grams per position the screen decodes."""


def possible_grams(params: RapporNgramsParams, position: int) -> list[str]:
    """Every n-gram a padded string can hold at ``position`` (step 1); ``ValueError`` past :data:`MAX_GRAMS`."""
    a, n = len(params.alphabet), params.n
    total = sum(a ** j for j in range(n + 1))
    if total > MAX_GRAMS:
        raise ValueError(f"{total} possible n-grams per position (alphabet of {a}, n={n}) exceed {MAX_GRAMS}: "
                         "use a shorter n or a smaller alphabet")
    out = ["".join(t) + params.pad * (n - j) for j in range(n, -1, -1)
           for t in itertools.product(params.alphabet, repeat=j)]
    return [g for g in out if not (position == 0 and g[0] == params.pad)]


@dataclass(frozen=True, repr=False)
class NgramDiscovery(ResultTable):
    """What :func:`discover` found: ``strings`` (detected, largest first), ``estimates`` (every candidate,
    the full decode), ``grams`` (kept n-grams per position), ``pairs`` (significant n-gram pairs per position
    pair, with ``π̂``), ``associations`` (the EM tables), ``candidates`` and a ``summary``."""

    strings: Estimates
    estimates: RapporEstimates | None
    grams: list[list[str]]
    pairs: dict[tuple[int, int], list[tuple[str, str, float]]]
    associations: dict[tuple[int, int], Association] = field(repr=False)
    candidates: list[str]
    summary: dict[str, Any]

    json_rows = "strings"

    def columns(self) -> dict[str, Any]:
        """The detected strings' columns."""
        return self.strings.columns()

    def metadata(self) -> dict[str, Any]:
        """The strings' :meth:`~ldp.decoders.results.Estimates.metadata`, the kept n-grams and the ``summary``."""
        return {**self.strings.metadata(), "grams": [list(g) for g in self.grams], "summary": jsonable(self.summary)}

    def title(self) -> str:
        s = self.summary
        return (f"n-grams kept per position={s['grams_kept']}; significant pairs={s['pairs_significant']}; "
                f"candidates={s['candidates']}; detected={s['detected']}")

    def result_notes(self) -> tuple[str, ...]:
        return self.strings.notes

    def table(self, max_rows: int | None = 40) -> str:
        return self.title() + "\n" + self.strings.table(max_rows)


def _pair_table(va: Variable, vb: Variable, cols_a: dict[str, Any], cols_b: dict[str, Any], se: str,
                replicates: int, stop: tuple[float, int], rng: Any) -> Association:
    """The EM table of one position pair with standard errors: ``"information"`` over the cells the EM left
    active (``π̂ > 10⁻⁹``) when ``se="auto"`` and its ``J·K²`` fits
    :data:`~ldp.decoders.association.INFORMATION_WORK`, else the bootstrap."""
    data = pair_data(va, vb, cols_a, cols_b)  # once, for every fit of the pair

    def fit(se: str) -> Association:
        return fit_pair(va, vb, data, se=se, replicates=replicates, level=0.95, tol=stop[0], max_maps=stop[1],
                        rng=rng)

    if se == "bootstrap":
        return fit("bootstrap")
    res = fit("none")
    active = int((res.table > 1e-9).sum())
    if se == "information" or float(data.ia.size) * active ** 2 <= INFORMATION_WORK:
        return replace(res, se=information_se(data, res.table), se_method="information")
    return fit("bootstrap")


def discover(agg: RapporNgramsAggregate, *, alpha: float = 0.05, gram_alpha: float = 0.05, pair_alpha: float = 0.05,
             screen: bool = True, max_grams: int | None = 32, se: str = "auto", replicates: int = 50,
             tol: float = 1e-6, max_maps: int = 1000, max_candidates: int = 10_000, confidence: float = 0.95,
             rng: Any = None) -> NgramDiscovery:
    """Find the frequent strings (module docstring): ``alpha`` (final BH level), ``gram_alpha`` (n-gram screen,
    BH), ``pair_alpha`` (significant pairs, per table), ``se`` (``"auto"``, ``"information"`` or
    ``"bootstrap"``; ``replicates`` and ``rng`` for the bootstrap), ``tol``, ``max_maps`` (the EM's stopping rule),
    ``max_candidates`` (the cap of step 3), ``max_grams`` (most n-grams kept per position, the largest
    estimates; ``None``: no cap)."""
    pr = agg.params
    for name, v in (("alpha", alpha), ("gram_alpha", gram_alpha), ("pair_alpha", pair_alpha)):
        if not 0.0 < v < 1.0:
            raise ValueError(f"{name} must be in (0, 1), got {v}")
    if isinstance(max_candidates, bool) or not isinstance(max_candidates, int) or max_candidates < 1:
        raise ValueError(f"max_candidates must be a positive int, got {max_candidates!r}")
    if se not in ("auto", "information", "bootstrap"):
        raise ValueError(f"se must be 'auto', 'information' or 'bootstrap', got {se!r}")
    if agg.n == 0:
        raise ValueError("no reports to discover from (the aggregate is empty)")
    if max_grams is not None and (isinstance(max_grams, bool) or not isinstance(max_grams, int) or max_grams < 1):
        raise ValueError(f"max_grams must be a positive int or None, got {max_grams!r}")
    grams = [_screen(agg, i, gram_alpha, screen, max_grams) for i in range(pr.positions)]
    pairs: dict[tuple[int, int], list[tuple[str, str, float]]] = {}
    assoc: dict[tuple[int, int], Association] = {}
    for a, b in itertools.combinations(range(pr.positions), 2):
        if not grams[a] or not grams[b]:
            pairs[(a, b)] = []
            continue
        cols_a, cols_b = agg.pair_columns(a, b)
        if not len(cols_a["cohort"]):
            pairs[(a, b)] = []
            continue
        va = Variable(pr.gram, [gram_value(a, g) for g in grams[a]], other=True)
        vb = Variable(pr.gram, [gram_value(b, g) for g in grams[b]], other=True)
        res = _pair_table(va, vb, cols_a, cols_b, se, replicates, (tol, max_maps), rng)
        assoc[(a, b)] = res
        tested = res.table[:-1, :-1]  # the last row and column are "other"
        z = NormalDist().inv_cdf(1.0 - pair_alpha / tested.size)
        err = res.se[:-1, :-1]
        hit = (err > 0) & (tested > z * err)  # se = 0: a cell the information method holds at the boundary
        pairs[(a, b)] = [(grams[a][u], grams[b][v], float(tested[u, v])) for u, v in zip(*np.nonzero(hit), strict=True)]
    cands = join_candidates(pr, grams, pairs, max_candidates)
    summary: dict[str, Any] = {"grams_kept": [len(g) for g in grams],
                               "pairs_significant": {f"{a},{b}": len(v) for (a, b), v in pairs.items()},
                               "candidates": len(cands),
                               "unconverged": [f"{a},{b}" for (a, b), r in assoc.items() if not r.converged],
                               "alpha": alpha, "gram_alpha": gram_alpha,
                               "pair_alpha": pair_alpha}
    est = agg.estimate(cands, alpha=alpha, confidence=confidence) if cands else None  # background, n-gram check
    strings = _detected(pr, agg.n, est, confidence)
    summary["detected"] = len(strings.items)
    return NgramDiscovery(strings, est, grams, pairs, assoc, cands, summary)


def _screen(agg: RapporNgramsAggregate, position: int, gram_alpha: float, screen: bool,
            max_grams: int | None) -> list[str]:
    """Step 1: the n-grams kept at ``position`` (at most ``max_grams``, the largest estimates)."""
    pr = agg.params
    cands = possible_grams(pr, position)
    if not screen:
        return cands
    pos_agg = agg.position_aggregate(position)
    if pos_agg.n == 0:
        return []
    est = decode(pos_agg, [gram_value(position, g) for g in cands], alpha=gram_alpha, adjusted_intervals=False)
    idx = np.flatnonzero(np.asarray(est.detected))
    idx = idx[np.argsort(-est.count[idx], kind="stable")][:max_grams]
    return [cands[i] for i in sorted(idx.tolist())]


Pairs = dict[tuple[int, int], list[tuple[str, str, float]]]


def join_candidates(pr: RapporNgramsParams, grams: list[list[str]], pairs: Pairs, max_candidates: int) -> list[str]:
    """Step 3 (module docstring): chains of significant adjacent pairs, pruned by the non-adjacent pairs;
    ``grams``: kept n-grams per position; ``pairs``: ``(u, v, π̂)`` significant per position pair."""
    sig = {key: {(u, v) for u, v, _ in val} for key, val in pairs.items()}
    chains: list[tuple[str, ...]] = [(g,) for g in grams[0]]
    for i in range(1, pr.positions):
        nxt = []
        for t in chains:
            padded = pr.pad in t[-1]
            for g in grams[i]:
                if padded and g != pr.pad * pr.n:
                    continue
                if all((t[j], g) in sig[(j, i)] for j in range(i)):
                    nxt.append((*t, g))
        if len(nxt) > max_candidates:
            raise ValueError(f"{len(nxt)} candidate prefixes at n-gram position {i} exceed max_candidates="
                             f"{max_candidates}: lower pair_alpha or gram_alpha, or raise max_candidates")
        chains = nxt
    return [pr.unpad("".join(t)) for t in chains]


def _detected(pr: RapporNgramsParams, n: int, est: RapporEstimates | None, confidence: float) -> Estimates:
    """The detected strings of the final decode, largest count first."""
    note = ("RAPPOR with unknown strings: candidates from significant n-gram pairs, full strings decoded",)
    if est is None:
        return Estimates(pr.protocol, [], n, np.zeros(0), np.zeros(0), confidence, pr.privacy_cost, {}, note)
    idx = np.flatnonzero(est.detected)
    idx = idx[np.argsort(-est.count[idx], kind="stable")]
    extra = {k: np.asarray(est.extra[k])[idx] for k in ("p_value", "adjusted_ci_low", "adjusted_ci_high")}
    kept = tuple(t for t in est.notes if t.startswith(_KEPT_NOTES))  # the mass outside, the n-gram check
    return Estimates(pr.protocol, [est.items[i] for i in idx], n, est.count[idx], est.std_error[idx], confidence,
                     pr.privacy_cost, extra, note + kept)


_KEPT_NOTES = ("an estimated", "n-gram check", "warning:", "the bits vary")
"""The final decode's notes the discovered strings keep (:func:`_detected`)."""
