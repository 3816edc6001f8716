"""Apple's Sequence Fragment Puzzle (SFP), client side (apple-and-theory.md §3.1).

SFP discovers popular strings from an unknown dictionary. The word ``w`` (over ``alphabet``) is
padded with ``pad`` to ``length`` L symbols; its fragments are the ``L/r`` non-overlapping
substrings of ``fragment_length`` r. A client

1. draws a fragment position ``l`` uniformly from ``[L/r]`` and sends it in the clear;
2. sends a sketch report (CMS or HCMS, budget ``fragment_epsilon``) of the fragment record
   ``h(w) ‖ w_pad[l·r : (l+1)·r]``, where ``h`` is a ``hash_bits``-bit hash of the whole word;
3. sends a sketch report (CMS or HCMS, budget ``word_epsilon``) of the whole word ``w``.

Privacy: ``word_epsilon + fragment_epsilon`` by sequential composition (the position is
independent of the word). The record is encoded injectively: ``h`` as a fixed-width big-endian
integer followed by the r symbols' indices, one fixed-width integer each, so no two
(hash, fragment) pairs give the same bytes (apple-and-theory.md §5 notes a public implementation
whose product encoding ``hash·(index+1)`` collides).

Draw order (for other clients to reproduce): position ``randbelow(L/r)``, then the word sketch's
draws, then the fragment sketch's (see :mod:`ldp.encoders.cms`, :mod:`ldp.encoders.hcms`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, NamedTuple, Self, TypeAlias

from ldp.encoders.base import BoundedMemo, Encoder, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import check_bool, check_choice, refuse_relation, refuse_type, renaming
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.cms import CmsEncoder, CmsParams, SketchParams, sketch_draws
from ldp.encoders.hcms import HcmsEncoder, HcmsParams
from ldp.errors import RefusalValueError, kind_of
from ldp.hashing import MAX_SEED, bucket, value_bytes
from ldp.privacy.accountant import PrivacyCost
from ldp.reports import Field, Report, ReportBatch

__all__ = ["SfpParams", "SfpEncoder", "PreparedWord", "SKETCHES"]

MEMO_ENTRIES = 256
"""Words whose prepared form (padded word, hash, fragment records) an encoder keeps."""
MEMO_MAX_VALUE = 256
"""Longest word (characters) whose prepared form is kept."""
MEMO_BYTES = 1 << 20
"""Bound on the memory the kept words may take (see :meth:`SfpEncoder.memo_entries`)."""

_Sketch: TypeAlias = tuple[Callable[[float, int, int, int], SketchParams], type[CmsEncoder] | type[HcmsEncoder]]
"""A sketch's params type (called as ``(epsilon, num_hashes, width, hash_seed)``) and encoder type."""

SKETCHES: dict[str, _Sketch] = {"cms": (CmsParams, CmsEncoder), "hcms": (HcmsParams, HcmsEncoder)}
"""The sketch each SFP part can use: name -> (params type, encoder type)."""


class PreparedWord(NamedTuple):
    """A word as the client encodes it: ``word`` (after replacement and truncation), ``padded``
    to L symbols, its ``hash``, and whether it was ``truncated`` / how many symbols ``replaced``."""

    word: str
    padded: str
    hash: int
    truncated: bool
    replaced: int


def _check_symbols(value: Any, message: str, param: str, low: int, high: int | None) -> None:
    """``value`` a str of ``low`` to ``high`` characters, else ``ValueError`` with ``message``."""
    if not isinstance(value, str):
        raise RefusalValueError(message, "param_type", param=param, expected="string", got=kind_of(value))
    if not low <= len(value) <= (len(value) if high is None else high):
        raise RefusalValueError(message, "param_length", param=param, got=len(value), min=low,
                                **({} if high is None else {"max": high}))


