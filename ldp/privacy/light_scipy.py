"""The few scipy functions the privacy figures use — the binomial law, the normal tail, FFT convolution and
log-sum-exp — without importing ``scipy.stats`` and ``scipy.signal``, whose import alone costs about 1 s of CPU:
more than the rest of ``ldp privacy grr … --shuffled 1e8 --windows 365`` (issue 88, item 7).

The numbers are scipy's own: ``binom`` evaluates the Boost functions ``scipy.stats.binom`` calls
(``scipy.special._ufuncs._binom_pmf`` and its siblings) with the same handling of the support's edges (``pmf``: 0 off
the integers of [0, n]; ``cdf``/``sf`` at ⌊k⌋, 0 or 1 outside [0, n); ``ppf``/``isf``: −1 and n at the ends) and the
same clipping to [0, 1]; ``norm_isf`` is ``-ndtri(q)``, as ``scipy.stats.norm.isf``; ``fftconvolve`` is
``scipy.signal.fftconvolve``'s full mode for real 1-D input (real FFTs of ``scipy.fft`` at the next fast length, cut to
``a.size + b.size − 1``; a product when one has one entry); ``logsumexp`` is the max-shifted sum. Should a scipy release
drop the private functions, ``scipy.stats`` is imported instead (slower start, the same numbers); the tests compare both
on every edge.

Server side: numpy and scipy, imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from typing import Any

__all__ = ["binom", "fftconvolve", "logsumexp", "norm_isf"]


@functools.cache
def _boost() -> Any:
    """The private Boost ufuncs (``None`` when this scipy has none: then ``scipy.stats`` answers)."""
    try:
        from scipy.special import _ufuncs
    except ImportError:  # pragma: no cover - scipy without the private module
        return None
    names = ("_binom_pmf", "_binom_cdf", "_binom_sf", "_binom_ppf", "_binom_isf")
    return _ufuncs if all(hasattr(_ufuncs, n) for n in names) else None


def _out(out: Any) -> Any:
    return out[()] if out.ndim == 0 else out


class _Binomial:
    """``scipy.stats.binom``'s ``pmf``, ``cdf``, ``sf``, ``ppf`` and ``isf`` (module docstring)."""

    @staticmethod
    def _args(x: Any, n: Any, p: Any) -> tuple[Any, Any, Any]:
        import numpy as np

        x, n, p = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64),
                                      np.asarray(p, dtype=np.float64))
        return x, n, p

    def pmf(self, k: Any, n: Any, p: Any) -> Any:
        import numpy as np

        u = _boost()
        if u is None:
            from scipy.stats import binom as reference
            return reference.pmf(k, n, p)
        k_in = np.asarray(k)
        if k_in.dtype.kind in "iu" and np.ndim(n) == 0 and np.ndim(p) == 0 and k_in.size \
                and int(k_in.min()) >= 0 and int(k_in.max()) <= n:  # integers inside the support: no mask needed
            return _out(np.clip(u._binom_pmf(k_in.astype(np.float64), float(n), float(p)), 0, 1))
        k, n, p = self._args(k, n, p)
        cond = (k >= 0) & (k <= n) & (np.floor(k) == k)
        out = np.zeros(k.shape)
        if np.any(cond):
            out[cond] = np.clip(u._binom_pmf(k[cond], n[cond], p[cond]), 0, 1)
        return _out(out)

    def _tail(self, name: str, k: Any, n: Any, p: Any, below: float, above: float) -> Any:
        import numpy as np

        u = _boost()
        if u is None:
            from scipy.stats import binom as reference
            return getattr(reference, name)(k, n, p)
        if np.ndim(k) == 0 and np.ndim(n) == 0 and np.ndim(p) == 0:  # one value: no arrays to build
            kf, nf = float(k), float(n)
            if math.isnan(kf):
                return np.float64(math.nan)
            if not 0.0 <= kf < nf:
                return np.float64(above if kf >= nf else below)
            return np.float64(min(max(float(getattr(u, f"_binom_{name}")(math.floor(kf), nf, float(p))), 0.0), 1.0))
        k, n, p = self._args(k, n, p)
        cond = (k >= 0) & (k < n) & np.isfinite(k)
        out = np.where(k >= n, above, np.where(k < 0, below, 0.0))
        if np.any(cond):
            out[cond] = np.clip(getattr(u, f"_binom_{name}")(np.floor(k[cond]), n[cond], p[cond]), 0, 1)
        return _out(out)

    def cdf(self, k: Any, n: Any, p: Any) -> Any:
        return self._tail("cdf", k, n, p, 0.0, 1.0)

    def sf(self, k: Any, n: Any, p: Any) -> Any:
        return self._tail("sf", k, n, p, 1.0, 0.0)

    def _quantile(self, name: str, q: Any, n: Any, p: Any, at_one: Any, at_zero: Any) -> Any:
        import numpy as np

        u = _boost()
        if u is None:
            from scipy.stats import binom as reference
            return getattr(reference, name)(q, n, p)
        q, n, p = self._args(q, n, p)
        cond = (q > 0) & (q < 1)
        out = np.full(q.shape, np.nan)
        out = np.where(q == 1, at_one(n), np.where(q == 0, at_zero(n), out))
        if np.any(cond):
            out[cond] = getattr(u, f"_binom_{name}")(q[cond], n[cond], p[cond])
        return _out(out)

    def ppf(self, q: Any, n: Any, p: Any) -> Any:
        return self._quantile("ppf", q, n, p, lambda n: n, lambda n: -1.0 + 0 * n)

    def isf(self, q: Any, n: Any, p: Any) -> Any:
        return self._quantile("isf", q, n, p, lambda n: -1.0 + 0 * n, lambda n: n)


binom = _Binomial()


def norm_isf(q: Any) -> Any:
    """The standard normal's inverse survival function, ``-ndtri(q)`` (``scipy.stats.norm.isf``)."""
    from scipy.special import ndtri

    return -ndtri(q)


def fftconvolve(a: Any, b: Any) -> Any:
    """The full linear convolution of two real 1-D arrays by FFT (``scipy.signal.fftconvolve(a, b)``)."""
    import numpy as np
    from scipy import fft as sp_fft

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return np.asarray([])
    if a.size == 1 or b.size == 1:  # scipy convolves no axis of length 1: a plain product
        return a * b
    size = a.size + b.size - 1
    fast = sp_fft.next_fast_len(size, True)
    return sp_fft.irfft(sp_fft.rfft(a, fast) * sp_fft.rfft(b, fast), fast)[:size]


def logsumexp(a: Any, axis: int | None = None) -> Any:
    """ln Σ e^a along ``axis``, shifted by the largest entry (as ``scipy.special.logsumexp``; −∞ for all −∞)."""
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
    return out.reshape(()) if axis is None else np.squeeze(out, axis=axis)
