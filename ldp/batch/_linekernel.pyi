"""Types of the optional compiled kernel of the JSONL fast path and the shuffler (``ldp/batch/_linekernel.c``)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

# any buffer; numpy's stubs declare ``ndarray.__buffer__`` only from Python 3.12
_Buf: TypeAlias = Buffer | np.ndarray[Any, Any]

def match(chunk: _Buf, starts: _Buf, ends: _Buf, n: int, programs: bytes, key_at: int, which: _Buf, nums: _Buf,
          width_nums: int, bits: _Buf, width_bits: int, /) -> None:
    """Match each line ``chunk[starts[i]:ends[i]]`` (int64 offsets) against the templates' ``programs``:
    ``which[i]`` (int32) the template's index or -1, its numbers in ``nums[i]`` (uint64, ``width_nums`` per line)
    and bits in ``bits[i]`` (uint8, ``width_bits`` per line), in place."""

def permute(data: _Buf, starts: _Buf, ends: _Buf, order: _Buf, n: int, out: _Buf, /) -> None:
    """Write the lines ``data[starts[order[k]]:ends[order[k]]]``, ``k < n``, one after the other into ``out``
    (int64 offsets, ends exclusive; ``out`` exactly as long as the lines)."""

def split(chunk: _Buf, starts: _Buf, ends: _Buf, /) -> int:
    """The number of lines of ``chunk`` (each ending in ``\\n``); line i is ``chunk[starts[i]:ends[i]]`` without
    its ``\\n`` and a ``\\r`` before it (int64 offsets written in place; ``ValueError`` when they are too
    short)."""

def junk(chunk: _Buf, starts: _Buf, ends: _Buf, n: int, maybe_json: _Buf, json_space: _Buf, space: _Buf,
         number: _Buf, word_length: _Buf, max_line: int, out: _Buf, /) -> None:
    """``out[i] = 1`` when line ``i`` is surely not JSON (``ldp.jobs.junk.junk_lines``'s rule and tables)."""
