"""Projective Geometry Response sections of ``simulations/benchmark.py`` (registered by :func:`register`): issue 74.

* ``pgr_variance``: the exact variance of a rare value's count over the optimum ``4e^ε/(e^ε−1)²`` and the bits a
  report sends, for ``pgr``, ``hpg``, ``hr-block``, ``olh`` and ``oue`` at the planner's parameters, at ε ∈ {1, 2,
  4, 6, 8} and d ∈ {1024, 65,536}; and the decode steps ``K·q·t`` of PGR and HPG (OLH's decoder evaluates ``n·d``
  hashes).
* ``pgr_decode``: fold and decode of 10⁶ reports at d = 65,536, ε = 4, on one core (target ≤ 1 s), at the
  default field (q = 53) and at the authors' (q = 59); the fold beside hr-block's on reports of the same size (the
  same bincount). When ``LDP_PGR_REFERENCE`` names a checkout of the authors' code
  (github.com/minilek/private_frequency_oracles, checked at f043e0c), the reference harness
  ``simulations/pgr_reference.cc`` is compiled with their sources twice, with each of :data:`REFERENCE_FLAGS`
  (their Makefile's ``-O2``, and ``-O3 -march=native``), and both builds are run in the same run as ours on the
  same reports: their estimates compared with ours, and their times over ours (target: ours at least as fast).
  The protocol, what is timed and the rounds: docs/protocols/projective-geometry.md, "Against the authors' code".
* ``pgr_statistics``: 400 exact simulated collections (n = 10⁵ Zipf(1.1) users) at ε ∈ {1, 2, 4} and
  d ∈ {1024, 65,536}: the measured variance over the exact formula, pooled over every value (target [0.95,
  1.05]), and the coverage of the 95 % intervals.
* ``pgr_batch_encode``: the vectorized encoder at d = 65,536, ε = 4 (reports/s).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
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
REFERENCE_FLAGS = {"O2": ("-O2",), "O3_march_native": ("-O3", "-march=native")}
"""The reference harness's builds: the authors' Makefile's flags, and the fastest this machine's compiler offers."""
REFERENCE_SOURCES = ("oracles/projective_geometry.cc", "oracles/hybrid_projective_geometry.cc",
                     "oracles/private_frequency_oracle.cc", "oracles/util/util.cc", "oracles/util/message.cc")


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


def _build_reference(directory: Path) -> dict[str, Path] | str:
    """The reference harness built in ``directory`` once per :data:`REFERENCE_FLAGS` entry from the checkout that
    ``LDP_PGR_REFERENCE`` names, or why not."""
    checkout = os.environ.get("LDP_PGR_REFERENCE")
    if not checkout:
        return "not measured: LDP_PGR_REFERENCE names no checkout of the authors' code"
    sources = [Path(checkout) / name for name in REFERENCE_SOURCES]
    if not all(path.is_file() for path in sources):
        return f"not measured: {checkout} lacks one of {', '.join(REFERENCE_SOURCES)} (not a checkout's root?)"
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        return "not measured: no C++ compiler"
    built = {}
    for label, flags in REFERENCE_FLAGS.items():
        built[label] = directory / f"pgr_reference_{label}"
        subprocess.run([cxx, *flags, "-I", checkout, "-o", str(built[label]),
                        str(Path(__file__).with_name("pgr_reference.cc")), *map(str, sources)],
                       check=True, capture_output=True)
    return built


def _reference(program: Path, params: Any, reports: np.ndarray, rounds: int) -> dict[str, Any]:
    """One build of the reference harness on ``reports``: its times and how far its estimates are from ours."""
    head = (f"pg {params.domain_size} {params.epsilon!r} {params.field}" if params.nblocks == 1
            else f"hpg {params.domain_size} {params.epsilon!r} {params.nblocks} {params.field}")
    text = f"{head}\n{reports.size}\n" + "\n".join(map(str, reports.tolist())) + "\n"
    done = subprocess.run([str(program), str(rounds)], input=text, capture_output=True, text=True, timeout=600,
                          check=True)
    got = json.loads(done.stdout)
    ours = pg_counts(params, np.bincount(reports, minlength=params.order))
    theirs = np.asarray(got["estimates"])[:params.domain_size]
    return {"seconds": got["seconds"], "runs_s": got["runs"], "histogram_seconds": got["histogram_seconds"],
            "max_abs_difference": float(np.abs(theirs - ours).max())}


def _against_authors(ctx: Any, label: str, builds: dict[str, Path] | str, params: Any, reports: np.ndarray,
                     ours: dict[str, float]) -> dict[str, Any] | str:
    """Each build's run (:func:`_reference`) with its time over ours: ``speed_vs_authors`` their entry point
    (histogram from the reports, then the counts) over our fold plus estimate, and ``histogram_speed_vs_authors``
    their counts from a histogram over our estimate from a folded aggregate (each the best of its rounds)."""
    if isinstance(builds, str):
        return builds
    out: dict[str, Any] = {}
    for flags, program in builds.items():
        row = _reference(program, params, reports, ctx.sizes.repeats)
        row.update(ctx.judge(f"{label}.speed_vs_authors.{flags}", row["seconds"] / (ours["fold"] + ours["estimate"]),
                             ">=", 1.0, "×"))
        if row["histogram_seconds"] is not None:
            row["histogram_speed_vs_authors"] = row["histogram_seconds"] / ours["estimate"]
        out[flags] = row
    return out


def _decode_row(ctx: Any, b: ModuleType, label: str, params: Any, values: np.ndarray,
                builds: dict[str, Path] | str) -> dict[str, Any]:
    """Our fold and estimate of ``values``' reports under ``params``, then the authors' builds on the same reports."""
    batch = PGREncoder(params).encode_batch(values, ctx.rng(742))

    def fold(_: Any) -> Any:
        agg = PGAggregate(params)
        agg.add(batch)
        return agg

    fold_t, agg = b.time_runs(fold, ctx.sizes.repeats)
    est_t, est = b.time_runs(lambda _: agg.estimate(), ctx.sizes.repeats)
    row: dict[str, Any] = {"params": params.to_dict(), "K": params.order, "fold_s": fold_t, "estimate_s": est_t,
                           "check_items": len(est.items)}
    row.update(ctx.judge(f"{label}.decode_s", fold_t["best_s"] + est_t["best_s"], "<=", 1.0, "s"))
    row["authors_cpp"] = _against_authors(ctx, label, builds, params, batch.columns["j"].astype(np.int64),
                                          {"fold": fold_t["best_s"], "estimate": est_t["best_s"]})
    return row


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
        out: dict[str, Any] = {"n": N, "reference_flags": {k: " ".join(v) for k, v in REFERENCE_FLAGS.items()}}
        values = ctx.rng(741).integers(0, 65_536, N)
        with tempfile.TemporaryDirectory() as tmp:
            builds = _build_reference(Path(tmp))
            for label, params in (("default", PGRParams(4.0, 65_536)), ("authors_q59", PGRParams(4.0, 65_536, 59))):
                out[label] = _decode_row(ctx, b, label, params, values, builds)
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
