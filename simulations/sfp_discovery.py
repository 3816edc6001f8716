#!/usr/bin/env python3
"""Apple's Sequence Fragment Puzzle (SFP): how well the server discovers the popular words, against pure-ldp's rule.

    python simulations/sfp_discovery.py                  # 10 repetitions per setting (about 10 minutes)
    python simulations/sfp_discovery.py --quick          # 1 repetition per setting (about a minute)
    python simulations/sfp_discovery.py --ns 1e6 --budgets 2:2 --reps 20 --no-plots

The population is ``n`` users over a word list (``--words``):

* ``english`` (default): wordfreq's ``--vocab`` (default 5,000) most frequent English words made of
  the letters a–z, with their frequencies, if the ``wordfreq`` package is installed (``pip install
  wordfreq``); otherwise, with a note on stderr, the synthetic ``english-like`` list;
* ``wordfreq``: the same, and an error (exit 2) when wordfreq is missing;
* ``english-like``: random a–z words whose length grows with the rank (about ``2 + 1.3·log10(rank)``
  letters) with Zipf–Mandelbrot weights ``1/(rank + 1)^s`` (``--zipf``): the top word holds about
  6% and the 10th about 1% of the users, as in English;
* ``random``: ``--vocab`` (default 1,000) random words, lengths uniform in ``--min-len``..``--max-len``
  (default 3..12), Zipf weights ``1/rank^s``.

One multinomial draw of the n users per n, from ``--seed``. Words longer than L = 10 are truncated
by the client (``SfpParams(truncate=True)``). All the truth below is about the words **as the
client encodes them**, after truncation: two words that truncate to the same string are one word
with the sum of their counts.

Settings: every n in ``--ns`` (default 10^5, 10^6, 10^7) times every budget ``ε_word:ε_fragment``
in ``--budgets`` (default 2:2, 2:6, 4:4, 4:8; the cost per user is the sum). The rest are the
default ``SfpParams``: alphabet a–z, pad ``_``, L = 10, r = 2, an 8-bit word hash, CMS for the word
and for the fragments (``--word-sketch``, ``--fragment-sketch`` switch either to HCMS), with the
library's default k and m (today k = 64 for both, m = 1024 for the word and 512 for the
fragments; the CSVs record them). Each setting runs ``R`` repetitions (``--reps``). Repetition
``rep`` draws a **new hash family** (``hash_seed = 7919·rep``: the two sketches and the word hash
``h``), the same for every setting in that repetition, and its own client randomness. Per
repetition the script

1. draws the server's aggregate with ``SfpAggregate.simulate`` (exact: a multinomial split of each
   word's users over the L/r positions, then the word sketch and each position's fragment sketch
   drawn at the aggregate level; its cost does not grow with n);
2. runs ``discover(top=--top, alpha=--alpha, false_records=--false-records)``, timed (the defaults
   are discover's: no cap, 0.05 expected false words, 100 expected absent records per position,
   peeled tests; see ``docs/protocols/sfp.md``);
3. runs pure-ldp's rule on the same aggregate (``pure_*`` columns; ``--no-pure`` skips it), as
   ``SFPServer.find_heavy_hitters`` of pure-ldp 1.2.0 (``pure_ldp/heavy_hitters/apple_sfp/
   sfp_server.py``) reconstructs: per position the ``--pure-top`` (default 10, pure-ldp's default
   ``k``) records with the largest estimates, no test; the cartesian product of the fragments of
   every hash with a kept record at every position; and **every** candidate returned with its
   word-sketch estimate, with no padding check, hash check or test (the sketches are this
   library's, so both rules see the same data and budget; pure-ldp's own sketches differ);
4. compares the discovered words with the truth:

   * ``recall_top10``, ``recall_top50``, ``recall_top100``: the share of the true 10 (50, 100) most
     frequent encoded words among the discovered ones;
   * ``precision``, ``false_found``: the share of discovered words that some user holds, and the
     number that nobody holds (a chimera or a word nobody holds that passed every test);
   * ``rmse``, ``rmse_theory``, ``rmse_over_se``, ``ci_coverage``: for the discovered true words,
     the RMSE of the word-sketch count minus the true count; the same from the exact variance over
     hash families (``sketch_variance`` with the true f, n and ``F2(d) = Σ_{d'≠d} f(d')²``;
     apple-and-theory.md §1.4, §2.3), which peeling lowers; the RMSE over the RMS of the reported
     standard errors (≈ 1 when they are calibrated); and the share of these words whose 95% CI
     holds the true count;
   * the reconstruction's own counts (``SfpDiscovery.stats``): records kept per position,
     hashes complete at every position, candidates formed, pruned (padding, hash), scored.

What to expect. A fragment at one position is seen by about n/5 users, so a word of frequency p
has a fragment count of about p·n/5. It is kept if that count is above the detection threshold,
about 3.3 standard errors at the default level (100 expected absent records among 2^8·27^2 =
186,624), at every position. The fragment sketch's variance has a privacy term ∝ n, and a
hash-collision term ``F2/(k(m−1))`` ∝ n² for a fixed distribution; peeling removes the detected
records' part of it. Padding records ``(h, "__")`` hold every short word with hash h, so short
words (most of the English top 100) only need their first fragments kept.

Outputs in ``--out``:

* ``results.csv``: one row per setting and repetition;
* ``summary.csv``: per setting, the mean of every metric over the repetitions and its standard error
  (``_se``). ``rmse``, ``rmse_theory``, ``rmse_over_se`` and ``ci_coverage`` are pooled over
  every discovered true word of every repetition instead;
* ``recall_vs_n.png`` (top-10 and top-50 recall per budget, and pure-ldp's top-10 recall) and
  ``precision_vs_n.png``, unless ``--no-plots``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.simulation.collect import comma_list, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "sfp_discovery"
HASH_SEED_STEP = 7919  # hash_seed of repetition r; > k + k' + 1, so two repetitions never share a hash function
QUICK_REPS = 1
DEFAULT_REPS = 10
ENGLISH_VOCAB = 5000
RANDOM_VOCAB = 1000
RECALL_AT = (10, 50, 100)
SKETCHES = ("cms", "hcms")
WORD_LISTS = ("english", "wordfreq", "english-like", "random")
PURE_LDP_TOP = 10  # pure-ldp's SFPServer.find_heavy_hitters(k=None, threshold=None) keeps k = 10 per position

SETTING_COLUMNS = ("words", "word_sketch", "word_k", "word_m", "fragment_sketch", "fragment_k", "fragment_m", "top",
                   "alpha", "false_records", "pure_top", "n", "eps_word", "eps_fragment", "epsilon")
RUN_METRICS = (
    "recall_top10", "recall_top50", "recall_top100", "precision", "discovered", "true_found", "false_found",
    "pure_recall_top10", "pure_recall_top50", "pure_recall_top100", "pure_found", "pure_true_found",
    "pure_false_found",
    "rmse", "rmse_theory", "rmse_over_se", "ci_coverage", "kept_per_position", "hashes_complete", "formed",
    "pruned_padding", "pruned_hash", "scored", "seconds_discover", "seconds_simulate",
)
RESULT_COLUMNS = (*SETTING_COLUMNS, "rep", "hash_seed", "held", "truncated", "failed", *RUN_METRICS)
POOLED = ("rmse", "rmse_theory", "rmse_over_se", "ci_coverage")
SUMMARY_COLUMNS = (*SETTING_COLUMNS, "reps", "held", "truncated", "failed",
                   *(c for m in RUN_METRICS for c in ((m,) if m in POOLED else (m, f"{m}_se"))))


# -- arguments ---------------------------------------------------------------------------------------
def _budgets(text: str) -> list[tuple[float, float]]:
    out = []
    for t in text.split(","):
        if not t.strip():
            continue
        word, sep, frag = t.partition(":")
        if not sep:
            raise argparse.ArgumentTypeError(f"a budget is ε_word:ε_fragment, got {t!r}")
        out.append((float(word), float(frag)))
    return out


def _top(text: str) -> int | None:
    return None if text.strip().lower() == "none" else int(text)


def _none_or_float(text: str) -> float | None:
    return None if text.strip().lower() == "none" else float(text)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--reps", type=int, default=None,
                    help=f"repetitions per setting (default {DEFAULT_REPS}; {QUICK_REPS} with --quick)")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_REPS} repetition per setting")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--seed", type=int, default=0, help="master seed (vocabulary, populations, every repetition)")
    ap.add_argument("--ns", type=comma_list(int), default=[10**5, 10**6, 10**7], help="comma list of user counts n")
    ap.add_argument("--budgets", type=_budgets, default=[(2.0, 2.0), (2.0, 6.0), (4.0, 4.0), (4.0, 8.0)],
                    help="comma list of ε_word:ε_fragment (default 2:2,2:6,4:4,4:8)")
    ap.add_argument("--words", choices=WORD_LISTS, default="english",
                    help="word list: english (wordfreq's if installed, else english-like), wordfreq (required), "
                         "english-like (synthetic), random (uniform lengths, Zipf; default english)")
    ap.add_argument("--vocab", type=int, default=None,
                    help=f"vocabulary size (default {ENGLISH_VOCAB} for the English lists, {RANDOM_VOCAB} for random)")
    ap.add_argument("--zipf", type=float, default=1.0,
                    help="random and english-like lists: Zipf exponent s, frequency ∝ 1/rank^s (default 1)")
    ap.add_argument("--min-len", type=int, default=3, help="random list: shortest word (default 3)")
    ap.add_argument("--max-len", type=int, default=12,
                    help="random list: longest word before truncation to L=10 (default 12)")
    ap.add_argument("--word-sketch", choices=SKETCHES, default="cms", help="sketch of the whole word (default cms)")
    ap.add_argument("--fragment-sketch", choices=SKETCHES, default="cms", help="sketch of the fragments (default cms)")
    ap.add_argument("--top", type=_top, default=None,
                    help="records kept per position by discover() (default none: every detected record)")
    ap.add_argument("--alpha", type=float, default=0.05,
                    help="discover()'s expected number of false words (default 0.05)")
    ap.add_argument("--false-records", type=_none_or_float, default=None,
                    help="discover()'s expected absent records kept per position (default none: discover's, "
                         "100 with the 8-bit hash)")
    ap.add_argument("--pure-top", type=int, default=PURE_LDP_TOP,
                    help=f"the pure-ldp baseline's records kept per position (default {PURE_LDP_TOP}, pure-ldp's)")
    ap.add_argument("--no-pure", action="store_true", help="skip the pure-ldp baseline (its columns are empty)")
    ap.add_argument("--max-candidates", type=int, default=1_000_000,
                    help="discover()'s cap on candidates formed; a repetition over it is counted as failed")
    args = ap.parse_args(argv)
    if args.reps is None:
        args.reps = QUICK_REPS if args.quick else DEFAULT_REPS
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    if not args.ns or min(args.ns) < 1:
        ap.error("--ns needs one or more user counts >= 1")
    if not args.budgets:
        ap.error("--budgets needs at least one ε_word:ε_fragment")
    if args.vocab is None:
        args.vocab = RANDOM_VOCAB if args.words == "random" else ENGLISH_VOCAB
    if args.vocab < 1 or not 1 <= args.min_len <= args.max_len:
        ap.error("--vocab must be >= 1 and 1 <= --min-len <= --max-len")
    if args.top is not None and args.top < 1:
        ap.error("--top must be >= 1 or 'none'")
    if not args.alpha > 0:
        ap.error("--alpha (expected false words) must be > 0")
    if args.false_records is not None and not args.false_records > 0:
        ap.error("--false-records must be > 0 or 'none'")
    if args.pure_top < 1:
        ap.error("--pure-top must be >= 1")
    return args


# -- population ---------------------------------------------------------------------------------------
def random_words(count: int, rng: Any, min_len: int = 3, max_len: int = 12) -> list[str]:
    """``count`` distinct random lowercase words, lengths uniform in ``[min_len, max_len]``."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    if 26**max_len < count:  # fewer distinct words than asked for (tiny lengths): fail instead of looping
        raise ValueError(f"cannot draw {count} distinct words of length <= {max_len}")
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        length = int(rng.integers(min_len, max_len + 1))
        word = "".join(letters[i] for i in rng.integers(0, 26, length))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def make_vocabulary(vocab: int, min_len: int, max_len: int, seed: int) -> list[str]:
    """The seeded random vocabulary, in Zipf rank order (the first word is the most popular)."""
    import numpy as np

    return random_words(vocab, np.random.default_rng([seed, 0x5F9]), min_len, max_len)


