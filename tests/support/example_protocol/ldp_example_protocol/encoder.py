"""The client half of ``example-krr``: parameters and encoder (standard library only: a device imports this).

Its law is GRR's: the value kept with probability ``p = 1/(1 + (d − 1)e^−ε)``, else another value uniformly. It
reuses ldp's GRR for the arithmetic and declares what the conformance suite and the documentation ask of a protocol
(examples, draw rule) as any protocol does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ldp.encoders.base_draws import DrawRule, grr_draws
from ldp.encoders.randomized_response import GRREncoder, GRRParams


@dataclass(frozen=True)
class ExampleKRRParams(GRRParams):
    """k-ary randomized response at ``epsilon`` over ``domain_size`` values (optionally ``labels``)."""

    protocol: ClassVar[str] = "example-krr"
    draw_rule = DrawRule("`B(p)`, then `R(d−1)` if false", lambda s, pr, v: grr_draws(s, pr.p, pr.domain_size))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ()

    @classmethod
    def examples(cls) -> list[ExampleKRRParams]:
        return [cls(1.0, 3), cls(2.0, 5)]


class ExampleKRREncoder(GRREncoder):
    """Reports ``{"index": y}`` (GRR's draws and payload)."""

    params_type = ExampleKRRParams
