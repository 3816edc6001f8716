"""The maximal gain attack on local hashing (BLH, OLH; Cao, Jia and Gong 2021, §4).

Each fake user draws ``tries`` seeds (hash functions) and keeps the one under which the most targets hash to one
value ``y``; it reports ``(seed, y)``, which supports all those targets. Seeds are searched for all fake users at
once, in blocks (``m·tries·r`` hashes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.encoders.local_hashing import BLHParams, OLHParams
from ldp.simulation.attack import Attacker

__all__ = ["LocalHashingAttacker"]

BLOCK = 1 << 18  # seeds hashed at once (× r targets)


class LocalHashingAttacker(Attacker):
    """MGA for BLH and OLH (module docstring)."""

    params_type = (BLHParams, OLHParams)

    def mga(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
            candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        from ldp.batch.local_hashing import lh_hashes

        if isinstance(tries, bool) or not isinstance(tries, int) or tries < 1:
            raise ValueError(f"tries must be an int >= 1, got {tries!r}")
        g = params.g
        users = max(1, BLOCK // tries)
        seeds = np.empty(m, np.uint32)
        ys = np.empty(m, np.uint32)
        items = targets.astype(np.int64)[None, :]
        for a in range(0, m, users):
            u = min(users, m - a)
            s = gen.integers(0, params.seed_range, size=u * tries, dtype=np.int64)
            h = (lh_hashes(s[:, None], items) % np.uint32(g)).astype(np.int64)  # (u·tries, r)
            counts = np.zeros((h.shape[0], g), np.int64) if g <= 64 else None
            if counts is not None:  # small g: count each hash value per seed
                np.add.at(counts, (np.repeat(np.arange(h.shape[0]), h.shape[1]), h.ravel()), 1)
                best_y, best = counts.argmax(axis=1), counts.max(axis=1)
            else:  # large g: the most frequent value of each row, by sorting
                hs = np.sort(h, axis=1)
                run = np.ones_like(hs)
                for j in range(1, hs.shape[1]):
                    run[:, j] = np.where(hs[:, j] == hs[:, j - 1], run[:, j - 1] + 1, 1)
                at = run.argmax(axis=1)
                best_y, best = hs[np.arange(hs.shape[0]), at], run.max(axis=1)
            pick = best.reshape(u, tries).argmax(axis=1) + np.arange(u) * tries
            seeds[a:a + u] = s[pick]
            ys[a:a + u] = best_y[pick]
        return {"seed": seeds, "y": ys}