class MissingDataPackage(RuntimeError):
    """wordfreq is not installed."""


def wordfreq_words(vocab: int) -> tuple[list[str], list[float]]:
    """wordfreq's ``vocab`` most frequent English words made of the letters a–z only (words with an
    apostrophe, a digit or an accent are left out: SFP's default alphabet cannot spell them), in
    rank order, with their frequencies (wordfreq's, rounded as it ships them)."""
    try:
        import wordfreq
    except ImportError as exc:
        raise MissingDataPackage("the English word frequencies come from the 'wordfreq' package: pip install "
                                 "wordfreq (or run with --words english-like, a synthetic English-like list)") from exc
    words = [w for w in wordfreq.top_n_list("en", 2 * vocab + 100) if w.isascii() and w.isalpha() and w.islower()]
    if len(words) < vocab:
        raise ValueError(f"wordfreq has only {len(words)} a–z English words in its top list, --vocab is {vocab}")
    words = words[:vocab]
    return words, [wordfreq.word_frequency(w, "en") for w in words]


def english_like_words(vocab: int, zipf: float, seed: int) -> tuple[list[str], list[float]]:
    """A synthetic English-like list: Zipf–Mandelbrot weights ``1/(rank + 1)^s`` (with s = 1 the top
    word holds about 6% and the 10th about 1% of 5,000 words' users, as in English) and random
    a–z words whose length grows with the rank, about ``2 + 1.3·log10(rank)`` letters on average
    (2–3 for the top ten, 6–7 near rank 5,000; sd 1, at least 1)."""
    import numpy as np

    rng = np.random.default_rng([seed, 0xE17])
    letters = "abcdefghijklmnopqrstuvwxyz"
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < vocab:
        mean = 2 + 1.3 * math.log10(len(words) + 1)
        length = max(1, round(rng.normal(mean, 1.0)))
        word = "".join(letters[i] for i in rng.integers(0, 26, length))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words, (1.0 / np.arange(2, vocab + 2, dtype=np.float64) ** zipf).tolist()


