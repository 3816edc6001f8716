"""Poplar1 for heavy hitters over two aggregators: VDAF draft 18 §8 (``draft-irtf-cfrg-vdaf-18``), the ``prio``
crate 0.18.1's ``Poplar1`` (its ``experimental`` feature) bound for Python by the binding ``ldp_prio``
(``bindings/prio/src/poplar1.rs``) and never rewritten: sharding is the native client's
(``ldp_client::poplar1``, what devices run), every aggregator and collector step the crate's.

A device's measurement is a string of ``bits`` bits (1 to :data:`MAX_BITS`; here a tuple of bools, first bit
first: :func:`bits_of` makes one of bytes, text or an int). Sharding splits it into two keys of an incremental
distributed point function (IDPF; Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai, "Lightweight techniques for private
heavy hitters", IEEE S&P 2021): for every prefix ``p``, the two aggregators' evaluations at ``p`` add up to 1 when
``p`` is a prefix of the string and to 0 otherwise. The collector asks for one level ``ℓ`` at a time, with an
aggregation parameter (:func:`agg_param`: the level and the sorted candidate prefixes of ``ℓ + 1`` bits); each
aggregator answers each candidate's share of its count. One report, both aggregators in one process::

    vdaf = Poplar1(64, ctx=b"my app")
    nonce, public_share, (leader_in, helper_in) = vdaf.shard(bits_of(b"new-word", 64))
    param = agg_param(0, [(False,), (True,)])                       # level 0: both one-bit prefixes
    leader_out, helper_out = verify_report(vdaf, verify_key, param, nonce, public_share, [leader_in, helper_in])
    leader_agg = vdaf.aggregate(param, [leader_out]); helper_agg = vdaf.aggregate(param, [helper_out])
    vdaf.unshard(param, [leader_agg, helper_agg], 1)                # [1, 0]: "n" (0x6e) starts with a 0 bit

Verification has two rounds (the draft's sketch: the aggregators check together that the keys encode exactly one
string, a count of 0 or 1 per prefix, without learning it): ``verify_init`` gives a state and a verifier share;
``verifier_shares_to_message(state, [leader_share, helper_share])`` combines them (refused, ``PrioError``, when the
sketch fails), and ``verify_next`` gives round 1's state and share (:func:`verify_continue`), then the output share
(:func:`verify_finish`). The crate's ``is_agg_param_valid`` (``Poplar1.is_agg_param_valid(param, previous)``)
says whether a report may be aggregated with ``param`` after the parameters it was aggregated with: the level
must grow and each prefix extend one of the last level's (the collection's rule, issue 89 item 2).

An aggregate share's ``field_elements()`` are ints below its ``modulus`` (Field64's below the last level,
Field255's, 2^255 − 19, at it), and ``add_integers(noise)`` adds signed ints modulo that prime: an aggregator's
central noise; :func:`signed_counts` reads noised counts back as signed ints. ``seal_report(vdaf, measurement,
...)`` (:mod:`ldp.prio`) makes a Poplar1 measurement's DAP-09 report as it does Prio3's.

Every refusal is a :class:`~ldp.errors.PrioError` (a ``ValueError``) whose ``operation`` names the step
(``"parameters"``, ``"shard"``, ``"decode"``, ``"verify_init"``, ``"verifier_shares_to_message"``,
``"verify_next"``, ``"aggregate"``, ``"unshard"``); a value of the wrong type is a ``TypeError``. Without the
binding (the distribution ``ldp-telemetry-prio``) this module imports, and its names raise
:class:`~ldp.errors.MissingExtraError` saying how to install it, as :mod:`ldp.prio`'s do. ``docs/poplar1.md`` says
what is bound and how the draft's test vectors are replayed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ldp.errors import PrioError

__all__ = ["Poplar1", "Poplar1AggregationParam", "Poplar1VerifyState", "Poplar1OutputShare",
           "Poplar1AggregateShare", "MAX_BITS", "bits_of", "bits_to_bytes", "prefix_of", "agg_param",
           "verify_continue", "verify_finish", "verify_report", "signed_counts"]

_NATIVE = ("Poplar1", "Poplar1AggregationParam", "Poplar1VerifyState", "Poplar1OutputShare",
           "Poplar1AggregateShare")

MAX_BITS = 256
"""The longest measurement in bits (32-byte strings): the native client's bound (``ldp_client::poplar1::MAX_BITS``),
so that a share's length is bounded; checked against the binding's ``Poplar1.max_bits`` by the tests."""

_why_missing: str | None = None

if TYPE_CHECKING:
    from ldp.prio._native import (
        Poplar1,
        Poplar1AggregateShare,
        Poplar1AggregationParam,
        Poplar1OutputShare,
        Poplar1VerifyState,
    )
else:
    try:  # optional: the binding, as ldp.prio imports it
        from ldp.prio._native import (
            Poplar1,
            Poplar1AggregateShare,
            Poplar1AggregationParam,
            Poplar1OutputShare,
            Poplar1VerifyState,
        )
    except ImportError as exc:
        _why_missing = f"{type(exc).__name__}: {exc}"


def __getattr__(name: str) -> Any:
    """The binding's names when it is missing: :func:`ldp.prio.require`'s error, which says how to install it."""
    if name in _NATIVE and _why_missing is not None:
        from ldp.prio import require

        require()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _refuse(operation: str, message: str) -> PrioError:
    return PrioError(f"Poplar1.{operation}: {message}", operation)


def bits_of(value: bytes | str | int | Sequence[bool | int], bits: int) -> tuple[bool, ...]:
    """A ``bits``-bit string, first bit first: ``bytes`` (their bits, the most significant of each byte first, then
    0 bits up to ``bits``: the order of the draft's ``IdpfInput`` and of the aggregation parameter's prefixes),
    ``str`` (its UTF-8 bytes, likewise), a non-negative ``int`` below ``2**bits`` (its ``bits``-bit big-endian
    binary form), or a sequence of ``bits`` bools (or 0 and 1 ints). A value that does not fit is refused
    (:class:`~ldp.errors.PrioError`, ``operation="shard"``); a ``bool`` or another type is a ``TypeError``.

    Zero padding makes ``b"ab"`` and ``b"ab\\x00"`` one string: a deployment whose strings may end in NUL bytes
    encodes their length first."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= MAX_BITS:
        raise _refuse("shard", f"bits must be an int in [1, {MAX_BITS}], got {bits!r}")
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, bytes | bytearray):
        n, x = 8 * len(value), int.from_bytes(value, "big")
        if n <= bits:
            return _int_bits(x << (bits - n), bits)
        if n - bits >= 8 or x & ((1 << (n - bits)) - 1):  # only the packed form's spare low bits, all 0
            raise _refuse("shard", f"{len(value)} bytes do not fit in a {bits}-bit string")
        return _int_bits(x >> (n - bits), bits)
    if isinstance(value, bool):
        raise TypeError("a measurement is bytes, str, an int or a sequence of bools, got a bool")
    if isinstance(value, int):
        if not 0 <= value < 1 << bits:
            raise _refuse("shard", f"an int measurement must be in [0, 2**{bits}), got {value}")
        return _int_bits(value, bits)
    out = tuple(_bit(b, "measurement") for b in value)
    if len(out) != bits:
        raise _refuse("shard", f"a measurement has {bits} bits, got {len(out)}")
    return out


