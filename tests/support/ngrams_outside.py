"""The population of issue 33 item 5, shared by the rappor-ngrams tests of clients outside the candidates: 8
candidate strings hold 70,000 clients and ``outside`` more hold about 3,000 random six-letter strings."""

from __future__ import annotations

import string

import numpy as np

HEAVY = ["apple", "banana", "cherry", "grape", "lemon", "mango", "peach", "plum"]
COUNTS = np.array([20000, 15000, 10000, 8000, 6000, 5000, 4000, 2000])
OUTSIDE = 23_333  # a quarter of all clients


def population(outside: int) -> dict[str, int]:
    """The candidates' counts and ``outside`` clients spread at random over ~3,000 rare strings (fixed seed)."""
    gen = np.random.default_rng(0)
    letters = np.array(list(string.ascii_lowercase))
    rare = sorted({"".join(gen.choice(letters, 6)) for _ in range(3000)} - set(HEAVY))
    held = np.bincount(gen.integers(0, len(rare), outside), minlength=len(rare))
    counts = dict(zip(HEAVY, COUNTS.tolist(), strict=True))
    counts.update({s: int(c) for s, c in zip(rare, held, strict=True) if c})
    return counts