def word_list(args: argparse.Namespace) -> tuple[list[str], list[float] | None, str]:
    """``(words, weights, description)`` of ``--words`` (weights ``None``: Zipf ``--zipf`` by rank).
    ``english`` falls back to ``english-like`` with a note on stderr when wordfreq is missing."""
    if args.words in ("english", "wordfreq"):
        try:
            words, weights = wordfreq_words(args.vocab)
            return words, weights, f"wordfreq's {args.vocab} most frequent a–z English words"
        except MissingDataPackage as exc:
            if args.words == "wordfreq":
                raise
            print(f"note: {exc}; using the synthetic English-like list", file=sys.stderr)
    if args.words in ("english", "english-like"):
        words, weights = english_like_words(args.vocab, args.zipf, args.seed)
        return words, weights, (f"{args.vocab} synthetic English-like words (Zipf–Mandelbrot 1/(rank+1)^"
                                f"{args.zipf:g}, length growing with rank)")
    words = make_vocabulary(args.vocab, args.min_len, args.max_len, args.seed)
    return words, None, (f"{args.vocab} random words of {args.min_len}-{args.max_len} letters, Zipf "
                         f"s={args.zipf:g}")


@dataclass(frozen=True)
class Population:
    """``n`` users over the vocabulary: ``counts`` of the raw words (for the simulation) and the
    truth as the client encodes it (``encoded``: encoded word -> count, largest first)."""

    n: int
    words: list[str]
    counts: Any  # np.ndarray of int64, aligned with ``words``
    encoded: dict[str, int]
    truncated: int  # vocabulary words longer than L

    @property
    def f2(self) -> float:
        """``Σ f²`` over the encoded words (the hash-collision term's ``F2`` is this minus ``f(d)²``)."""
        return float(sum(c * c for c in self.encoded.values()))

    def top(self, k: int) -> list[str]:
        return list(self.encoded)[:k]


