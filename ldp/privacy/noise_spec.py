"""The noise a two-aggregator release adds, as a task or the command line states it: ``none``, ``laplace:EPS``
(ε-DP, discrete Laplace) or ``gaussian:EPS:DELTA`` ((ε, δ)-DP, discrete Gaussian), calibrated to a sensitivity by
:class:`~ldp.privacy.share_noise.ShareNoise`. :mod:`ldp.aggregators.task` holds it in a task; :mod:`ldp.prio.
heavy_hitters` splits it over a walk's levels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ldp.privacy.cost import PrivacyCost
from ldp.privacy.share_noise import ShareNoise

__all__ = ["NOISE_MECHANISMS", "Noise"]

NOISE_MECHANISMS = ("none", "laplace", "gaussian")


@dataclass(frozen=True)
class Noise:
    """One aggregator's noise on its aggregate share: ``none``, ``laplace`` (ε-DP, discrete Laplace) or
    ``gaussian`` ((ε, δ)-DP, discrete Gaussian), calibrated by :class:`~ldp.privacy.share_noise.ShareNoise` to the
    task's sensitivity (one device's measurement replaced by another: :meth:`Task.sensitivity`)."""

    mechanism: str = "none"
    epsilon: float | None = None
    delta: float | None = None

    def __post_init__(self) -> None:
        if self.mechanism not in NOISE_MECHANISMS:
            raise ValueError(f"noise mechanism must be one of {', '.join(NOISE_MECHANISMS)}, got {self.mechanism!r}")
        if self.mechanism == "none":
            if self.epsilon is not None or self.delta is not None:
                raise ValueError("noise 'none' takes no epsilon or delta")
            return
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, int | float) or not math.isfinite(eps) or eps <= 0:
            raise ValueError(f"noise epsilon must be a finite number > 0, got {eps!r}")
        if self.mechanism == "laplace" and self.delta not in (None, 0):
            raise ValueError("laplace noise is pure ε-DP: it takes no delta")
        if self.mechanism == "gaussian":
            d = self.delta
            if isinstance(d, bool) or not isinstance(d, int | float) or not 0 < d < 1:
                raise ValueError(f"gaussian noise needs a delta in (0, 1), got {d!r}")

    @classmethod
    def parse(cls, text: str) -> Noise:
        """``none``, ``laplace:EPS`` or ``gaussian:EPS:DELTA`` (the command line's form)."""
        parts = text.split(":")
        try:
            numbers = [float(p) for p in parts[1:]]
        except ValueError:
            raise ValueError(f"noise is none, laplace:EPS or gaussian:EPS:DELTA, got {text!r}") from None
        if parts[0] == "none" and not numbers:
            return cls()
        if parts[0] == "laplace" and len(numbers) == 1:
            return cls("laplace", numbers[0])
        if parts[0] == "gaussian" and len(numbers) == 2:
            return cls("gaussian", numbers[0], numbers[1])
        raise ValueError(f"noise is none, laplace:EPS or gaussian:EPS:DELTA, got {text!r}")

    def share_noise(self, sensitivity_l1: float, sensitivity_l2: float) -> ShareNoise | None:
        """The calibrated noise (``None`` for ``none``)."""
        if self.mechanism == "laplace":
            assert self.epsilon is not None
            return ShareNoise.laplace(self.epsilon, sensitivity_l1)  # type: ignore[arg-type]
        if self.mechanism == "gaussian":
            assert self.epsilon is not None and self.delta is not None
            return ShareNoise.gaussian(self.epsilon, self.delta, sensitivity_l2)
        return None

    @property
    def cost(self) -> PrivacyCost | None:
        """The central guarantee of one release against the collector (one honest aggregator), ``None`` without
        noise (the collector sees the exact sums)."""
        if self.mechanism == "none":
            return None
        return PrivacyCost(float(self.epsilon or 0), float(self.delta or 0))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mechanism": self.mechanism}
        if self.epsilon is not None:
            out["epsilon"] = self.epsilon
        if self.delta is not None:
            out["delta"] = self.delta
        return out

    def __str__(self) -> str:
        if self.mechanism == "none":
            return "none"
        return f"{self.mechanism}(ε={self.epsilon:g}" + (f", δ={self.delta:g})" if self.delta else ")")
