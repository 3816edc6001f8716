"""Projective Geometry Response sections of ``simulations/benchmark.py`` (registered by :func:`register`): issue 74.

* ``pgr_variance``: the exact variance of a rare value's count over the optimum ``4e^ε/(e^ε−1)²`` and the bits a
  report sends, for ``pgr``, ``hpg``, ``hr-block``, ``olh`` and ``oue`` at the planner's parameters, at ε ∈ {1, 2,
  4, 6, 8} and d ∈ {1024, 65,536}; and the decode steps ``K·q·t`` of PGR and HPG (OLH's decoder evaluates ``n·d``
  hashes).
* ``pgr_decode``: fold and decode of 10⁶ reports at d = 65,536, ε = 4, on one core (target ≤ 1 s), at the
  default field and at the authors' (q = 59); the fold beside hr-block's on reports of the same size (the same
  bincount). When ``LDP_PGR_REFERENCE`` names a program speaking the cross-check's protocol (stdin: a line
  ``pg d ε q`` or ``hpg d ε h q``, a line ``n``, then the ``n`` reported indices, one a line; stdout: JSON with
  ``seconds``, the decode's own time, and ``estimates``), the authors' C++ decoder is timed on the same reports
  and its estimates compared with ours (target: ours at least as fast). The program is not part of ldp: it is
  built from github.com/minilek/private_frequency_oracles by whoever runs the comparison.
* ``pgr_statistics``: 400 exact simulated collections (n = 10⁵ Zipf(1.1) users) at ε ∈ {1, 2, 4} and
  d ∈ {1024, 65,536}: the measured variance over the exact formula, pooled over every value (target [0.95,
  1.05]), and the coverage of the 95 % intervals.
* ``pgr_batch_encode``: the vectorized encoder at d = 65,536, ε = 4 (reports/s).
"""

from __future__ import annotations

import json
import os
import subprocess
from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.projective_geometry import PGAggregate, pg_counts, pg_variance
from ldp.encoders.projective_geometry import HPGParams, PGREncoder, PGRParams
from ldp.plan import count_variance, default_params
from ldp.plan.oracles import optimal_variance
from ldp.protocols import get_protocol

COMPARED = ("pgr", "hpg", "hr-block", "olh", "oue")
EPSILONS, DS = (1.0, 2.0, 4.0, 6.0, 8.0), (1024, 65_536)
N = 10**6


def _variance_rows() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in DS:
        for eps in EPSILONS:
            row: dict[str, Any] = {}
            for name in COMPARED:
                try:
                    params = default_params(name, eps, d)
                except ValueError as exc:  # a refused layout (PGR's decode limit), said so
                    row[name] = {"refused": str(exc)}
                    continue
                ratio = count_variance(params, 10**6, 0.0, d) / 10**6 / optimal_variance(eps)
                cell: dict[str, Any] = {"variance_ratio": round(ratio, 4), "report_bits": params.report_bits}
                if name in ("pgr", "hpg"):
                    cell.update(q=params.field, t=params.dimension, blocks=params.nblocks, K=params.order,
                                decode_steps=params.order * params.field * params.dimension)
                row[name] = cell
            out[f"d={d},eps={eps:g}"] = row
    return out


def _reference(params: Any, reports: np.ndarray) -> dict[str, Any] | str:
    """The authors' decoder on ``reports`` (``LDP_PGR_REFERENCE``), or why not."""
    program = os.environ.get("LDP_PGR_REFERENCE")
    if not program:
        return "not measured: LDP_PGR_REFERENCE names no reference decoder"
    head = (f"pg {params.domain_size} {params.epsilon!r} {params.field}" if params.nblocks == 1
            else f"hpg {params.domain_size} {params.epsilon!r} {params.nblocks} {params.field}")
    text = f"{head}\n{reports.size}\n" + "\n".join(map(str, reports.tolist())) + "\n"
    done = subprocess.run([program], input=text, capture_output=True, text=True, timeout=600, check=True)
    got = json.loads(done.stdout)
    ours = pg_counts(params, np.bincount(reports, minlength=params.order))
    theirs = np.asarray(got["estimates"])[:params.domain_size]
    return {"seconds": got["seconds"], "max_abs_difference": float(np.abs(theirs - ours).max())}