@dataclass(frozen=True)
class SfpParams(ProtocolParams):
    """Sequence Fragment Puzzle parameters.

    ``word_epsilon`` and ``fragment_epsilon`` are set independently (the cost is their sum).
    Each part's sketch is ``"cms"`` or ``"hcms"`` with its own ``num_hashes`` and ``width``.
    Characters outside ``alphabet`` are an error unless ``replacement`` (a symbol of the
    alphabet) is given; words longer than ``length`` are an error unless ``truncate`` is set.
    Default sketches: CMS with k = 64 for both; m = 1024 for the word, 512 for the fragments,
    whose only job is to rank the few heavy records of each position (the word sketch gives the
    final counts); that keeps batch encoding above a million words per second.
    """

    word_epsilon: float
    fragment_epsilon: float
    alphabet: str = "abcdefghijklmnopqrstuvwxyz"
    pad: str = "_"
    length: int = 10
    fragment_length: int = 2
    hash_bits: int = 8
    word_sketch: str = "cms"
    word_num_hashes: int = 64
    word_width: int = 1024
    fragment_sketch: str = "cms"
    fragment_num_hashes: int = 64
    fragment_width: int = 512
    hash_seed: int = 0
    replacement: str | None = None
    truncate: bool = False
    protocol: ClassVar[str] = "sfp"
    value_class: ClassVar[str | None] = "string"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "word_epsilon": ParamInfo("the privacy budget of the whole word's sketch",
                                  (Range(min=0, min_exclusive=True, finite=True),)),
        "fragment_epsilon": ParamInfo("the privacy budget of the fragment's sketch",
                                      (Range(min=0, min_exclusive=True, finite=True),)),
        "alphabet": ParamInfo("the characters a word may hold"),
        "pad": ParamInfo("the character a word is padded with (not in the alphabet)"),
        "length": ParamInfo("the length of a word, in characters (padded to it)", (Range(min=1, max=4096),)),
        "fragment_length": ParamInfo("the length of a fragment, in characters",
                                     (Range(min=1, dynamic="at most length (L)"),)),
        "hash_bits": ParamInfo("the bits of the word's hash each fragment carries", (Range(min=0, max=16),)),
        "word_sketch": ParamInfo("the whole word's sketch: cms or hcms", choices=tuple(sorted(SKETCHES))),
        "word_num_hashes": ParamInfo("the number of hash functions of the word's sketch", (Range(min=1, max=65536),)),
        "word_width": ParamInfo("the width of each row of the word's sketch", (Range(min=2, max=2**24),)),
        "fragment_sketch": ParamInfo("the fragment's sketch: cms or hcms", choices=tuple(sorted(SKETCHES))),
        "fragment_num_hashes": ParamInfo("the number of hash functions of the fragment's sketch",
                                         (Range(min=1, max=65536),)),
        "fragment_width": ParamInfo("the width of each row of the fragment's sketch", (Range(min=2, max=2**24),)),
        "hash_seed": ParamInfo("the number of the hash family: distinct seeds give independent families",
                               (Range(min=0, max=2**32 - 1),)),
        "replacement": ParamInfo("the character a character outside the alphabet becomes (null: such words are "
                                 "refused)")}
    refusal_rules: ClassVar[Mapping[str, str]] = {
        **HcmsParams.refusal_rules, "pad_not_in_alphabet": "pad must not be in the alphabet",
        "multiple_of_fragment_length": "length (L) must be a multiple of fragment_length (r)",
        "hash_seed_room": "hash_seed + word_num_hashes + fragment_num_hashes must be at most 2^32 − 1",
        "replacement_in_alphabet": "replacement must be a symbol of the alphabet"}
    draw_rule = DrawRule("`R(L/r)`, the word sketch's (`cms` or `hcms`), the fragment sketch's",
                         lambda s, pr, v: (s.R(pr.num_positions), sketch_draws(s, pr.word_params),
                                           sketch_draws(s, pr.fragment_params)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (  # replacement and truncation, a 2-byte symbol
        {"word_epsilon": 2.0, "fragment_epsilon": 2.0, "alphabet": "ab\u00e9", "length": 4, "fragment_length": 2,
         "hash_bits": 2, "word_num_hashes": 4, "word_width": 16, "fragment_num_hashes": 4, "fragment_width": 16,
         "replacement": "a", "truncate": True},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "word_epsilon", check_epsilon(self.word_epsilon, "word_epsilon"))
        object.__setattr__(self, "fragment_epsilon", check_epsilon(self.fragment_epsilon, "fragment_epsilon"))
        _check_symbols(self.alphabet, "alphabet must be a non-empty string of symbols", "alphabet", 1, None)
        if len(set(self.alphabet)) != len(self.alphabet):
            raise refuse_relation(f"alphabet has repeated symbols: {self.alphabet!r}", "distinct", "alphabet")
        _check_symbols(self.pad, f"pad must be one symbol that is not in the alphabet, got {self.pad!r}", "pad", 1, 1)
        if self.pad in self.alphabet:
            raise refuse_relation(f"pad must be one symbol that is not in the alphabet, got {self.pad!r}",
                                  "pad_not_in_alphabet", "pad", "alphabet")
        if not len(self.alphabet) <= (1 << 16) - 2:
            raise RefusalValueError(f"alphabet size must be in [1, {(1 << 16) - 2}], got {len(self.alphabet)}",
                                    "param_length", param="alphabet", got=len(self.alphabet), min=1,
                                    max=(1 << 16) - 2)
        check_int(self.length, "length (L)", 1, 1 << 12)
        check_int(self.fragment_length, "fragment_length (r)", 1, self.length)
        if self.length % self.fragment_length:
            raise refuse_relation(f"length L={self.length} must be a multiple of fragment_length "
                                  f"r={self.fragment_length} (fragments are the L/r non-overlapping substrings)",
                                  "multiple_of_fragment_length", "length", "fragment_length")
        check_int(self.hash_bits, "hash_bits", 0, 16)
        for part in ("word", "fragment"):
            sketch = getattr(self, f"{part}_sketch")
            check_choice(sketch, f"{part}_sketch", sorted(SKETCHES), f"{part}_sketch must be one of "
                         f"{sorted(SKETCHES)}, got {sketch!r}")
        check_int(self.hash_seed, "hash_seed", 0, MAX_SEED)
        check_int(self.word_num_hashes, "word_num_hashes", 1, 1 << 16)
        check_int(self.fragment_num_hashes, "fragment_num_hashes", 1, 1 << 16)
        if self.hash_seed + self.word_num_hashes + self.fragment_num_hashes > MAX_SEED:
            raise refuse_relation("hash_seed leaves no room for the sketches' hash functions below 2**32",
                                  "hash_seed_room", "hash_seed", "word_num_hashes", "fragment_num_hashes")
        if self.replacement is not None:
            message = f"replacement must be one symbol of the alphabet (or None), got {self.replacement!r}"
            _check_symbols(self.replacement, message, "replacement", 1, 1)
            if self.replacement not in self.alphabet:
                raise refuse_relation(message, "replacement_in_alphabet", "replacement", "alphabet")
        check_bool(self.truncate, "truncate")
        for part in ("word", "fragment"):  # build the sketches now so their errors surface here
            with renaming({n: f"{part}_{n}" for n in ("epsilon", "num_hashes", "width")}, f"{part} sketch: "):
                getattr(self, f"{part}_params")  # in this protocol's names: the word sketch's width is word_width
        self.check_collectable()

    # -- the two sketches -------------------------------------------------------------------------
    @cached_property
    def word_params(self) -> SketchParams:
        """The whole-word sketch (hash functions ``hash_seed ...``)."""
        cls = SKETCHES[self.word_sketch][0]
        return cls(self.word_epsilon, self.word_num_hashes, self.word_width, self.hash_seed)

    @cached_property
    def fragment_params(self) -> SketchParams:
        """The fragment sketch (hash functions after the word sketch's), one per position at the server."""
        cls = SKETCHES[self.fragment_sketch][0]
        return cls(self.fragment_epsilon, self.fragment_num_hashes, self.fragment_width,
                   self.hash_seed + self.word_num_hashes)

    @property
    def word_hash_seed(self) -> int:
        """Seed of the ``hash_bits``-bit word hash ``h`` (after both sketches' seeds)."""
        return self.hash_seed + self.word_num_hashes + self.fragment_num_hashes

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """``ε_word + ε_fragment`` (each sketch's realized ε; sequential composition)."""
        return PrivacyCost(self.word_params.privacy_cost.epsilon + self.fragment_params.privacy_cost.epsilon)

    @property
    def domain_size(self) -> None:
        """Any string over the alphabet: no fixed domain."""
        return None

    @classmethod
    def examples(cls) -> list[SfpParams]:
        """Words of up to 4 letters of ``abc``, CMS and HCMS sketches (conformance suite)."""
        small: dict[str, Any] = dict(alphabet="abc", length=4, fragment_length=2, hash_bits=2, word_num_hashes=4,
                                     word_width=16, fragment_num_hashes=4, fragment_width=16)
        return [cls(2.0, 2.0, **small), cls(3.0, 1.0, word_sketch="hcms", fragment_sketch="hcms", **small)]

    @classmethod
    def audit_examples(cls) -> list[SfpParams]:
        """Words of up to 2 letters of ``ab``, one hash function of 4 buckets per sketch: enumerable."""
        tiny: dict[str, Any] = dict(alphabet="ab", length=2, fragment_length=1, hash_bits=1, word_num_hashes=1,
                                    word_width=4, fragment_num_hashes=1, fragment_width=4)
        return [cls(0.7, 1.3, **tiny), cls(1.0, 2.0, word_sketch="hcms", fragment_sketch="cms", **tiny),
                cls(0.7, 1.3, fragment_sketch="hcms", **tiny)]

    def audit_inputs(self) -> list[str]:
        """Two one-letter words and their concatenation."""
        a, b = self.alphabet[0], self.alphabet[1 % len(self.alphabet)]
        return [a, b, a + b]

    @property
    def symbols(self) -> str:
        """The alphabet followed by the pad symbol (a symbol's index is its position here)."""
        return self.alphabet + self.pad

    @property
    def num_positions(self) -> int:
        """``L/r`` fragment positions."""
        return self.length // self.fragment_length

    @property
    def aggregate_cells(self) -> int:
        """The word sketch's counters and one fragment sketch's per position."""
        return self.word_params.aggregate_cells + self.num_positions * self.fragment_params.aggregate_cells

    @property
    def num_records(self) -> int:
        """Size of the (hash, fragment) grid the server scores per position: ``2^bits·(|Σ|+1)^r``."""
        fragments: int = len(self.symbols) ** self.fragment_length  # int ** int >= 0: an int
        return (1 << self.hash_bits) * fragments

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        word = tuple(Field(f"word_{f.name}", f.kind, f.size) for f in self.word_params.schema)
        frag = tuple(Field(f"fragment_{f.name}", f.kind, f.size) for f in self.fragment_params.schema)
        return (Field("position", "uint", self.num_positions),) + word + frag

    # -- words, hashes and records ------------------------------------------------------------------
    @cached_property
    def _index(self) -> dict[str, int]:
        return {s: i for i, s in enumerate(self.symbols)}

    def prepare_word(self, value: Any) -> PreparedWord:
        """Validate, replace, truncate and pad a word (``TypeError``/``ValueError`` naming the problem)."""
        if not isinstance(value, str):
            raise refuse_type(f"SFP words must be str, got {type(value).__name__}", value, "string")
        if not value:
            raise RefusalValueError("SFP cannot encode the empty string", "empty_value")
        index, replaced = self._index, 0
        if any(ch not in index or ch == self.pad for ch in value):
            if self.replacement is None:
                bad = next(ch for ch in value if ch not in index or ch == self.pad)
                raise RefusalValueError(f"character {bad!r} of {value!r} is not in the alphabet "
                                        "(set replacement= to replace such characters)", "not_in_alphabet", char=bad)
            chars = [ch if ch in index and ch != self.pad else self.replacement for ch in value]
            kept = self.length if self.truncate else len(value)  # count only the symbols that are sent
            replaced = sum(a != b for a, b in zip(chars[:kept], value[:kept], strict=True))
            value = "".join(chars)
        truncated = len(value) > self.length
        if truncated:
            if not self.truncate:
                raise RefusalValueError(f"{value!r} is longer than length={self.length} (set truncate=True to cut it)",
                                        "value_too_long", got=len(value), max=self.length, unit="characters")
            value = value[: self.length]
        return PreparedWord(value, value + self.pad * (self.length - len(value)), self.word_hash(value),
                            truncated, replaced)

    def word_hash(self, word: str) -> int:
        """``h(word)`` in ``[0, 2^hash_bits)``: MurmurHash3 of the word's UTF-8 with :attr:`word_hash_seed`."""
        return bucket(word, 1 << self.hash_bits, self.word_hash_seed)

    @property
    def hash_bytes(self) -> int:
        return (self.hash_bits + 7) // 8

    @property
    def symbol_bytes(self) -> int:
        return 1 if len(self.symbols) <= 256 else 2

    def fragment_record(self, word_hash: int, fragment: str) -> bytes:
        """``h ‖ fragment`` as bytes: ``h`` big-endian in :attr:`hash_bytes`, then each symbol's
        index big-endian in :attr:`symbol_bytes` (fixed widths: injective)."""
        if len(fragment) != self.fragment_length:
            raise ValueError(f"a fragment has {self.fragment_length} symbols, got {fragment!r}")
        out = word_hash.to_bytes(self.hash_bytes, "big")
        for ch in fragment:
            out += self._index[ch].to_bytes(self.symbol_bytes, "big")
        return out

    def fragment_at(self, padded: str, position: int) -> str:
        r = self.fragment_length
        return padded[position * r:(position + 1) * r]

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: the default sketches with ``ε`` split evenly between word and fragment."""
        return cls(epsilon / 2, epsilon / 2)


class _Word(NamedTuple):
    """What one prepared word needs per report: its UTF-8 bytes and the fragment record of each
    position (each made on first use)."""

    prepared: PreparedWord
    data: bytes
    records: list[bytes | None]


class SfpEncoder(Encoder):
    """Client encoder for :class:`SfpParams`; counts the words it ``truncated`` and the symbols it ``replaced``.

    The prepared form of the most recent words (at most :data:`MEMO_MAX_VALUE` characters; a
    deterministic function of the word: padded word, hash and one fragment record per position) is
    kept in a :class:`~ldp.encoders.base.BoundedMemo` of :meth:`memo_entries` words, which bounds
    it by :data:`MEMO_BYTES` (256 words of the default parameters take ~0.3 MB)."""

    params: SfpParams
    params_type: ClassVar[type[SfpParams]] = SfpParams

    def __init__(self, params: SfpParams, *, rng: Any = None, ledger: Any = None, metric: str | None = None,
                 simulation: bool = False) -> None:
        super().__init__(params, rng=rng, ledger=ledger, metric=metric, simulation=simulation)
        # the two sketches draw from this encoder's source, already checked above
        self._word = SKETCHES[params.word_sketch][1](params.word_params, rng=self._rng, simulation=True)
        self._fragment = SKETCHES[params.fragment_sketch][1](params.fragment_params, rng=self._rng, simulation=True)
        self._names = tuple(f.name for f in params.schema)
        self._memo: BoundedMemo[_Word] = BoundedMemo(self.memo_entries(params), MEMO_MAX_VALUE)
        self.truncated = 0
        self.replaced = 0

    @staticmethod
    def memo_entries(params: SfpParams) -> int:
        """Words kept: ``MEMO_ENTRIES``, fewer if an entry may exceed ``MEMO_BYTES / MEMO_ENTRIES``. An
        entry is bounded by 4 bytes per character of the key, word and padded word, and ~56 bytes
        per fragment record (a bytes object of at most 2 + 2r bytes, and its slot in the list)."""
        entry = (4 * (2 * MEMO_MAX_VALUE + params.length) + params.num_positions * (56 + 2 * params.fragment_length)
                 + 512)
        return max(1, min(MEMO_ENTRIES, MEMO_BYTES // entry))

    def prepare(self, value: Any) -> _Word:
        word = self._memo.get(value)
        if word is None:
            pr = self.params
            prepared = pr.prepare_word(value)
            word = _Word(prepared, value_bytes(prepared.word), [None] * pr.num_positions)
            self._memo.put(value, word)
        return word

    def randomize(self, prepared: _Word) -> Report:
        pr = self.params
        position = self._rng.randbelow(pr.num_positions)
        word = self._word.draw(prepared.data)
        record = prepared.records[position]
        if record is None:
            w = prepared.prepared
            record = prepared.records[position] = pr.fragment_record(w.hash, pr.fragment_at(w.padded, position))
        values = (position, *word, *self._fragment.draw(record))
        self.truncated += prepared.prepared.truncated
        self.replaced += prepared.prepared.replaced
        return self._report(dict(zip(self._names, values)))  # noqa: B905  # schema order by construction; hot path

    def encode_batch(self, values: Any, rng: Any = None, *, candidates: Any = None) -> ReportBatch:
        """Vectorized reports (``values``: indices into ``candidates`` or the words; see :mod:`ldp.batch.sfp`)."""
        from ldp.batch.sfp import sfp_encode_batch  # numpy, loaded only here

        columns, truncated, replaced = sfp_encode_batch(self.params, values, rng, candidates=candidates)
        self.truncated += truncated
        self.replaced += replaced
        return self._batch(columns)