def make_population(n: int, words: list[str], zipf: float, seed: int, params: Any,
                    weights: Sequence[float] | None = None) -> Population:
    """A multinomial draw of ``n`` users over ``words`` with probabilities ∝ ``weights`` (``None``:
    Zipf, ``1/rank^zipf``), and its encoded truth."""
    import numpy as np

    rng = np.random.default_rng([seed, 0xC0DE, n])
    prob = (1.0 / np.arange(1, len(words) + 1, dtype=np.float64) ** zipf if weights is None
            else np.asarray(weights, dtype=np.float64))
    counts = rng.multinomial(n, prob / prob.sum()).astype(np.int64)
    merged: dict[str, int] = {}
    truncated = 0
    for w, c in zip(words, counts.tolist(), strict=True):
        p = params.prepare_word(w)
        truncated += p.truncated
        if c:
            merged[p.word] = merged.get(p.word, 0) + c
    encoded = dict(sorted(merged.items(), key=lambda kv: -kv[1]))  # stable: ties keep the Zipf rank order
    return Population(n, words, counts, encoded, truncated)


# -- simulation ---------------------------------------------------------------------------------------
def make_params(eps_word: float, eps_fragment: float, word_sketch: str = "cms", fragment_sketch: str = "cms",
                hash_seed: int = 0) -> Any:
    from ldp.encoders.sfp import SfpParams

    return SfpParams(eps_word, eps_fragment, word_sketch=word_sketch, fragment_sketch=fragment_sketch,
                     hash_seed=hash_seed, truncate=True)


