"""The draw order a protocol declares (docs/conformance.md §3), as its params state it: which primitives one report
draws on the encoder's injected stream, in order.

A protocol's params class declares the rule, independently of its encoder, as a :class:`DrawRule` (its
``draw_rule``): the text (the row of the page's table of k sequences, in the page's short forms ``B(x)``,
``BB(x, n)``, ``R(n)``) and a predictor, a restatement of the rule on a :class:`DrawPrimitives` object
(``params.replay_draws(draws, value)`` calls it). The documentation
test (``tests/docs/test_conformance_doc.py``) gives the predictor primitives that replay a vector case's recorded
``randbits`` calls: the rule must ask for exactly the recorded calls, in order. The predictor never calls the
encoder (the test could not fail then); it may call another protocol's ``replay_draws`` (a composite's parts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["DrawPrimitives", "DrawRule", "grr_draws"]


class DrawPrimitives(Protocol):
    """The primitives of docs/conformance.md §3, each returning what the real primitive returns."""

    def B(self, x: float) -> bool:  # noqa: N802  # the page's names
        """``bernoulli(x)``."""

    def BB(self, x: float, n: int) -> int:  # noqa: N802
        """``bernoulli_bits(x, n)``: an ``n``-bit mask."""

    def R(self, n: int) -> int:  # noqa: N802
        """``randbelow(n)``."""


@dataclass(frozen=True)
class DrawRule:
    """A protocol's draw order: ``text`` for docs/conformance.md's table, ``replay(draws, params, value)`` the same
    rule as a predictor (what it returns is unused: a composite may use it, e.g. whether a GRR kept its value)."""

    text: str
    replay: Callable[[DrawPrimitives, Any, Any], object]


def grr_draws(draws: DrawPrimitives, p: float, d: int) -> bool:
    """The draws of a generalized randomized response over ``d`` values: ``B(p)``, then ``R(d−1)`` if false (a
    uniform other value); whether the value was kept."""
    kept = draws.B(p)
    if not kept:
        draws.R(d - 1)
    return kept
