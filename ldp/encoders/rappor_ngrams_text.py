"""A rappor-ngrams value as text: checked (a str, or UTF-8 bytes; non-empty; characters of ``alphabet`` only; at
most ``L`` characters unless ``truncate``, which cuts it), padded with ``pad`` to exactly ``L`` characters and cut
into ``P = L/n`` n-grams; the ``P(P−1)/2`` position pairs a client draws from (:func:`pair_of`, :func:`pair_index`);
and the string each n-gram is hashed and memoized as at its position (:func:`gram_value`). :class:`NgramsText` is a
base of :class:`~ldp.encoders.rappor_ngrams.RapporNgramsParams`; the functions are re-exported by
:mod:`ldp.encoders.rappor_ngrams`."""

from __future__ import annotations

from typing import Any, ClassVar

from ldp.encoders.base import check_string_value
from ldp.encoders.base_checks import refuse_relation
from ldp.errors import RefusalValueError, kind_of

__all__ = ["NgramsText", "gram_value", "pair_of", "pair_index"]


def gram_value(position: int, gram: str) -> str:
    """The string the n-gram RAPPOR hashes and memoizes for ``gram`` at ``position``: ``"{position}|{gram}"``."""
    return f"{position}|{gram}"


def pair_of(index: int, positions: int) -> tuple[int, int]:
    """The position pair ``(a, b)``, ``a < b``, of pair ``index`` in lexicographic order."""
    a = 0
    while index >= positions - 1 - a:
        index -= positions - 1 - a
        a += 1
    return a, a + 1 + index


def pair_index(a: int, b: int, positions: int) -> int:
    """Inverse of :func:`pair_of`."""
    return a * (2 * positions - a - 1) // 2 + (b - a - 1)


class NgramsText:
    """The text of :class:`~ldp.encoders.rappor_ngrams.RapporNgramsParams`: n-gram length ``n``, padded length
    ``max_length`` (L, in characters), ``alphabet``, ``pad`` character and ``truncate``."""

    n: int
    max_length: int
    alphabet: str
    pad: str
    truncate: bool
    protocol: ClassVar[str]

    def _check_text(self) -> None:
        """``alphabet``: a non-empty str of distinct characters; ``pad``: one character outside it."""
        if not isinstance(self.alphabet, str):
            raise RefusalValueError("alphabet must be a non-empty str", "param_type", param="alphabet",
                                    expected="string", got=kind_of(self.alphabet))
        if not self.alphabet:
            raise RefusalValueError("alphabet must be a non-empty str", "param_length", param="alphabet", got=0, min=1)
        if len(set(self.alphabet)) != len(self.alphabet):
            raise refuse_relation(f"alphabet must not repeat a character: {self.alphabet!r}", "distinct", "alphabet")
        if not isinstance(self.pad, str) or len(self.pad) != 1:
            message = f"pad must be one character, got {self.pad!r}"
            if isinstance(self.pad, str):
                raise RefusalValueError(message, "param_length", param="pad", got=len(self.pad), min=1, max=1)
            raise RefusalValueError(message, "param_type", param="pad", expected="string", got=kind_of(self.pad))
        if self.pad in self.alphabet:
            raise refuse_relation(f"pad {self.pad!r} must not be a character of the alphabet", "pad_not_in_alphabet",
                                  "pad", "alphabet")

    @staticmethod
    def gram_value(position: int, gram: str) -> str:
        """:func:`gram_value`, for code that holds only the params (:mod:`ldp.batch.rappor_ngrams`)."""
        return gram_value(position, gram)

    @property
    def positions(self) -> int:
        """``P = L/n`` n-gram positions."""
        return self.max_length // self.n

    @property
    def pairs(self) -> int:
        """``P(P−1)/2`` position pairs a client draws from."""
        return self.positions * (self.positions - 1) // 2

    def padded(self, value: Any) -> str:
        """``value`` checked (module docstring) and padded to ``L`` characters."""
        check_string_value(value, self.protocol)
        if isinstance(value, (bytes, bytearray)):
            try:
                value = bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                raise RefusalValueError(f"{self.protocol} values given as bytes must be UTF-8", "not_encodable",
                                        encoding="utf-8") from None
        if not value:
            raise RefusalValueError(f"{self.protocol} values must be non-empty strings", "empty_value")
        bad = sorted(set(value) - set(self.alphabet))
        if bad:  # the refusal names the smallest (by code point)
            raise RefusalValueError(f"{self.protocol} value has characters outside the alphabet: {''.join(bad)!r}",
                                    "not_in_alphabet", char=bad[0])
        if len(value) > self.max_length:
            if not self.truncate:
                raise RefusalValueError(f"{self.protocol} value of {len(value)} characters is over max_length="
                                        f"{self.max_length} (set truncate=True to cut it)", "value_too_long",
                                        got=len(value), max=self.max_length, unit="characters")
            value = value[:self.max_length]
        return str(value).ljust(self.max_length, self.pad)

    def grams(self, value: Any) -> tuple[str, ...]:
        """The ``P`` n-grams of the padded ``value``."""
        s = self.padded(value)
        return tuple(s[i:i + self.n] for i in range(0, self.max_length, self.n))

    def unpad(self, padded: str) -> str:
        """A padded string without its pad suffix."""
        return padded.rstrip(self.pad)
