"""Batch kernel for the Sequence Fragment Puzzle: the client mechanism, vectorized.

Each distinct word is prepared once (:meth:`~ldp.encoders.sfp.SfpParams.prepare_word`: its hash
and its ``L/r`` fragment records); per report the position is uniform, and the word and the
fragment record go through the sketches' own batch kernels (:mod:`ldp.batch.sketch`). The loop
is over distinct words, never over reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ldp.batch import values_and_candidates
from ldp.batch.sketch import cms_encode_batch, hcms_encode_batch
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.cms import SketchParams
    from ldp.encoders.hcms import HcmsParams
    from ldp.encoders.sfp import PreparedWord, SfpParams

__all__ = ["prepare_words", "sfp_encode_batch", "sketch_columns"]


def prepare_words(params: SfpParams, words: Sequence[str]) -> list[PreparedWord]:
    """Every word prepared (the first bad one raises, its message naming the word)."""
    return [params.prepare_word(w) for w in words]


def sketch_columns(params: SketchParams, values: np.ndarray, gen: np.random.Generator,
                   candidates: Sequence[str | bytes], prefix: str) -> dict[str, np.ndarray]:
    """The report columns of a CMS or HCMS batch, names prefixed (``word_hash``, ``fragment_bits``, ...)."""
    if params.hadamard:
        j, row, bit = hcms_encode_batch(cast("HcmsParams", params), values, gen, candidates=candidates)
        return {f"{prefix}hash": j, f"{prefix}row": row, f"{prefix}bit": bit}
    j, bits = cms_encode_batch(params, values, gen, candidates=candidates)  # type: ignore[arg-type]
    return {f"{prefix}hash": j, f"{prefix}bits": bits}


def sfp_encode_batch(params: SfpParams, values: Any, rng: Any = None, *,
                     candidates: Sequence[str] | None = None) -> tuple[dict[str, np.ndarray], int, int]:
    """``(columns, words truncated, symbols replaced)`` of SFP reports of ``values`` (indices
    into ``candidates``, or the words themselves). Draws: positions, word sketch, fragment sketch."""
    gen = as_generator(rng)
    idx, words = values_and_candidates(values, candidates)
    prepared = prepare_words(params, words)
    P = params.num_positions
    idx = idx.astype(np.int64)
    position = gen.integers(0, P, size=idx.size, dtype=np.int64)
    columns = {"position": position.astype(np.min_scalar_type(P - 1))}
    if not prepared:
        empty = np.zeros(0, np.int64)
        columns.update(sketch_columns(params.word_params, empty, gen, [], "word_"))
        columns.update(sketch_columns(params.fragment_params, empty, gen, [], "fragment_"))
        return columns, 0, 0
    columns.update(sketch_columns(params.word_params, idx, gen, [p.word for p in prepared], "word_"))
    slots: dict[bytes, int] = {}  # distinct records (a word can repeat a fragment, e.g. padding)
    record_of = np.array([slots.setdefault(params.fragment_record(p.hash, params.fragment_at(p.padded, i)), len(slots))
                          for p in prepared for i in range(P)], dtype=np.int64)
    columns.update(sketch_columns(params.fragment_params, record_of[idx * P + position], gen, list(slots), "fragment_"))
    truncated = np.fromiter((p.truncated for p in prepared), dtype=np.int64, count=len(prepared))
    replaced = np.fromiter((p.replaced for p in prepared), dtype=np.int64, count=len(prepared))
    return columns, int(truncated[idx].sum()), int(replaced[idx].sum())
