"""Choosing a trust model (``ldp plan --trust-models``; issue 71, item 8): the four models' standard error of one
count at the same central ε (:func:`ldp.compare.trust.trust_table`), and which to pick given whom the collection
can trust.

The rule the text states, from the models' guarantees (docs/trust-models.md):

* **two-aggregator** when two operators that will not collude run the leader and the helper: the smallest error by
  far (the noise of one central release, whatever n); **two-aggregator+local** when each report must also keep a
  local ε if they do collude (the error of GRR at that ε, the central noise on top);
* **shuffle** when one party the analysts do not control shuffles: the central ε by amplification, whose local
  ε₀ is large only when n is (at small n and large d it buys nothing);
* **local** when no one is trusted: the best frequency oracle at ε itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ldp.compare.trust import TrustRow, trust_table

__all__ = ["TrustPlan", "plan_trust"]


@dataclass(frozen=True)
class TrustPlan:
    n: int
    d: int
    epsilon: float
    delta: float
    rows: tuple[TrustRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "d": self.d, "epsilon": self.epsilon, "delta": self.delta,
                "rows": [r.to_dict() for r in self.rows], "choice": CHOICE}

    def text(self) -> str:
        local = self.rows[0].standard_error
        lines = [f"trust models at central ε = {self.epsilon:g} (shuffle: δ = {self.delta:g}), n = {self.n:,}, "
                 f"d = {self.d:,}: standard error of one count",
                 f"  {'model':<24} {'trusts':<42} {'device':<24} {'local ε':>8} {'std error':>11} {'vs local':>9}"]
        for r in self.rows:
            eps_l = "-" if r.local_epsilon is None else f"{r.local_epsilon:.3g}"
            lines.append(f"  {r.model:<24} {r.trusts:<42} {r.protocol:<24} {eps_l:>8} {r.standard_error:>11,.1f} "
                         f"{r.standard_error / local:>8.3g}x")
        lines.append("choose:")
        lines += [f"  {c}" for c in CHOICE]
        return "\n".join(lines)


CHOICE = (
    "two operators that will not collude (leader and helper): two-aggregator (spec: \"trust\": \"two-aggregator\"),",
    "  or two-aggregator+local if each report must keep its local ε should they collude;",
    "one party the analysts do not control shuffles: shuffle (\"trust\": \"shuffle\");",
    "no one: local (the default).",
)


def plan_trust(n: int, d: int, epsilon: float, delta: float = 1e-8, local_epsilon: float | None = None) -> TrustPlan:
    """The trust models' plan (module docstring)."""
    return TrustPlan(n, d, float(epsilon), float(delta), tuple(trust_table(n, d, epsilon, delta,
                                                                       local_epsilon=local_epsilon)))


def plan_trust_text(args: Any) -> str:
    """``ldp plan --trust-models``'s output for its options (``--n``, ``--d``, ``--epsilon``, ``--delta``)."""
    for name in ("n", "d", "epsilon"):
        if getattr(args, name, None) is None:
            raise ValueError(f"--trust-models needs --n, --d and --epsilon (missing --{name})")
    plan = plan_trust(int(args.n), int(args.d), float(args.epsilon), args.delta or 1e-8)
    return json.dumps(plan.to_dict(), indent=2) if args.json else plan.text()