def _bit(b: object, what: str) -> bool:
    if isinstance(b, bool):
        return b
    if isinstance(b, int) and b in (0, 1):
        return b == 1
    raise TypeError(f"{what} must hold bools (or the ints 0 and 1), got {b!r}")


def _int_bits(value: int, bits: int) -> tuple[bool, ...]:
    return tuple(bool(value >> (bits - 1 - i) & 1) for i in range(bits))


def bits_to_bytes(bits: Sequence[bool]) -> bytes:
    """The bit string packed first bit first, the last byte's spare low bits 0 (the inverse of :func:`bits_of` on
    bytes, up to those zero bits): a discovered string read back."""
    value = 0
    for b in bits:
        value = value << 1 | int(_bit(b, "bits"))
    spare = -len(bits) % 8
    return (value << spare).to_bytes((len(bits) + spare) // 8, "big")


def prefix_of(value: int, level: int) -> tuple[bool, ...]:
    """The prefix of ``level + 1`` bits whose binary form is ``value`` (in ``[0, 2**(level+1))``): a tree walk's
    prefixes as ints, ``prefix_of(0b10, 1) == (True, False)``. Refused (``operation="parameters"``) outside."""
    if isinstance(level, bool) or not isinstance(level, int) or level < 0:
        raise TypeError(f"level must be a non-negative int, got {level!r}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a prefix is an int here, got {type(value).__name__}")
    if not 0 <= value < 1 << (level + 1):
        raise _refuse("parameters", f"a prefix at level {level} is in [0, 2**{level + 1}), got {value}")
    return _int_bits(value, level + 1)


def agg_param(level: int, prefixes: Iterable[Sequence[bool | int] | int]) -> Poplar1AggregationParam:
    """The aggregation parameter of ``level`` and ``prefixes`` (each ``level + 1`` bools, or an int read by
    :func:`prefix_of`): sorted as bit strings, no repeats, at least one. Refused (:class:`~ldp.errors.PrioError`,
    ``operation="parameters"``) naming the first prefix of the wrong length, out of order or repeated; its
    ``to_bytes()`` is the draft's encoding (§8.2.6.6), read back by ``Poplar1AggregationParam.from_bytes``."""
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"level must be an int, got {level!r}")
    if level < 0:
        raise _refuse("parameters", f"level must be at least 0, got {level}")
    bits: list[Sequence[bool | int]] = []
    for p in prefixes:
        if isinstance(p, bool):
            raise TypeError("a prefix is a sequence of bools or an int, got a bool")
        bits.append(prefix_of(p, level) if isinstance(p, int) else p)
    return Poplar1AggregationParam(level, bits)


