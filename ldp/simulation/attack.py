"""Data-poisoning attacks on a simulated collection (Cao, Jia and Gong, USENIX Security 2021), and what the
server's law tests (:mod:`ldp.jobs.poisoning`) see of them.

``m`` fake users join ``n − m`` honest ones (``β = m/n``) and send crafted reports to promote ``r`` target items:

* ``mga`` (maximal gain attack): each report promotes the targets as much as the protocol allows; crafted by the
  protocol's own module of this package (``<family>_attack.py``, an :class:`Attacker` naming its params types);
  where it pads its reports to look honest (unary encoding, RAPPOR), ``mga-bare`` sends them unpadded;
* ``random-report``: a uniformly random report of the report space (every field uniform: the paper's random
  perturbed-value attack; ``random`` names it);
* ``random-value``: a uniformly random value of the domain, encoded honestly (its reports follow the honest law:
  no test can see it, and it promotes nothing);
* ``random-target``: a random target, encoded honestly (the paper's random item attack).

The damage is the paper's frequency gain: ``Σ_t (f̂_t after − f̂_t before)``, the estimated frequencies of the
targets with the fake users against those of the honest users alone.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.jobs.poisoning import Evidence, poisoning_evidence
from ldp.lazy import subclasses_in
from ldp.protocols import get_protocol
from ldp.randomness import as_generator
from ldp.reports import ReportBatch
from ldp.simulation.population import Population

__all__ = ["ATTACKS", "AttackResult", "Attacker", "attacker_for", "fake_reports", "simulate_attack"]

ATTACKS = ("mga", "mga-bare", "random-report", "random-value", "random-target")
ALIASES = {"random": "random-report"}


class Attacker:
    """How fake reports promoting targets are crafted for a protocol (the MGA). A family subclasses this in
    ``ldp/simulation/<family>_attack.py`` and sets :attr:`params_type`."""

    params_type: ClassVar[type | tuple[type, ...]] = ()

    def mga(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
            candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        """The columns of ``m`` MGA reports promoting the item indices ``targets`` (``candidates``: the strings
        of an open-domain protocol; ``tries``: a search budget per report, where the attack searches)."""
        raise NotImplementedError(f"no maximal gain attack is defined for {params.protocol}")

    def mga_bare(self, params: Any, targets: npt.NDArray[np.int64], m: int, gen: np.random.Generator, *,
                 candidates: Sequence[str] | None = None, tries: int = 1000) -> dict[str, Any]:
        """The MGA's reports without the padding that makes them look honest (the targets' bits alone), where
        the MGA pads."""
        raise NotImplementedError(f"no unpadded maximal gain attack is defined for {params.protocol}")


@cache
def _attackers() -> dict[type, Attacker]:
    found: dict[type, Attacker] = {}
    for attacker in subclasses_in(__name__.rpartition(".")[0], Attacker, suffix="_attack"):
        for t in attacker.params_type if isinstance(attacker.params_type, tuple) else (attacker.params_type,):
            found[t] = attacker()
    return found


def attacker_for(params: Any) -> Attacker:
    """The :class:`Attacker` of ``params``'s type, or the base (no MGA)."""
    return _attackers().get(type(params), Attacker())


def _encode(params: Any, values: npt.NDArray[np.int64], gen: np.random.Generator,
            candidates: Sequence[str] | None) -> dict[str, Any]:
    enc: Any = get_protocol(params.protocol).encoder_type(params)
    batch = enc.encode_batch(values, gen) if candidates is None else enc.encode_batch(values, gen,
                                                                                    candidates=candidates)
    return dict(batch.columns)


