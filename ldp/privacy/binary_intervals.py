"""The fixed intervals of the others' number of ones that the shuffled binary RR search covers every dataset with
(:mod:`ldp.privacy.binary_shuffle` up to its exact reach, :mod:`ldp.privacy.binary_large` beyond): each interval
is evaluated at the dataset that dominates it (its first number of ones, and the others' count less its end as
zeros), a post-processing of every dataset in it.

Standard library only.
"""

from __future__ import annotations

__all__ = ["PARTS", "interval_cuts"]

PARTS = 20
"""Fixed intervals over the others' number of ones in [0, (n − 1)/2]: each drops up to 1/40 of the others (about
1.3 % on ε)."""


def interval_cuts(n: int) -> list[int]:
    """The fixed intervals of the others' number of ones: ``[cuts[i], cuts[i+1] − 1]``, from
    ``⌊k·(n + 1)/(2·PARTS)⌋`` for k < ``PARTS`` and ``⌊(n + 1)/2^j⌋`` for j >= 6 (the worst datasets hold
nearly all one value) to ``⌊(n + 1)/2⌋`` (empty ones dropped). Every cut is
    non-decreasing in n and grows by at most 1 from n to n + 1, so each interval's dominating dataset at n + 1 (its
    first number of ones, and n + 1 − its end of zeros) holds at least as many of each value as at n: its δ is no
    larger (a post-processing), and so is the figure."""
    top = (n + 1) // 2
    fine = {(n + 1) // 2**j for j in range(PARTS.bit_length() + 1, 64)}  # 1/64, 1/128, …: the worst is near 0
    return sorted({k * (n + 1) // (2 * PARTS) for k in range(PARTS)} | fine | {top})