def verify_continue(vdaf: Poplar1, state: Poplar1VerifyState,
                    message: bytes) -> tuple[Poplar1VerifyState, bytes]:
    """``verify_next`` after round 0: round 1's state and verifier share (refused, ``operation="verify_next"``,
    for a state of round 1, whose next step is :func:`verify_finish`)."""
    if state.round != 0:
        raise _refuse("verify_next", f"a state of round {state.round} finishes (verify_finish), it does not continue")
    step = vdaf.verify_next(state, message)
    assert isinstance(step, tuple), "the crate continues a round-0 state"
    return step


def verify_finish(vdaf: Poplar1, state: Poplar1VerifyState, message: bytes) -> Poplar1OutputShare:
    """``verify_next`` after round 1: the report's output share (refused for a state of round 0)."""
    if state.round != 1:
        raise _refuse("verify_next", f"a state of round {state.round} continues (verify_continue), not finishes")
    step = vdaf.verify_next(state, message)
    assert not isinstance(step, tuple), "the crate finishes a round-1 state"
    return step


def verify_report(vdaf: Poplar1, verify_key: bytes, param: Poplar1AggregationParam, nonce: bytes,
                  public_share: bytes, input_shares: Sequence[bytes]) -> tuple[Poplar1OutputShare, Poplar1OutputShare]:
    """Both aggregators' verification of one report for ``param`` in one process (the draft's §8 flow: init, two
    rounds of message and next), the leader's output share first: for simulations and tests; the leader and the
    helper of a deployment run each step on their side. The first refusal is raised."""
    if len(input_shares) != 2:
        raise _refuse("verify_init", f"Poplar1 has two input shares, got {len(input_shares)}")
    states, shares = [], []
    for agg_id, input_share in enumerate(input_shares):
        state, share = vdaf.verify_init(verify_key, agg_id, param, nonce, public_share, input_share)
        states.append(state)
        shares.append(share)
    message = vdaf.verifier_shares_to_message(states[0], shares)
    nexts = [verify_continue(vdaf, state, message) for state in states]
    message = vdaf.verifier_shares_to_message(nexts[0][0], [share for _, share in nexts])
    return verify_finish(vdaf, nexts[0][0], message), verify_finish(vdaf, nexts[1][0], message)


def signed_counts(agg_shares: Sequence[Poplar1AggregateShare]) -> list[int]:
    """Each prefix's count from both aggregators' shares (noised or not) as a signed int: ``c = (Σ shares) mod p``,
    read as ``c`` when ``c ≤ (p − 1) / 2`` and ``c − p`` otherwise, the representative of ``c`` nearest 0. Exact
    for any true count plus noise of absolute value below ``p / 2`` (2^63 in Field64), where the crate's
    ``unshard`` reads a negative noised count as a huge one (or refuses it at the last level)."""
    if not agg_shares:
        raise _refuse("unshard", "no aggregate share")
    level, p, n = agg_shares[0].level, agg_shares[0].modulus, len(agg_shares[0])
    if any(s.level != level or s.modulus != p or len(s) != n for s in agg_shares):
        raise _refuse("unshard", "aggregate shares of different aggregation parameters")
    totals = [sum(column) % p for column in zip(*(s.field_elements() for s in agg_shares), strict=True)]
    return [c if c <= (p - 1) // 2 else c - p for c in totals]