@dataclass
class RepResult:
    """One repetition: its CSV row, and the errors, squared standard errors and CI hits of the
    discovered true words (pooled over repetitions in the summary)."""

    row: dict[str, Any]
    errors: list[float]
    se2: list[float]
    var_theory: list[float]
    covered: list[bool]


def run_rep(pop: Population, eps_word: float, eps_fragment: float, rep: int, args: argparse.Namespace) -> RepResult:
    """Simulate one aggregate of ``pop`` with repetition ``rep``'s hash family and discover."""
    import numpy as np

    from ldp.decoders.sfp import CandidateLimitError, SfpAggregate
    from ldp.decoders.sketch import sketch_variance

    hash_seed = HASH_SEED_STEP * rep
    params = make_params(eps_word, eps_fragment, args.word_sketch, args.fragment_sketch, hash_seed)
    gen = np.random.default_rng([args.seed, pop.n, round(eps_word * 1000), round(eps_fragment * 1000),
                                 SKETCHES.index(args.word_sketch), SKETCHES.index(args.fragment_sketch), rep])
    row: dict[str, Any] = {
        "words": args.words, "false_records": "default" if args.false_records is None else args.false_records,
        "pure_top": args.pure_top, "word_sketch": args.word_sketch, "word_k": params.word_num_hashes,
        "word_m": params.word_width,
        "fragment_sketch": args.fragment_sketch, "fragment_k": params.fragment_num_hashes,
        "fragment_m": params.fragment_width,
        "top": "none" if args.top is None else args.top, "alpha": args.alpha, "n": pop.n,
        "eps_word": eps_word, "eps_fragment": eps_fragment, "epsilon": params.privacy_cost.epsilon,
        "rep": rep, "hash_seed": hash_seed, "held": len(pop.encoded), "truncated": pop.truncated,
    }
    start = time.perf_counter()
    agg = SfpAggregate.simulate(params, pop.counts, gen, values=pop.words)
    row["seconds_simulate"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        found = agg.discover(top=args.top, alpha=args.alpha, max_candidates=args.max_candidates,
                             false_records=args.false_records)
    except CandidateLimitError:
        row["seconds_discover"] = time.perf_counter() - start
        row["failed"] = 1
        row.update({m: math.nan for m in RUN_METRICS if m not in row})
        return RepResult(row, [], [], [], [])
    row["seconds_discover"] = time.perf_counter() - start
    row["failed"] = 0

    words = found.words
    discovered = set(words.items)
    for k in RECALL_AT:
        top = pop.top(k)
        row[f"recall_top{k}"] = sum(w in discovered for w in top) / len(top)
    true_idx = [i for i, w in enumerate(words.items) if w in pop.encoded]
    truth = np.array([pop.encoded[words.items[i]] for i in true_idx], dtype=np.float64)
    errors = words.count[true_idx] - truth
    se = words.std_error[true_idx]
    covered = (words.ci_low[true_idx] <= truth) & (truth <= words.ci_high[true_idx])
    var_theory = sketch_variance(params.word_params, truth, pop.n, pop.f2 - truth**2)
    row.update({
        "discovered": len(words.items), "true_found": len(true_idx), "false_found": len(words.items) - len(true_idx),
        "precision": len(true_idx) / len(words.items) if words.items else math.nan,
        "rmse": math.sqrt(float((errors**2).mean())) if true_idx else math.nan,
        "rmse_theory": math.sqrt(float(var_theory.mean())) if true_idx else math.nan,
        "ci_coverage": float(covered.mean()) if true_idx else math.nan,
        "rmse_over_se": math.sqrt(float((errors**2).mean() / (se**2).mean())) if true_idx else math.nan,
        "kept_per_position": float(np.mean([len(f["hash"]) for f in found.fragments])),
    })
    for key in ("hashes_complete", "formed", "pruned_padding", "pruned_hash", "scored"):
        row[key] = found.stats[key]
    row.update(_NO_PURE if args.no_pure else pure_ldp_rule(agg, pop, args.pure_top))
    return RepResult(row, errors.tolist(), (se**2).tolist(), var_theory.tolist(), covered.tolist())


_NO_PURE = {m: math.nan for m in RUN_METRICS if m.startswith("pure_")}


def pure_ldp_rule(agg: Any, pop: Population, top: int) -> dict[str, Any]:
    """pure-ldp's SFP reconstruction (``SFPServer.find_heavy_hitters(k=top)``, pure-ldp 1.2.0,
    ``pure_ldp/heavy_hitters/apple_sfp/sfp_server.py``), on the same aggregate: per position the
    ``top`` fragment records with the largest estimates, no test; for every hash with a kept record
    at every position, the cartesian product of its fragments; and **every** candidate returned
    with its word-sketch estimate (no padding or hash check, no test). ``discover(top, alpha=None)``
    keeps and glues the same way; what it prunes (bad padding, hash mismatch) is never a true word,
    so pure-ldp's rule reports ``formed`` candidates, of which the true ones are those ``discover``
    scored. Metrics prefixed ``pure_``."""
    from ldp.decoders.sfp import CandidateLimitError

    try:
        found = agg.discover(top=top, alpha=None)
    except CandidateLimitError:
        return dict(_NO_PURE)
    true = set(found.words.items) & set(pop.encoded)
    out: dict[str, Any] = {"pure_found": found.stats["formed"], "pure_true_found": len(true),
                           "pure_false_found": found.stats["formed"] - len(true)}
    for k in RECALL_AT:
        best = pop.top(k)
        out[f"pure_recall_top{k}"] = sum(w in true for w in best) / len(best)
    return out


# -- summary and output ----------------------------------------------------------------------------------
def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean over the finite values (NaN when undefined)."""
    xs = [float(v) for v in values if not math.isnan(float(v))]
    if not xs:
        return math.nan, math.nan
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, math.nan
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs))


def summarize(results: list[RepResult]) -> dict[str, Any]:
    """One summary row from the repetitions of one setting."""
    rows = [r.row for r in results]
    s: dict[str, Any] = {c: rows[0][c] for c in SETTING_COLUMNS}
    s.update(reps=len(rows), held=rows[0]["held"], truncated=rows[0]["truncated"],
             failed=sum(r["failed"] for r in rows))
    for m in RUN_METRICS:
        if m not in POOLED:
            s[m], s[f"{m}_se"] = mean_se([r[m] for r in rows])
    errors = [e for r in results for e in r.errors]
    se2 = [v for r in results for v in r.se2]
    var_theory = [v for r in results for v in r.var_theory]
    covered = [c for r in results for c in r.covered]
    mse = sum(e * e for e in errors) / len(errors) if errors else math.nan
    s["rmse"] = math.sqrt(mse)
    s["rmse_theory"] = math.sqrt(sum(var_theory) / len(var_theory)) if var_theory else math.nan
    s["ci_coverage"] = sum(covered) / len(covered) if covered else math.nan
    s["rmse_over_se"] = math.sqrt(mse / (sum(se2) / len(se2))) if se2 else math.nan
    return s


def format_table(summary: list[dict[str, Any]]) -> str:
    head = (f"{'n':>9} {'ε_w':>4} {'ε_f':>4}  {'rec@10':>6} {'rec@50':>6} {'rec@100':>7} {'found':>5} {'false':>5}  "
            f"{'pure-ldp: rec@10':>16} {'rec@50':>6} {'rec@100':>7} {'found':>5} {'false':>5}  "
            f"{'RMSE/SE':>7} {'cover':>5}  {'kept':>6} {'formed':>6} {'pad':>5} {'hash':>5}  {'sec':>5}")
    lines = [head, "-" * len(head)]
    for s in summary:
        lines.append(
            f"{s['n']:9d} {s['eps_word']:4g} {s['eps_fragment']:4g}  {s['recall_top10']:6.3f} "
            f"{s['recall_top50']:6.3f} {s['recall_top100']:7.3f} {s['discovered']:5.1f} {s['false_found']:5.2f}  "
            f"{s['pure_recall_top10']:16.3f} {s['pure_recall_top50']:6.3f} {s['pure_recall_top100']:7.3f} "
            f"{s['pure_found']:5.1f} {s['pure_false_found']:5.2f}  "
            f"{s['rmse_over_se']:7.2f} {s['ci_coverage']:5.2f}  "
            f"{s['kept_per_position']:6.1f} {s['formed']:6.1f} {s['pruned_padding']:5.1f} {s['pruned_hash']:5.1f}  "
            f"{s['seconds_discover']:5.2f}")
    return "\n".join(lines)


def _budget_label(s: dict[str, Any]) -> str:
    return f"ε_word={s['eps_word']:g}, ε_frag={s['eps_fragment']:g}"


def _errorbar(ax: Any, xs: list[float], ys: list[float], ses: list[float], **kw: Any) -> None:
    yerr = [0.0 if math.isnan(e) else e for e in ses]
    ax.errorbar(xs, ys, yerr=yerr, capsize=3, **kw)


def plot_vs_n(path: Path, summary: list[dict[str, Any]], metrics: Sequence[tuple[str, str, str]], ylabel: str,
              title: str) -> None:
    """One line per budget and metric (``(column, line style, label)``) against n, ± 1 s.e. The
    budgets are dodged slightly along n, so that equal values (precision 1) stay visible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.8))
    budgets = list(dict.fromkeys((s["eps_word"], s["eps_fragment"]) for s in summary))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, budget in enumerate(budgets):
        rs = sorted((s for s in summary if (s["eps_word"], s["eps_fragment"]) == budget), key=lambda s: s["n"])
        dodge = 10 ** (0.012 * (i - (len(budgets) - 1) / 2))
        for column, style, label in metrics:
            _errorbar(ax, [s["n"] * dodge for s in rs], [s[column] for s in rs], [s[f"{column}_se"] for s in rs],
                      fmt=style, color=colors[i % len(colors)], mfc="none", label=f"{_budget_label(rs[0])}: {label}")
    ax.set_xscale("log")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("number of users n")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main ---------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots):
        return 2
    try:  # every setting's parameters, with the last repetition's hash seed, before any work
        for eps_word, eps_fragment in args.budgets:
            make_params(eps_word, eps_fragment, args.word_sketch, args.fragment_sketch,
                        HASH_SEED_STEP * (args.reps - 1))
        words, weights, described = word_list(args)
    except (ValueError, MissingDataPackage) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    eps_word, eps_fragment = args.budgets[0]
    encoder = make_params(eps_word, eps_fragment, args.word_sketch, args.fragment_sketch)  # truncation only
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    shares: list[str] = []
    reps = len(args.ns) * len(args.budgets) * args.reps
    with progress(reps, "sfp_discovery", False if args.quiet else None, unit="rep") as bar:
        for n in args.ns:
            pop = make_population(n, words, args.zipf, args.seed, encoder, weights)
            counts = list(pop.encoded.values())
            shares.append(f"n={n}: top 10 hold {sum(counts[:10]) / n:.1%}, the 10th "
                          f"{counts[min(9, len(counts) - 1)]}, the 50th {counts[min(49, len(counts) - 1)]} users")
            for eps_word, eps_fragment in args.budgets:
                results = []
                for rep in range(args.reps):
                    results.append(run_rep(pop, eps_word, eps_fragment, rep, args))
                    bar.update(1)
                rows.extend(r.row for r in results)
                summary.append(summarize(results))
                note = (f"  n={n} ε_word={eps_word:g} ε_fragment={eps_fragment:g}: "
                        f"{sum(r.row['seconds_discover'] + r.row['seconds_simulate'] for r in results):.1f} s")
                (bar.write if bar else print)(note, file=sys.stderr)  # above the bar, or a plain line
    write_csv(args.out / "results.csv", RESULT_COLUMNS, rows)
    write_csv(args.out / "summary.csv", SUMMARY_COLUMNS, summary)

    common = (f"{args.words} {args.vocab} words, {args.word_sketch.upper()}/"
              f"{args.fragment_sketch.upper()}, top={summary[0]['top']}, {args.reps} reps")
    if not args.no_plots:
        plot_vs_n(args.out / "recall_vs_n.png", summary,
                  [("recall_top10", "-o", "top 10"), ("recall_top50", "--s", "top 50"),
                   ("pure_recall_top10", ":^", "pure-ldp's rule, top 10")],
                  "recall (share of the true top words discovered)", f"SFP discovery: recall vs n ({common})")
        plot_vs_n(args.out / "precision_vs_n.png", summary, [("precision", "-o", "precision")],
                  "precision (share of discovered words that are real)", f"SFP discovery: precision vs n ({common})")

    elapsed = time.perf_counter() - start
    print(f"vocabulary: {described}, {pop.truncated} truncated to L=10\n  " + "\n  ".join(shares))
    s0 = summary[0]
    print(f"SFP: {args.word_sketch.upper()} word sketch (k={s0['word_k']}, m={s0['word_m']}), "
          f"{args.fragment_sketch.upper()} fragment sketches (k={s0['fragment_k']}, m={s0['fragment_m']}), "
          f"8-bit hash; discover(top={s0['top']}, alpha={args.alpha:g}, false_records={s0['false_records']}); "
          f"{args.reps} repetitions per setting, new hash family each; pure-ldp's rule: top {args.pure_top} "
          "records per position, every glued candidate reported")
    print("rec@K: share of the true top K words discovered; prec: share of discovered words that are real; "
          "found/false: words discovered / of them not real; pure-ldp: the same for "
          "pure-ldp's rule;\nRMSE/SE, cover: word-sketch count "
          "error of the discovered real words over the reported SE, 95% CI coverage "
          "(pooled);\nkept: records kept per position; formed, pad, hash: candidates formed and pruned; "
          "sec: seconds per reconstruction\n")
    print(format_table(summary))
    failed = sum(r["failed"] for r in rows)
    if failed:
        print(f"\n{failed} repetition(s) hit max_candidates={args.max_candidates} and are left out of the means")
    print(f"\n{len(summary)} settings x {args.reps} reps: {elapsed:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
