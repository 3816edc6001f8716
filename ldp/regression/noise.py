"""Where a central regression release draws its noise (``noise_source``), and the exact draws.

Every private regression takes ``noise_source="secure"`` (the default), ``"seeded"`` or ``"numpy"``:

* ``"secure"`` with ``random_state=None`` — the exact discrete samplers of
  :mod:`ldp.privacy.central_noise` (Canonne, Kamath & Steinke 2020) on the OS CSPRNG, on a
  power-of-two grid with the sensitivity inflated for the rounding. The one for real releases.
* ``"seeded"`` (``random_state`` required) — the same exact samplers on a ``random.Random`` seeded
  from ``random_state`` (128 bits drawn from its numpy generator): reproducible, labelled
  ``"seeded exact sampler — simulation only"`` (a Mersenne Twister is predictable).
* ``"secure"`` with a ``random_state`` — released as ``"seeded"`` (so seeded results stay
  reproducible), with a :class:`~ldp.errors.SeededNoiseWarning`: pass ``noise_source="seeded"``
  to say a simulation is meant, or drop ``random_state`` for a real release.
* ``"numpy"`` — the floating-point numpy draws (each model's historical code, unchanged draw for
  draw): simulation only (Mironov 2012: the low bits of such draws can reveal the input), labelled
  ``"simulation noise (numpy floating point)"``.

A fitted model records ``noise_source_`` (``"secure"``, ``"seeded"`` or ``"numpy"``) and
``noise_label_`` (the label above).
"""

from __future__ import annotations

import math
import os
import random
import sys
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.errors import SeededNoiseWarning
from ldp.privacy.central_noise import SOURCE_LABELS, NoiseSource, exact_source, gaussian_noise, laplace_noise

__all__ = ["NOISE_SOURCES", "ReleaseNoise", "SeededNoiseWarning", "check_noise_source", "release_source",
           "resolve_noise", "sqrt_upper"]

NOISE_SOURCES = ("secure", "seeded", "numpy")


def check_noise_source(value: Any) -> str:
    """``value`` if it is ``"secure"``, ``"seeded"`` or ``"numpy"``, else ``ValueError``."""
    if not isinstance(value, str) or value not in NOISE_SOURCES:
        raise ValueError(f"noise_source must be one of {NOISE_SOURCES}, got {value!r}")
    return value


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside the ``ldp`` package (the user's ``fit`` or ``release``)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def release_source(noise_source: Any, random_state: Any, owner: str = "this regression") -> str:
    """The source a release with these parameters draws from (``"secure"``, ``"seeded"`` or ``"numpy"``),
    checked before anything is charged: ``ValueError`` for an unknown ``noise_source`` or for ``"seeded"``
    without a ``random_state``; :class:`SeededNoiseWarning` for ``"secure"`` (the default) with a
    ``random_state``, which is released as ``"seeded"``."""
    source = check_noise_source(noise_source)
    if source == "seeded" and random_state is None:
        raise ValueError(f"{owner}: noise_source='seeded' needs a random_state to seed the exact sampler from "
                         "(or use the default noise_source='secure' without one for a real release)")
    if source == "secure" and random_state is not None:
        warnings.warn(f"{owner}: random_state is given, so the noise comes from a seeded exact sampler (a "
                      "predictable Mersenne Twister), for simulations only, not for a real release; pass "
                      "noise_source='seeded' to say that is what is meant, or drop random_state for a real "
                      "release (OS CSPRNG)", SeededNoiseWarning, stacklevel=_caller_level())
        return "seeded"
    return source


def sqrt_upper(m: int) -> Fraction:
    """A rational upper bound on √m within 2^-30 (L1 ≤ √m·L2 in m dimensions)."""
    scale = 1 << 30
    return Fraction(math.isqrt(m * scale * scale) + 1, scale)


@dataclass
class ReleaseNoise:
    """The noise of one release: its source and, for the exact samplers, the bit source."""

    source: NoiseSource
    exact: random.Random | None = None

    @property
    def label(self) -> str:
        return SOURCE_LABELS[self.source]

    @property
    def is_numpy(self) -> bool:
        return self.source is NoiseSource.NUMPY

    def _rng(self) -> random.Random:
        if self.exact is None:
            raise ValueError("numpy noise has no exact sampler")
        return self.exact

    def gaussian(self, values: Any, sensitivity_l2: float, sigma: float, epsilon: float,
                 delta: float) -> tuple[np.ndarray, float]:
        """``values`` + discrete Gaussian noise (grid, inflated sensitivity, σ at least ``sigma``
        scaled and at least the discrete (ε, δ) calibration) and the σ used."""
        shape = np.shape(values)
        rel = gaussian_noise(np.ravel(values), sensitivity_l2, sigma=sigma, epsilon=epsilon, delta=delta,
                             source=self._rng())
        return np.asarray(rel.values, dtype=np.float64).reshape(shape), rel.scale

    def laplace(self, values: Any, sensitivity_l1: float, epsilon: float) -> tuple[np.ndarray, float]:
        """``values`` + discrete Laplace noise (grid, inflated L1 sensitivity) and the scale used."""
        shape = np.shape(values)
        rel = laplace_noise(np.ravel(values), sensitivity_l1, epsilon, source=self._rng())
        return np.asarray(rel.values, dtype=np.float64).reshape(shape), rel.scale

    def symmetric(self, matrix: np.ndarray, draw: str, sensitivity: float, epsilon: float,
                  delta: float = 0.0, sigma: float = 0.0) -> tuple[np.ndarray, float]:
        """The upper triangle of a symmetric ``matrix`` (d(d+1)/2 distinct entries) released with
        ``draw`` = ``"gaussian"`` or ``"laplace"`` noise, mirrored; and the scale used."""
        d = matrix.shape[0]
        iu = np.triu_indices(d)
        upper = ((matrix + matrix.T) / 2)[iu]
        if draw == "gaussian":
            noisy, scale = self.gaussian(upper, sensitivity, sigma, epsilon, delta)
        else:
            noisy, scale = self.laplace(upper, sensitivity, epsilon)
        out = np.zeros((d, d))
        out[iu] = noisy
        return out + np.triu(out, 1).T, scale


def resolve_noise(source: Any, rng: np.random.Generator) -> ReleaseNoise:
    """The :class:`ReleaseNoise` of a release from :func:`release_source`'s answer: numpy draws from
    ``rng``; the exact samplers on the OS CSPRNG (``"secure"``), or on ``random.Random`` seeded with
    128 bits of ``rng`` (``"seeded"``)."""
    source = check_noise_source(source)
    if source == "numpy":
        return ReleaseNoise(NoiseSource.NUMPY)
    if source == "secure":
        return ReleaseNoise(NoiseSource.SECURE, exact_source())
    return ReleaseNoise(NoiseSource.SEEDED, exact_source(int.from_bytes(rng.bytes(16), "big")))
