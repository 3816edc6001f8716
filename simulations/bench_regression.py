"""Central-DP regression sections of ``simulations/benchmark.py`` (registered by :func:`register`).

Target (issue 7): the fit of any estimator on n = 10^6, d = 50 in <= 1 s, in one pass over the
data for the sufficient statistics; streaming ``partial_fit`` in chunks is timed beside it. The fits
use the exact discrete samplers, seeded (``random_state=0, noise_source="seeded"``) for ``fit`` and on
the OS CSPRNG (the default ``noise_source="secure"``, no seed) for the streamed ``partial_fit``.

``secure_noise`` (issue 49): draws per second of the exact discrete Laplace and Gaussian on the
OS CSPRNG at typical scales (grid units of 2^40: the grid is 2^-40 of the scale), and one SSP
release at d = 13 (104 draws) with ``noise_source="secure"`` against ``"numpy"``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np

ESTIMATORS = [  # (module, class, keyword arguments); modules not present yet are skipped
    ("ldp.regression.baselines", "OLS", {}),
    ("ldp.regression.baselines", "Ridge", {}),
    ("ldp.regression.ssp", "SSP", dict(epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)),
    ("ldp.regression.ssp", "AdaSSP", dict(epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)),
    ("ldp.regression.ssp", "ConstSSPFull", dict(epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)),
    ("ldp.regression.objective", "FunctionalMechanism", dict(epsilon=1.0)),
    ("ldp.regression.objective", "OutputPerturbation", dict(epsilon=1.0)),
    ("ldp.regression.rplr", "RobustPrivateLR", dict(epsilon=1.0, clip_X=0.2, clip_y=0.5)),
]


def _data(ctx: Any, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = ctx.rng(70)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    theta = rng.normal(size=d)
    theta /= np.linalg.norm(theta)
    return X, np.clip(X @ theta + rng.normal(0, 0.1, n), -1, 1)


def register(b: ModuleType) -> None:
    """Add the regression sections to the benchmark module ``b``."""

    @b.benchmark("regression_fit")
    def regression_fit(ctx: Any) -> dict[str, Any]:
        n = ctx.sizes.batch_n // 10  # 10^6 (10^5 quick)
        d = 50
        X, y = _data(ctx, n, d)
        out: dict[str, Any] = {"n": n, "d": d, "data": "unit-norm rows, |y| <= 1", "estimators": {}}
        for module, name, kwargs in ESTIMATORS:
            try:
                cls = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                continue
            params = cls().get_params()  # seeded exact samplers where the estimator has noise
            seeded = {k: v for k, v in (("random_state", 0), ("noise_source", "seeded")) if k in params}
            est = cls(**kwargs, **seeded)
            timing, _ = b.time_runs(lambda _, est=est: est.fit(X, y), ctx.sizes.repeats)
            row: dict[str, Any] = {"seconds": timing}
            row.update(ctx.judge(f"{name}.fit_seconds", timing["best_s"], "<=", 1.0, "s"))
            if hasattr(est, "partial_fit"):
                def stream(_: Any, cls: Any = cls, kwargs: dict[str, Any] = kwargs) -> Any:
                    fresh = cls(**kwargs)
                    for start in range(0, n, 1 << 17):
                        fresh.partial_fit(X[start:start + (1 << 17)], y[start:start + (1 << 17)])
                    return fresh.release() if hasattr(fresh, "release") else fresh
                try:
                    row["partial_fit_chunks_of_131072"] = b.time_runs(stream, max(1, ctx.sizes.repeats // 2))[0]
                except (ValueError, TypeError) as exc:  # an estimator that cannot stream says why
                    row["partial_fit_chunks_of_131072"] = f"not supported: {exc}"
            out["estimators"][name] = row
        return out

    @b.benchmark("secure_noise")
    def secure_noise(ctx: Any) -> dict[str, Any]:
        from ldp.privacy.central_noise import exact_source, gaussian_noise, laplace_noise
        from ldp.regression.ssp import SSP

        draws = 2000
        values = [0.5] * draws
        out: dict[str, Any] = {"draws_per_call": draws, "source": "random.SystemRandom (OS CSPRNG)"}
        for label, fn in (
                ("discrete_laplace_scale_2", lambda _: laplace_noise(values, 1.0, 0.5, source=exact_source())),
                ("discrete_laplace_scale_157", lambda _: laplace_noise(values, 110.0, 0.7, source=exact_source())),
                ("discrete_gaussian_eps_0.5_delta_5e-7", lambda _: gaussian_noise(
                    values, 1.0, epsilon=0.5, delta=5e-7, source=exact_source())),
                ("discrete_gaussian_sigma_1e3", lambda _: gaussian_noise(values, 1.0, sigma=1e3,
                                                                         source=exact_source()))):
            timing, _ = b.time_runs(fn, ctx.sizes.repeats)
            out[label] = {"seconds": timing, "draws_per_s": draws / timing["best_s"]}
        X, y = _data(ctx, 10_000, 13)
        for source in ("secure", "numpy"):
            model = SSP(1.0, 1e-6, bound_X=1.0, bound_y=1.0, noise_source=source).fit(X, y)
            timing, _ = b.time_runs(lambda _, m=model: m.release(), ctx.sizes.repeats * 4)
            out[f"ssp_release_d13_{source}"] = {"seconds": timing, "noise_sd": list(model.noise_sd_)}
        ratio = out["ssp_release_d13_secure"]["seconds"]["best_s"] / out["ssp_release_d13_numpy"]["seconds"]["best_s"]
        out["ssp_release_d13_secure_over_numpy"] = ratio
        out.update(ctx.judge("ssp_release_d13_secure_seconds", out["ssp_release_d13_secure"]["seconds"]["best_s"],
                             "<=", 0.05, "s"))
        return out
