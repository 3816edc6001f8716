"""The projective space ``PG(t−1, q)`` as Projective Geometry Response uses it (Feldman, Nelson, Nguyen, Talwar,
ICML 2022, §3). Client side: standard library only.

A point is a line through the origin of ``F_q^t`` (``q`` prime), named by its **canonical vector**: the nonzero
vector on the line whose first nonzero coordinate is 1. There are ``P_t = (q^t − 1)/(q − 1)`` points
(:func:`points`). They are numbered by where the leading 1 sits, rightmost first: a canonical vector whose leading 1
is at position ``ℓ`` (0-based, of ``t``) has index ``P_{t−1−ℓ} + (its coordinates after ℓ read as a base-q
number, most significant first)``. So index 0 is ``(0, …, 0, 1)``, indices 1 to ``q`` are ``(0, …, 0, 1, *)``,
and so on (the numbering the authors' reference code uses, so that reports and estimates compare one for one).

A point ``v`` is also a hyperplane ``S_v = {u : ⟨u, v⟩ = 0}`` of ``P_{t−1}`` points (a report's own set); two
distinct hyperplanes meet in ``P_{t−2}`` points. :func:`hyperplane_point` numbers ``S_v``'s points: the ``r``-th
is the image of the canonical vector ``w`` of index ``r`` in ``F_q^{t−1}`` under the linear bijection
``F_q^{t−1} → v^⊥`` that keeps every coordinate but ``v``'s leading one, ``i``, and sets
``u_i = −Σ_{j≠i} v_j u_j`` (``v_i = 1``), canonicalized (divided by its first nonzero coordinate). A linear
bijection maps lines to lines, so ``r ↦ point`` is a bijection of ``[0, P_{t−1})`` onto ``S_v``: a uniform ``r``
is a uniform point of the hyperplane.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["points", "is_prime", "primes_up_to", "point_vector", "point_index", "canonical", "hyperplane_point",
           "MAX_FIELD"]

MAX_FIELD = 65521
"""The largest field order ``q`` taken: the largest prime below 2^16, so that a product of two coordinates stays
below 2^32 in every client's integers."""


def points(q: int, m: int) -> int:
    """``P_m = (q^m − 1)/(q − 1)``: the points of ``PG(m−1, q)`` (0 for ``m = 0``)."""
    return int((q ** m - 1) // (q - 1))


def is_prime(q: int) -> bool:
    """Whether ``q`` is prime (trial division; ``q ≤`` :data:`MAX_FIELD` here)."""
    if q < 2:
        return False
    k = 2
    while k * k <= q:
        if q % k == 0:
            return False
        k += 1
    return True


def primes_up_to(limit: int) -> list[int]:
    """The primes ``≤ limit``, increasing (a sieve of Eratosthenes)."""
    if limit < 2:
        return []
    sieve = bytearray([1]) * (limit + 1)
    sieve[0] = sieve[1] = 0
    k = 2
    while k * k <= limit:
        if sieve[k]:
            sieve[k * k::k] = bytes(len(range(k * k, limit + 1, k)))
        k += 1
    return [i for i in range(limit + 1) if sieve[i]]


def point_vector(index: int, q: int, t: int) -> list[int]:
    """The canonical vector (``t`` coordinates) of point ``index`` in ``[0, P_t)``."""
    lead, size = t - 1, 1  # the leading 1's position; the points whose leading 1 sits there: q^(t−1−lead)
    while index >= size:
        index -= size
        lead -= 1
        size *= q
    vec = [0] * t
    vec[lead] = 1
    for j in range(t - 1, lead, -1):
        index, vec[j] = divmod(index, q)
    return vec


def point_index(vec: Sequence[int], q: int) -> int:
    """The index of a canonical vector (its first nonzero coordinate 1)."""
    t = len(vec)
    lead = next(j for j, c in enumerate(vec) if c)
    rest = 0
    for c in vec[lead + 1:]:
        rest = rest * q + c
    return points(q, t - 1 - lead) + rest


def canonical(vec: list[int], q: int) -> list[int]:
    """``vec`` (nonzero) divided by its first nonzero coordinate, in place; returned."""
    lead = next(j for j, c in enumerate(vec) if c)
    inverse = pow(vec[lead], q - 2, q)  # Fermat: q is prime
    for j in range(lead, len(vec)):
        vec[j] = vec[j] * inverse % q
    return vec


def hyperplane_point(v: Sequence[int], r: int, q: int) -> list[int]:
    """The ``r``-th point (``r`` in ``[0, P_{t−1})``) of the hyperplane ``S_v`` of the canonical vector ``v``, as a
    canonical vector (module docstring)."""
    t = len(v)
    i = next(j for j, c in enumerate(v) if c)  # v's leading 1
    w = point_vector(r, q, t - 1)
    u = w[:i] + [0] + w[i:]
    u[i] = -sum(v[j] * u[j] for j in range(i + 1, t)) % q  # v_j = 0 before i
    return canonical(u, q)
