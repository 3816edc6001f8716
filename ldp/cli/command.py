"""The ``ldp`` command: ``demo``, ``plan``, ``compare``, ``spec``, ``aggregate``, ``merge``, ``decode``,
``privacy``, ``simulate``, ``rappor-decode``, ``sfp-discover``, ``pem-discover``, ``ngrams-discover``,
``associate``, ``serve``, ``watch``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from ldp import __version__
from ldp.cli.counts import (
    plan_counts,
    render_count_plans,
    render_count_simulation,
    simulate_attack_command,
    simulate_counts,
)
from ldp.cli.log import add_logging_arguments, cli_logging
from ldp.cli.multi import is_multi_command, plan_multi_command, render_multi_simulation, simulate_multi_command
from ldp.cli.numeric import (
    add_numeric_options,
    is_mean_command,
    plan_means,
    render_mean_plans,
    render_mean_simulation,
    simulate_means,
)
from ldp.cli.pem import add_pem_discover_arguments, pem_discover_command
from ldp.cli.protocols import (
    add_discovery_inputs,
    add_params_options,
    print_discovery,
    privacy_summary,
    rappor_decode_files,
    sfp_discover_files,
)
from ldp.cli.rappor_ngrams import add_ngrams_arguments, ngrams_command
from ldp.cli.shuffled import add_shuffle_options, plan_output, privacy_output
from ldp.cli.support import (
    BAD_INPUT,
    PROTOCOLS_HELP,
    _debug_traceback,
    count,
    error_text,
    finite_float,
    input_file,
    non_negative_int,
    number,
    open_unit,
    positive_float,
    positive_int,
    report_error,
)
from ldp.extras import DISTRIBUTION, install_hint


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ldp", description="Telemetry under local differential privacy.")
    parser.add_argument("--version", action="version", version=f"{DISTRIBUTION} {__version__}")
    add_logging_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="a simulated collection end to end (measured: about 11 s on 2 idle cores; "
                                       "--quick about 4 s)",
                          description="Simulate clients encoding with their budget ledgers, the server aggregating "
                                      "and estimating, and the privacy spent.")
    demo.add_argument("--n", type=int, help="devices with budget ledgers (default 5000, or 500 with --quick)")
    demo.add_argument("--epsilon", type=finite_float, default=1.0, help="ε of the app-category metric (default 1)")
    demo.add_argument("--seed", type=non_negative_int, help="seed for a reproducible run")
    demo.add_argument("--quick", action="store_true", help="smaller collections: measured about 4 s on 2 idle cores")
    demo.add_argument("--plots", metavar="DIR", help="also write one figure per question into DIR (needs matplotlib)")
    demo.add_argument("--json", action="store_true", help="machine-readable output")

    cmp_ = sub.add_parser("compare", help="local against central DP: counting queries and linear regression",
                          description="Measures by simulation what local DP costs against central DP: the smoker "
                                      "survey of an introductory thesis on DP (randomized response against Laplace "
                                      "noise on the count), the error of every local protocol against central "
                                      "Laplace and Gaussian noise as n and ε vary, and local against central linear "
                                      "regression. Every printed table is followed by a legend of its columns.")
    from ldp.cli.compare import add_compare_arguments

    add_compare_arguments(cmp_)
    from ldp.cli.server import add_server_arguments
    from ldp.spec.cli import add_spec_arguments

    add_spec_arguments(sub)
    add_server_arguments(sub)
    from ldp.cli.serve import add_serve_arguments
    from ldp.cli.watch import add_watch_arguments

    add_serve_arguments(sub)
    add_watch_arguments(sub)
    priv = sub.add_parser("privacy", help="the privacy cost (ε, δ) of given protocol parameters",
                          description="Print ε (and δ) and the derived probabilities of a protocol's parameters, "
                                      "e.g. `ldp privacy rr --truth-prob 0.5 --yes-prob 0.5` (ε = ln 3).")
    priv.add_argument("protocol", help="protocol name (rr, grr, ...)")
    add_params_options(priv)
    priv.add_argument("--seed", type=non_negative_int,
                      help="accepted for uniformity; the privacy cost is deterministic")
    add_shuffle_options(priv)
    priv.add_argument("--json", action="store_true", help="machine-readable output")

    sim = sub.add_parser("simulate", help="accuracy of a protocol on a simulated population",
                         description="Simulate repeated collections and compare estimates with the truth and "
                                     "with the exact variance formula.")
    sim.add_argument("--protocol", required=True,
                     help=f"{PROTOCOLS_HELP}; with --epsilon alone the others' parameters are the planner's "
                          "defaults (pem: also with --param), and rappor, cms, hcms, sfp and pem are simulated on "
                          "--d candidates")
    sim.add_argument("--population",
                     help="uniform, zipf, exponential or gaussian over the domain (default zipf); for a mean: "
                          "uniform, normal or exponential on [low, high] (default uniform)")
    sim.add_argument("--s", type=finite_float, help="Zipf exponent (default 1)")
    sim.add_argument("--n", type=positive_int, default=100_000, help="number of users (default 100000)")
    sim.add_argument("--trials", type=positive_int, default=20, help="number of simulated collections (default 20)")
    sim.add_argument("--method", choices=("aggregate", "per_report"), default="aggregate",
                     help="aggregate-level exact draw (fast) or every report encoded")
    sim.add_argument("--confidence", type=open_unit, default=0.95, help="confidence level of the intervals")
    add_params_options(sim)
    add_numeric_options(sim, simulate=True)
    sim.add_argument("--attack", choices=("mga", "random"),
                     help="poison one collection (Cao, Jia and Gong 2021): fake users run the maximal gain attack or "
                          "send uniformly random reports; prints the targets' frequency gain and what the "
                          "poisoning checks say")
    sim.add_argument("--fraction", type=open_unit, default=0.05,
                     help="with --attack: β, the share of fake users among --n (default 0.05)")
    sim.add_argument("--targets", type=positive_int, default=10, help="with --attack: target items (default 10)")
    sim.add_argument("--seed", type=non_negative_int, help="seed for a reproducible run")
    sim.add_argument("--json", action="store_true", help="machine-readable output")
    pl = sub.add_parser("plan", help="standard errors, detection limit and privacy of a collection before deploying it",
                        description="Plan a collection from the decoders' exact variance formulas: give a protocol "
                                    "with --epsilon (the planner picks the rest) or its --param values, the users "
                                    "--n and the domain size --d; or --target-se to solve for n; or --recommend.")
    pl.add_argument("protocol", nargs="?",
                    help=f"{PROTOCOLS_HELP}: split or sample")
    add_params_options(pl)
    pl.add_argument("--n", type=count, help="number of users (1e6 is accepted)")
    pl.add_argument("--frequency", type=number(float, 0, 1, low_open=True),
                    help="fraction of users holding the item of interest (default 1/d)")
    pl.add_argument("--alpha", type=open_unit, default=0.05, help="significance level of detection (default 0.05)")
    pl.add_argument("--candidates", type=positive_int, help="candidates tested, for Bonferroni (default d)")
    pl.add_argument("--power", type=open_unit, default=0.5, help="detection probability at the limit (default 0.5)")
    pl.add_argument("--reports", type=positive_int, default=1, help="reports per user over the horizon (default 1)")
    pl.add_argument("--distinct-values", type=positive_int, default=1,
                    help="distinct values a user reports over the horizon (memo-mean: rounded values; default 1)")
    pl.add_argument("--target-se", type=positive_float,
                    help="solve for the n giving this standard error of a fraction (of a mean: in the values' units)")
    pl.add_argument("--recommend", action="store_true", help="rank every protocol for --epsilon and --d")
    pl.add_argument("--mean", action="store_true",
                    help="with --recommend: rank the mean mechanisms for --epsilon (bounds: --param low=, high=)")
    add_numeric_options(pl, simulate=False)
    add_shuffle_options(pl)
    pl.add_argument("--json", action="store_true", help="machine-readable output")
    rd = sub.add_parser("rappor-decode", help="decode RAPPOR counts into candidate frequencies",
                        description="Count recovery by least squares over every candidate (or a lasso's selection when "
                                    "there are many) with Benjamini-Hochberg (default), Holm or Bonferroni tests, "
                                    "from Google's params.csv/counts.csv/map.csv or from an ldp aggregate file.")
    rd.add_argument("--params", type=input_file, help="Google's params.csv (k,h,m,p,q,f), with --counts")
    rd.add_argument("--counts", type=input_file, help="Google's counts.csv (one row per cohort)")
    rd.add_argument("--aggregate", type=input_file,
                    help="an ldp RAPPOR aggregate (Aggregate.to_bytes) instead of --params/--counts")
    rd.add_argument("--map", type=input_file,
                    help="Google's map.csv of candidates (a leading UTF-8 byte-order mark is dropped)")
    rd.add_argument("--candidates", type=input_file,
                    help="a UTF-8 file of candidate strings, one per line, each exactly as written; a leading "
                         "byte-order mark is dropped and blank lines skipped; a repeated candidate or text that "
                         "is not UTF-8 is an error")
    rd.add_argument("--alpha", type=open_unit, default=0.05, help="significance level (default 0.05)")
    rd.add_argument("--correction", choices=("bh", "holm", "bonferroni"), default="bh",
                    help="multiple-testing correction: Benjamini-Hochberg (default: the expected share of false "
                         "detections among the detections is at most --alpha), Holm or Bonferroni (the chance of "
                         "any false detection is at most --alpha; Holm never detects fewer)")
    rd.add_argument("--selection", choices=("auto", "lasso", "none"), default="auto",
                    help="fit every candidate (none), select by the lasso first (lasso) or choose: every candidate "
                         "when there are at most half as many as count rows and the fit is small "
                         "(rows x candidates^2 <= 4e9), else the lasso (auto, default)")
    rd.add_argument("--confidence", type=open_unit, default=0.95,
                    help="confidence level of the intervals (default 0.95; --google-csv names its interval "
                         "columns for it)")
    shown = rd.add_mutually_exclusive_group()
    shown.add_argument("--all", action="store_true", help="print every candidate, not only the detected ones")
    shown.add_argument("--detected-only", action="store_true",
                       help="with --csv or --json: only the detected candidates (the printed table shows only "
                            "them unless --all)")
    out = rd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output (every candidate)")
    out.add_argument("--csv", action="store_true", help="CSV output (every candidate)")
    out.add_argument("--google-csv", action="store_true",
                     help="Google's results.csv (string, estimate, std_error, proportion, prop_std_error, "
                          "prop_low_95, prop_high_95): the detected candidates by decreasing estimate")
    sd = sub.add_parser("sfp-discover", help="discover popular words from Sequence Fragment Puzzle reports",
                        description="Puzzle reconstruction: score every (hash, fragment) record per position, keep "
                                    "the records detected by test, glue them by word hash and confirm candidates in "
                                    "the word sketch.")
    add_discovery_inputs(sd, "SFP", "SfpParams", "--param word_epsilon=2 --param fragment_epsilon=6")
    sd.add_argument("--top", type=positive_int, default=None,
                    help="cap: at most this many detected records per position (default: no cap)")
    sd.add_argument("--alpha", type=number(float, 0, 1, high_open=True), default=0.05,
                    help="expected number of false words reported (default 0.05; 0 turns the tests off, needs --top)")
    sd.add_argument("--false-records", type=number(float, 0, None, low_open=True), default=None,
                    help="expected absent records kept per position (default: 100 per 256 hashes)")
    sd.add_argument("--no-peel", action="store_true",
                    help="raw estimates: do not peel heavy records off the sketches before testing")
    sd.add_argument("--max-candidates", type=positive_int, default=1_000_000,
                    help="stop with an error if more candidate words would be formed (default 1000000)")
    sd.add_argument("--confidence", type=open_unit, default=0.95, help="confidence level of the intervals")
    sd.add_argument("--all", action="store_true", help="print every scored candidate, not only the discovered words")
    out = sd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--csv", action="store_true", help="CSV output")
    add_pem_discover_arguments(sub)
    add_ngrams_arguments(sub)
    from ldp.cli.associate import add_associate_arguments

    add_associate_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ldp ARGV``. Exit status: 0 done (also when stdout's reader closed the pipe early); 2 bad
    input or usage, with ``ldp <command>: error: <message>`` as the last line on stderr; 1 a bug
    (one line, or the traceback with ``LDP_DEBUG=1``); 130 interrupted."""
    args = make_parser().parse_args(argv)
    prog = f"ldp {args.command}" + (f" {args.spec_command}" if args.command == "spec" else "")
    with cli_logging(args.verbose, args.log_quiet):
        return _main(args, prog)