def register(b: ModuleType) -> None:
    """Add the PGR sections to the benchmark module ``b``."""

    @b.benchmark("pgr_variance")
    def pgr_variance(ctx: Any) -> dict[str, Any]:
        out = _variance_rows()
        for key in ("d=1024,eps=2", "d=65536,eps=4"):
            out[key]["pgr"].update(ctx.judge(f"{key}.pgr_ratio", out[key]["pgr"]["variance_ratio"], "<=", 1.03, "×"))
        return out

    @b.benchmark("pgr_decode")
    def pgr_decode(ctx: Any) -> dict[str, Any]:
        """10⁶ reports at d = 65,536, ε = 4: fold (a bincount of K outputs) and estimate (the hyperplane counts)."""
        out: dict[str, Any] = {"n": N}
        values = ctx.rng(741).integers(0, 65_536, N)
        for label, params in (("default", PGRParams(4.0, 65_536)), ("authors_q59", PGRParams(4.0, 65_536, 59))):
            batch = PGREncoder(params).encode_batch(values, ctx.rng(742))

            def fold(_: Any, params: Any = params, batch: Any = batch) -> Any:
                agg = PGAggregate(params)
                agg.add(batch)
                return agg

            fold_t, agg = b.time_runs(fold, ctx.sizes.repeats)
            est_t, est = b.time_runs(lambda _, agg=agg: agg.estimate(), ctx.sizes.repeats)
            total = fold_t["best_s"] + est_t["best_s"]
            row: dict[str, Any] = {"params": params.to_dict(), "K": params.order, "fold_s": fold_t,
                                   "estimate_s": est_t, "check_items": len(est.items)}
            row.update(ctx.judge(f"{label}.decode_s", total, "<=", 1.0, "s"))
            ref = _reference(params, batch.columns["j"].astype(np.int64))
            row["authors_cpp"] = ref
            if isinstance(ref, dict):
                row.update(ctx.judge(f"{label}.speed_vs_authors", ref["seconds"] / est_t["best_s"], ">=", 1.0, "×"))
            out[label] = row
        hrb = default_params("hr-block", 4.0, 65_536)
        hbatch = get_protocol("hr-block").encoder_type(hrb).encode_batch(values, ctx.rng(743))

        def fold_hrb(_: Any) -> Any:
            agg = get_protocol("hr-block").aggregate_type(hrb)
            agg.add(hbatch)
            return agg

        timing, _ = b.time_runs(fold_hrb, ctx.sizes.repeats)
        out["hr_block_fold_s"] = {"K": hrb.order, "seconds": timing}
        return out

    @b.benchmark("pgr_statistics")
    def pgr_statistics(ctx: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        reps = 400 if ctx.sizes.repeats >= 5 else 100
        for d in DS:
            weights = 1.0 / np.arange(1, d + 1) ** 1.1
            for eps in (1.0, 2.0, 4.0):
                for cls in (PGRParams, HPGParams):
                    params = cls(eps, d)
                    gen = ctx.rng(int(eps * 100) + d)
                    truth = gen.multinomial(10**5, weights / weights.sum())
                    exact = pg_variance(params, truth)
                    sq = np.zeros(d)
                    covered = 0
                    for _ in range(reps):
                        est = PGAggregate.simulate(params, truth, gen).estimate()
                        sq += (est.count - truth) ** 2
                        covered += int(((est.ci_low <= truth) & (truth <= est.ci_high)).sum())
                    ratio = float(sq.sum() / reps / exact.sum())
                    row: dict[str, Any] = {"collections": reps, "variance_ratio": round(ratio, 4),
                                           "coverage": round(covered / (reps * d), 4), "K": params.order}
                    row.update(ctx.judge(f"{params.protocol}.d={d}.eps={eps:g}.ratio_low", ratio, ">=", 0.95, "×"))
                    row.update(ctx.judge(f"{params.protocol}.d={d}.eps={eps:g}.ratio_high", ratio, "<=", 1.05, "×"))
                    out[f"{params.protocol},d={d},eps={eps:g}"] = row
        return out

    @b.benchmark("pgr_batch_encode")
    def pgr_batch_encode(ctx: Any) -> dict[str, Any]:
        values = ctx.rng(744).integers(0, 65_536, ctx.sizes.batch_n // 10)
        return b.batch_encode_section(ctx, PGREncoder(PGRParams(4.0, 65_536)), {"int64": values}, None)