def _random_report(params: Any, m: int, gen: np.random.Generator) -> dict[str, Any]:
    """Every field uniform: a ``uint`` in ``[0, size)``, each of a ``bits`` field's bits a fair coin."""
    from ldp.batch.bits import row_padding_mask

    cols: dict[str, Any] = {}
    for f in params.schema:
        if f.kind == "uint":
            cols[f.name] = gen.integers(0, f.size, size=m, dtype=np.uint64).astype(np.min_scalar_type(f.size - 1))
        else:
            rows = gen.integers(0, 256, size=(m, (f.size + 7) // 8), dtype=np.uint8)
            cols[f.name] = rows & row_padding_mask(f.size)
    return cols


def fake_reports(params: Any, attack: str, targets: Sequence[int] | npt.NDArray[np.integer[Any]], m: int,
                 rng: Any = None, *, domain: int | None = None, candidates: Sequence[str] | None = None,
                 tries: int = 1000) -> ReportBatch:
    """A batch of ``m`` fake reports of ``attack`` (:data:`ATTACKS`) promoting the item indices ``targets`` of a
    domain of ``domain`` items (default: the protocol's)."""
    attack = ALIASES.get(attack, attack)
    if attack not in ATTACKS:
        raise ValueError(f"attack must be one of {ATTACKS + tuple(ALIASES)}, got {attack!r}")
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 0:
        raise ValueError(f"the number of fake reports must be an int >= 0, got {m!r}")
    d = domain if domain is not None else params.domain_size
    t = np.asarray(targets, dtype=np.int64)
    if t.ndim != 1 or t.size < 1 or t.min() < 0 or t.max() >= d or np.unique(t).size != t.size:
        raise ValueError(f"targets must be distinct item indices in [0, {d}), got {list(targets)}")
    gen = as_generator(rng)
    if attack in ("mga", "mga-bare"):
        craft = attacker_for(params).mga if attack == "mga" else attacker_for(params).mga_bare
        cols = craft(params, t, int(m), gen, candidates=candidates, tries=tries)
    elif attack == "random-report":
        cols = _random_report(params, int(m), gen)
    elif attack == "random-value":
        cols = _encode(params, gen.integers(0, d, size=m), gen, candidates)
    else:
        cols = _encode(params, gen.choice(t, size=m), gen, candidates)
    return ReportBatch(params.protocol, params.fingerprint, params.schema, cols)


@dataclass(frozen=True)
class AttackResult:
    """One poisoned collection: who attacked, the damage (the targets' frequency gain) and the law tests'
    verdict on the poisoned window (:class:`~ldp.jobs.poisoning.Evidence`)."""

    protocol: str
    attack: str
    n: int
    fake: int
    targets: tuple[str, ...]
    gain: float
    target_gain: tuple[float, ...]
    evidence: Evidence

    @property
    def fraction(self) -> float:
        return self.fake / self.n if self.n else 0.0

    @property
    def detected(self) -> bool:
        return self.evidence.suspicious

    def to_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "attack": self.attack, "n": self.n, "fake": self.fake,
                "fraction": self.fraction, "targets": list(self.targets), "gain": self.gain,
                "target_gain": list(self.target_gain), "detected": self.detected,
                "evidence": self.evidence.to_dict()}

    def lines(self) -> list[str]:
        """The result for people: damage, verdict, each check."""
        out = [f"{self.protocol}: {self.attack} attack, {self.fake:,} fake users of {self.n:,} "
               f"(β = {self.fraction:.3g}), {len(self.targets)} targets",
               f"frequency gain of the targets: {self.gain:+.4f} (sum over targets of the estimated frequency "
               f"with the fake users minus without)",
               f"verdict: {self.evidence.verdict} (family-wise false-alarm rate {self.evidence.alpha:g})"]
        out += [f"  {c.message}" for c in self.evidence.checks]
        return out


def _frequencies(agg: Any, scoring: Any) -> npt.NDArray[np.float64]:
    est = agg.estimate() if scoring is None else agg.estimate(scoring.decoder_input, **scoring.options)
    return np.asarray(est.count, dtype=np.float64) / max(agg.n, 1)


def simulate_attack(params: Any, population: Population, n: int, *, attack: str = "mga", fraction: float = 0.05,
                    targets: int | Sequence[int] = 10, rng: Any = None, alpha: float = 0.01,
                    tries: int = 1000) -> AttackResult:
    """A collection of ``n`` users of whom ``round(fraction·n)`` are fake and run ``attack`` for ``targets``
    (a number of items drawn uniformly, or the item indices), honest users drawn from ``population`` and encoded
    by the protocol's batch encoder; returns the damage and the law tests' verdict (at family-wise ``alpha``) on
    the poisoned window, aggregate and reports together.

    Open-domain protocols (RAPPOR) are simulated on the candidates ``item0 … item{d-1}``, ``d = population.d``."""
    from ldp.simulation.collect import simulation_for

    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction (β) must be in [0, 1), got {fraction!r}")
    gen = as_generator(rng)
    d = population.d
    open_domain = params.domain_size is None
    if not open_domain and d != params.domain_size:
        raise ValueError(f"population has {d} values, protocol domain has {params.domain_size}")
    if isinstance(targets, int | np.integer) and not isinstance(targets, bool):
        if not 1 <= targets <= d:
            raise ValueError(f"targets must be between 1 and d = {d}, got {targets}")
        chosen = np.sort(gen.choice(d, size=int(targets), replace=False))
    else:
        chosen = np.asarray(targets, dtype=np.int64)
    fake = int(round(fraction * n))
    simulation = simulation_for(params)
    candidates = simulation.candidates(params, d) if open_domain else None  # the strings it is simulated on
    scoring = simulation.scoring(params, candidates) if candidates is not None else None
    values = np.repeat(np.arange(d), population.counts(n - fake, gen))
    honest_batch = ReportBatch(params.protocol, params.fingerprint, params.schema,
                               _encode(params, gen.permutation(values), gen, candidates))
    fake_batch = fake_reports(params, attack, chosen, fake, gen, domain=d, candidates=candidates, tries=tries)
    agg_type = get_protocol(params.protocol).aggregate_type
    honest = agg_type(params)
    honest.add(honest_batch)
    # the collection as the server receives it: the fake reports spread evenly among the honest ones
    is_fake = np.zeros(n, bool)
    is_fake[np.arange(fake, dtype=np.int64) * n // max(fake, 1)] = True  # distinct: fake <= n
    both = {}
    for k in honest_batch.columns:
        col = np.asarray(honest_batch.columns[k])
        out = np.empty((n, *col.shape[1:]), col.dtype)
        out[~is_fake], out[is_fake] = col, np.asarray(fake_batch.columns[k])
        both[k] = out
    poisoned = agg_type(params)
    poisoned.add(ReportBatch(params.protocol, params.fingerprint, params.schema, both))
    gains = (_frequencies(poisoned, scoring) - _frequencies(honest, scoring))[chosen]
    evidence = poisoning_evidence(poisoned, both, alpha=alpha)
    labels = tuple(candidates[i] if candidates is not None else str(params.label_of(int(i))) for i in chosen)
    return AttackResult(params.protocol, ALIASES.get(attack, attack), int(n), fake, labels, float(gains.sum()),
                        tuple(float(g) for g in gains), evidence)