def _main(args: argparse.Namespace, prog: str) -> int:
    """:func:`main` once the arguments are parsed and logging is set up."""
    try:
        status = _run(args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler
        return status
    except BrokenPipeError:
        _detach_stdout()
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BAD_INPUT as exc:
        return report_error(prog, exc)
    except Exception as exc:  # a bug: one line for users, the traceback on request
        _debug_traceback(exc)
        print(f"{prog}: internal error: {type(exc).__name__}: {error_text(exc)} "
              "(run with LDP_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


def _detach_stdout() -> None:
    """After the reader closed stdout: point it at the null device so the exit-time flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (captured in-process)
        pass


def _compare_options(args: argparse.Namespace) -> None:
    """``ldp compare``: refuse option combinations before running (the run itself takes seconds)."""
    if args.plots and args.out is None:
        raise ValueError("--plots needs --out DIR")
    if args.plots:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise ImportError(f"--plots needs matplotlib: {install_hint('matplotlib', 'plot')}; or --no-plots")


def _run(args: argparse.Namespace) -> int:
    """Run one parsed command; bad input raises (see :data:`BAD_INPUT`)."""
    if args.command == "demo":
        from ldp.demo import render, run_demo, to_jsonable

        if args.plots is not None:
            import importlib.util

            if importlib.util.find_spec("matplotlib") is None:
                raise ValueError(f"--plots needs matplotlib: {install_hint('matplotlib', 'plot')}")
        n = args.n if args.n is not None else (500 if args.quick else 5000)
        result = run_demo(n=n, seed=args.seed, epsilon=args.epsilon, quick=args.quick,
                          progress=False if args.log_quiet else None)
        print(json.dumps(to_jsonable(result), indent=2) if args.json else render(result))
        if args.plots is not None:
            from ldp.demo.plots import write_plots

            paths = write_plots(result, args.plots)
            print(f"wrote {len(paths)} figures to {args.plots}", file=sys.stderr if args.json else sys.stdout)
    elif args.command == "compare":
        from ldp.compare import compare_command

        _compare_options(args)
        return compare_command(args)
    elif args.command in ("aggregate", "merge", "decode"):
        from ldp.cli.server import server_command

        return server_command(args)
    elif args.command == "serve":
        from ldp.cli.serve import serve_command

        return serve_command(args)
    elif args.command == "watch":
        from ldp.cli.watch import watch_command

        return watch_command(args)
    elif args.command == "spec":
        from ldp.spec.cli import spec_command

        return spec_command(args)
    elif args.command == "privacy":
        print(privacy_output(privacy_summary(args), args))
    elif args.command == "simulate" and args.attack is not None:
        if is_multi_command(args) or is_mean_command(args):
            raise ValueError("--attack is for the frequency protocols (the poisoning attacks promote items)")
        res = simulate_attack_command(args)
        print(json.dumps(res.to_dict(), indent=2) if args.json else "\n".join(res.lines()))
    elif args.command == "simulate" and is_multi_command(args):
        out = simulate_multi_command(args)
        print(json.dumps(out, indent=2) if args.json else render_multi_simulation(out))
    elif args.command == "simulate" and is_mean_command(args):
        out = simulate_means(args)
        print(json.dumps(out, indent=2) if args.json else render_mean_simulation(out))
    elif args.command == "simulate":
        out = simulate_counts(args)
        print(json.dumps(out, indent=2) if args.json else render_count_simulation(out))
    elif args.command == "plan" and is_multi_command(args):
        mplan = plan_multi_command(args)
        if args.shuffled is None:
            print(json.dumps(mplan.to_dict(), indent=2) if args.json else mplan.table())
        else:  # one central guarantee per mode (split, sample), under the plan's key "central"
            modes = list(mplan.epsilon_per_report.items())
            shown = plan_output([mplan.to_dict()] * len(modes), modes, mplan.table(), args)
            if args.json:
                both = json.loads(shown)
                shown = json.dumps({**both[0], "central": {m: p["central"]
                                                           for (m, _), p in zip(modes, both, strict=True)}}, indent=2)
            print(shown)
    elif args.command == "plan" and is_mean_command(args):
        plans = plan_means(args)
        print(plan_output([p.to_dict() for p in plans], [(p.protocol, p.epsilon_per_report) for p in plans],
                          "" if args.json else render_mean_plans(plans, args.recommend), args))
    elif args.command == "plan":
        plans = plan_counts(args)
        print(plan_output([p.to_dict() for p in plans], [(p.protocol, p.epsilon_per_report) for p in plans],
                          "" if args.json else render_count_plans(plans, args.recommend), args))
    elif args.command == "rappor-decode":
        from ldp.decoders.rappor_output import detected_only, google_results_csv

        est = rappor_decode_files(args)
        if args.google_csv:
            print(google_results_csv(est), end="")
        elif args.json or args.csv:
            est = detected_only(est) if args.detected_only else est
            print(est.to_json() if args.json else est.to_csv(), end="\n" if args.json else "")
        else:
            shown = est if args.all else detected_only(est)
            print(shown.table(max_rows=len(shown.items) if args.all else 100))
    elif args.command == "sfp-discover":
        agg, found = sfp_discover_files(args)
        print_discovery(args, agg, found, found.candidates if args.all else found.words, stats=found.stats)
    elif args.command == "pem-discover":
        return pem_discover_command(args)
    elif args.command == "ngrams-discover":
        return ngrams_command(args)
    elif args.command == "associate":
        from ldp.cli.associate import associate_command

        return associate_command(args)
    return 0

