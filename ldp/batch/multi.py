"""Batch kernel for ``multi`` reports: the components' own batch encoders, columns prefixed.

Split mode runs every component's ``encode_batch`` on all rows. Sample mode draws each row's attribute
exactly uniformly (``Generator.integers``, like the client's ``randbelow``), runs each component's
``encode_batch`` on its rows only, and leaves the other attributes' columns zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.base import Encoder
    from ldp.encoders.multi import MultiParams

__all__ = ["checked_columns", "multi_encode_batch", "sample_attributes"]


def checked_columns(params: MultiParams, values: Any) -> tuple[list[np.ndarray], int]:
    """``values`` (``{name: array}`` with exactly the attribute names, equal lengths) as arrays in attribute
    order, and their common length."""
    names = params.names
    if not isinstance(values, Mapping):
        raise TypeError(f"multi batch values must be a mapping {{name: array}}, got {type(values).__name__}")
    if set(values) != set(names):
        raise ValueError(f"multi batch values must have exactly the attributes {list(names)}, got "
                         f"{sorted(map(str, values))}")
    arrays = [np.asarray(values[name]) for name in names]
    lengths = {a.shape[0] if a.ndim else -1 for a in arrays}
    if len(lengths) != 1 or -1 in lengths:
        raise ValueError(f"multi batch values must be arrays of one common length, got lengths "
                         f"{[a.shape[0] if a.ndim else None for a in arrays]}")
    return arrays, lengths.pop()


def sample_attributes(d: int, n: int, gen: np.random.Generator) -> npt.NDArray[np.uint8 | np.uint16]:
    """Each row's sampled attribute, exactly uniform in ``[0, d)``."""
    return gen.integers(0, d, size=n, dtype=np.uint8 if d <= 256 else np.uint16)


def multi_encode_batch(params: MultiParams, parts: Sequence[Encoder], values: Any,
                       rng: Any = None) -> dict[str, np.ndarray]:
    """The columns of ``multi`` reports of ``values`` (module docstring); ``parts`` are the component encoders."""
    arrays, n = checked_columns(params, values)
    gen = as_generator(rng)
    columns: dict[str, np.ndarray] = {}
    if params.mode == "split":
        for pre, part, x in zip(params.prefixes, parts, arrays, strict=True):
            columns.update((pre + k, v) for k, v in part.encode_batch(x, gen).columns.items())
        return columns
    attr = sample_attributes(params.d, n, gen)
    columns["attr"] = attr
    for j, (pre, part, x) in enumerate(zip(params.prefixes, parts, arrays, strict=True)):
        rows = attr == j
        sub = part.encode_batch(x[rows], gen).columns
        for f in part.params.schema:
            col = np.asarray(sub[f.name])
            full = np.zeros((n, *col.shape[1:]), dtype=col.dtype)
            full[rows] = col
            columns[pre + f.name] = full
    return columns
