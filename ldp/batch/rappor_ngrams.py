"""Batch kernel for RAPPOR with unknown strings: one report per row from fresh clients, vectorized.

Each row's three RAPPOR reports are first reports of fresh clients, so each is
:func:`~ldp.batch.rappor.rappor_encode_batch` of its value (the full string, then the tagged n-grams at
the drawn positions, :func:`~ldp.encoders.rappor_ngrams.gram_value`); the position pair is uniform over
the ``P(P−1)/2`` pairs and the n-gram cohort uniform, shared by the row's two n-gram reports (one client).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import values_and_candidates
from ldp.batch.rappor import rappor_encode_batch
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.rappor_ngrams import RapporNgramsParams

__all__ = ["ngrams_encode_batch", "pair_table"]


def pair_table(positions: int) -> npt.NDArray[np.int64]:
    """``(P(P−1)/2, 2)``: the pairs ``(a, b)``, ``a < b``, in the order of
    :func:`~ldp.encoders.rappor_ngrams.pair_of`."""
    a, b = np.triu_indices(positions, k=1)
    return np.column_stack([a, b]).astype(np.int64)


def ngrams_encode_batch(params: RapporNgramsParams, values: Any, rng: Any = None, *,
                        candidates: Sequence[str | bytes] | None = None) -> dict[str, npt.NDArray[Any]]:
    """The report columns for ``values`` (indices into ``candidates`` or the strings themselves).

    Every distinct string is checked (and padded or cut) as the client does; a bad one raises ``ValueError``."""
    gen = as_generator(rng)
    idx, cands = values_and_candidates(values, candidates)
    encoded = [params.unpad(params.padded(c)) for c in cands]
    # distinct values may encode alike (truncated to the same prefix): one candidate per encoded string
    texts = list(dict.fromkeys(encoded))
    first = {t: j for j, t in enumerate(texts)}
    idx = np.array([first[t] for t in encoded], dtype=np.int64)[idx] if len(texts) < len(encoded) else idx
    grams = [params.grams(t) for t in texts]
    cohort, bits = rappor_encode_batch(params.full, idx, gen, candidates=texts)
    pairs = pair_table(params.positions)[gen.integers(0, params.pairs, size=idx.size)]
    gram_cohort = gen.integers(0, params.gram_cohorts, size=idx.size, dtype=np.int64)
    # the tagged n-grams: one per (candidate, position); each slot gathers its row's
    tagged = sorted({params.gram_value(i, g[i]) for g in grams for i in range(params.positions)})
    where = {t: j for j, t in enumerate(tagged)}
    table = np.array([[where[params.gram_value(i, g[i])] for i in range(params.positions)] for g in grams],
                     dtype=np.int64).reshape(len(grams), params.positions)
    out: dict[str, npt.NDArray[Any]] = {"cohort": cohort, "bits": bits, "gram_cohort": gram_cohort,
                                        "pos_a": pairs[:, 0], "pos_b": pairs[:, 1]}
    for slot, name in ((0, "gram_a"), (1, "gram_b")):
        gidx = table[idx, pairs[:, slot]] if idx.size else np.zeros(0, np.int64)
        _, out[name] = rappor_encode_batch(params.gram, gidx, gen, candidates=tagged or [""], cohorts=gram_cohort)
    return out
