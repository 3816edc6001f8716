"""The demo's larger collections: emoji with CMS and HCMS, new words with SFP, and 10^8 users.

The sketch clients run the encoders' vectorized client mechanism (``encode_batch``), the reports
travel as binary frames and the server folds them; SFP and the 10^8-user collection are drawn
exactly at the aggregate level (:mod:`ldp.simulation.collect`), since their point is scale.
"""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np

from ldp.decoders.randomized_response import GRRAggregate
from ldp.decoders.sfp import SfpAggregate
from ldp.decoders.sketch import SketchAggregate
from ldp.display.tables import Column, render
from ldp.encoders.cms import CmsEncoder, CmsParams
from ldp.encoders.hcms import HcmsEncoder, HcmsParams
from ldp.encoders.randomized_response import GRRParams
from ldp.encoders.sfp import SfpParams
from ldp.plan.frequency import plan
from ldp.simulation.collect import simulate, zipf

EMOJI = ("joy", "heart", "sob", "rofl", "heart_eyes", "pray", "fire", "smile", "thumbsup", "blush", "100", "eyes",
         "sparkles", "clap", "skull", "wink", "thinking", "party", "grin", "kiss", "relieved", "muscle", "ok_hand",
         "rolling_eyes", "sunglasses", "cry", "weary", "star_struck", "hugging", "raised_hands", "flushed", "sweat",
         "unamused", "upside_down", "scream", "zany", "nerd", "pleading", "shrug", "facepalm")
NEVER_USED = ("moyai", "abacus", "tram", "kite", "sloth")  # in the dictionary, used by nobody
EMOJI_EPSILON = 4.0  # Apple's published ε for emoji
NEW_WORDS = ("rizz", "delulu", "skibidi", "yeet", "bussin", "goated", "cheugy", "finsta", "doomscroll", "simp",
             "stan", "slay", "sus", "mid", "vibe", "ghosting", "ratioed", "gatekeep", "cringe", "based",
             "sheesh", "lowkey", "highkey", "bet", "cap", "nocap", "periodt", "snatched", "tea", "glowup")
SFP_PARAMS = SfpParams(word_epsilon=2.0, fragment_epsilon=6.0)


def emoji_sketches(n: int, gen: np.random.Generator) -> dict[str, Any]:
    """Which emoji are used most? ``n`` clients each report one with CMS and (other clients) HCMS."""
    t0 = time.perf_counter()
    dictionary = EMOJI + NEVER_USED
    truth = np.concatenate([zipf(len(EMOJI), 1.2).counts(n, gen), np.zeros(len(NEVER_USED), np.int64)])
    users = gen.permutation(np.repeat(np.arange(len(dictionary)), truth))
    out: dict[str, Any] = {"estimates": {}, "planned_std_error": {}, "report_bits": {}}
    for name, params, encoder in (
            ("emoji_cms", CmsParams(EMOJI_EPSILON, 256, 1024, 0), CmsEncoder),
            ("emoji_hcms", HcmsParams(EMOJI_EPSILON, 256, 1024, 0), HcmsEncoder)):
        frames = encoder(params).encode_batch(users, gen, candidates=dictionary).to_bytes()  # client mechanism
        agg = SketchAggregate(params)
        agg.add_bytes(frames)  # the server reads the binary frames
        est = agg.estimate(list(dictionary)).with_truth(truth.tolist())
        order = np.argsort(-truth, kind="stable")
        out["estimates"][name] = _reorder(est, order)
        top = int(truth[order[0]])
        pl = plan(params, n=n, domain_size=len(dictionary), frequency=top / n,
                  f2=float((truth.astype(np.float64) ** 2).sum()) - top**2)  # planned SE of the top emoji
        out["planned_std_error"][name] = pl.std_error_count
        out["report_bits"][name] = pl.report_bits
    out["epsilon"], out["reports"] = EMOJI_EPSILON, n
    out["seconds"] = time.perf_counter() - t0
    return out


def _reorder(est: Any, order: np.ndarray) -> Any:
    from dataclasses import replace

    return replace(est, items=[est.items[i] for i in order], count=est.count[order],
                   std_error=est.std_error[order], extra={k: v[order] for k, v in est.extra.items()})


def new_words(n: int, gen: np.random.Generator) -> dict[str, Any]:
    """Which new words are people typing? SFP finds them with no dictionary at all."""
    t0 = time.perf_counter()
    counts = zipf(len(NEW_WORDS), 1.1).counts(n, gen)
    truth = dict(zip(NEW_WORDS, counts.tolist(), strict=True))
    agg = SfpAggregate.simulate(SFP_PARAMS, truth, gen)
    found = agg.discover(top=20)
    words = found.words
    est = words.with_truth([truth.get(w.rstrip(SFP_PARAMS.pad), 0) for w in words.items])
    top = sorted(NEW_WORDS, key=lambda w: -truth[w])[:10]
    return {"estimates": {"new_words": est}, "n": n, "stats": found.stats, "epsilon": SFP_PARAMS.privacy_cost.epsilon,
            "recall_top10": sum(w in set(words.items) for w in top) / 10,
            "false_words": sum(truth.get(w, 0) == 0 for w in words.items), "seconds": time.perf_counter() - t0}


def at_scale(n: int, gen: np.random.Generator, epsilon: float, labels: tuple[str, ...]) -> dict[str, Any]:
    """The app-category question at ``n`` users, drawn exactly at the aggregate level."""
    t0 = time.perf_counter()
    params = GRRParams.from_labels(epsilon, labels)
    truth = zipf(len(labels), 1.1).counts(n, exact=True)
    agg = cast(GRRAggregate, simulate(params, truth, method="aggregate", rng=gen))  # GRR params: a GRR aggregate
    est = agg.estimate().with_truth(truth.tolist())
    return {"estimates": {"app_category_at_scale": est}, "n": n, "seconds": time.perf_counter() - t0}


def regression(n_max: int, gen: np.random.Generator, quick: bool) -> dict[str, Any]:
    """Linear regression from users' noisy sufficient statistics (local DP) against central SSP
    and AdaSSP at the same (ε, δ) (:mod:`ldp.compare.regression`), error vs n."""
    from ldp.compare.regression import RegressionSetup, multiplier_rows, regression_rows

    t0 = time.perf_counter()
    setup = RegressionSetup()
    ns = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= n_max]
    rows = regression_rows(ns=ns, trials=1, rng=gen, setup=setup)
    mse = {(r["method"], r["n"]): r["mse"] for r in rows}
    methods = (("local", "local DP"), ("ssp", "central SSP"), ("adassp", "central AdaSSP"), ("ols", "no privacy"))
    columns = [Column("users n", ",")] + [Column(label, ".2e") for _, label in methods]
    table = (render(columns, ([n] + [mse[m, n] for m, _ in methods] for n in ns), indent="    ")
             + "\n    (mean squared error of the coefficients, ‖θ̂ − θ‖², one data set per n)")
    mult = {r["central"]: r for r in multiplier_rows(rows, setup) if r["n_central"] == ns[0]}
    takeaway = (f"To match central AdaSSP at n = {ns[0]:,}, local DP needs about "
                f"{mult['adassp']['theory_n_local']:,.0f} users ({mult['adassp']['theory_multiplier']:,.0f}×; "
                "first-order theory); `ldp compare` measures it.")
    curves = {label: [(n, mse[m, n]) for n in ns] for m, label in methods}
    return {"epsilon": setup.epsilon, "delta": setup.delta, "rows": rows, "table": table, "takeaway": takeaway,
            "curves": curves, "seconds": time.perf_counter() - t0}
