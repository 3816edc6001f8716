"""``ldp decode``: an aggregate file (+ the metric's candidate dictionary) into estimates, CSV/JSON and a plot.

The metric comes from the file name (``metric.fingerprint[.wWINDOW].agg``) or from the spec
metric whose parameters the aggregate was made with. The aggregate decodes itself
(:meth:`~ldp.decoders.base.Aggregate.decode`) with the candidates of the spec's dictionary
(``spec.candidates(metric)``, or a file given instead) when its
:attr:`~ldp.decoders.base.Aggregate.candidate_dictionary` says it takes them: GRR and RR need none; RAPPOR, CMS
and HCMS estimate the candidates; SFP, PEM and rappor-ngrams discover their strings (or score given candidates).

Pooled views (``--window all``, or several window files decoded together: a range) sum the metric's releasable
windows only, each window judged by its own count (:func:`ldp.jobs.release.pool_windows`): a window under
``min_reports`` is left out and named, so no withheld window is the difference of two released views. ``latest`` is
the latest window there is, released or not: a withheld latest window is shown withheld, never replaced by an
older one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ldp.decoders.base import Aggregate
from ldp.extras import install_hint
from ldp.jobs.fold import key_name, parse_key_name
from ldp.jobs.release import Pooling, pool_windows
from ldp.jobs.store import AGG_SUFFIX, aggregate_files_in, merge_all, read_aggregate
from ldp.spec import CollectionSpec, MetricSpec

logger = logging.getLogger(__name__)

__all__ = ["Decoded", "Selection", "find_metric", "load_candidates", "decode_aggregate", "decode_file", "decode_job",
           "parse_window", "select_aggregate", "select_windows", "write_estimates", "estimates_csv", "estimates_json",
           "plot_estimates"]


def find_metric(agg: Aggregate, specs: Mapping[str, CollectionSpec], metric: str | None = None) -> MetricSpec:
    """The spec metric ``agg`` belongs to: the one named ``metric``, with the aggregate's parameters."""
    fp = agg.params.fingerprint
    found = {m.name: m for s in specs.values() for m in s.metrics.values() if m.params_fingerprint == fp}
    if metric is not None:
        if metric not in found:
            others = f"; metrics with them: {', '.join(sorted(found))}" if found else ""
            raise ValueError(f"no metric {metric!r} with the aggregate's parameters ({agg.params.protocol} {fp}) "
                             f"in the spec(s) given{others}")
        return found[metric]
    if len(found) != 1:
        what = f"several metrics have them ({', '.join(sorted(found))}): pass --metric" if found else \
            "no metric of the spec(s) given has them: pass the spec version the reports were made under"
        raise ValueError(f"the aggregate's parameters are {agg.params.protocol} {fp}; {what}")
    return next(iter(found.values()))


def load_candidates(spec: CollectionSpec | None, metric: str, path: str | os.PathLike[str] | None = None
                    ) -> list[str] | None:
    """The candidate dictionary: ``path`` if given, else the spec's; one candidate per line (UTF-8,
    blank lines skipped). ``None`` when there is none."""
    loc: Any = path if path is not None else (spec.candidates(metric) if spec is not None else None)
    if loc is None:
        return None
    if isinstance(loc, str) and "://" in loc:
        raise ValueError(f"the candidates of {metric!r} are at {loc}: download them and pass --candidates FILE")
    try:
        text = Path(loc).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the candidates of {metric!r} from {os.fspath(loc)}: {exc.strerror}") from None
    return [line for line in text.splitlines() if line.strip()]


def decode_aggregate(agg: Aggregate, candidates: Sequence[str] | None = None, *, confidence: float = 0.95,
                     alpha: float = 0.05, top: int | None = None, selection: str = "auto") -> Any:
    """Estimates (an :class:`~ldp.decoders.results.Estimates`) of any protocol's aggregate: its
    :meth:`~ldp.decoders.base.Aggregate.decode`, given ``candidates`` when it takes them."""
    logger.info("decode: %s aggregate of %d reports, %s candidate(s)", agg.params.protocol, agg.n,
                "no" if candidates is None else len(candidates))
    takes = agg.candidate_dictionary
    if takes == "required" and not candidates:
        raise ValueError(f"{agg.params.protocol} needs a candidate dictionary: put its location in the spec "
                         "(metrics.M.candidates) or pass --candidates FILE")
    given = list(candidates) if candidates and takes != "none" else None
    return agg.decode(given, confidence=confidence, alpha=alpha, top=top, selection=selection)


def parse_window(text: str) -> int | str:
    """A window as given on the command line or in ``?window=``: ``latest``, ``all`` or a window index (the
    spec's ``floor(unix time / window_seconds)``, as envelopes carry it); ``ValueError`` otherwise."""
    from ldp.spec.envelope import MAX_WINDOW

    if text in ("latest", "all"):
        return text
    if not (0 < len(text) <= 20 and text.isascii() and text.isdigit()) or int(text) > MAX_WINDOW:
        raise ValueError(f"a window is 'latest', 'all' or an index from 0 to {MAX_WINDOW}, got {text[:40]!r}")
    return int(text)


class Selection(NamedTuple):
    """What :func:`select_windows` chose: the ``metric`` the files name (or ``None``), the aggregates by window
    (``windows``: window -> the merge of the files of that window; ``None`` for a file without a window), the key
    name chosen, and ``window``: the window asked, ``"latest"`` resolved to its index (``"all"``, or ``None`` when
    none was asked)."""

    metric: str | None
    windows: dict[int | None, Aggregate]
    name: str
    window: int | str | None


def select_windows(paths: Sequence[str | os.PathLike[str]], *, window: int | str | None = None,
                   metric: str | None = None) -> Selection:
    """The aggregates to decode among ``paths`` (aggregate files, or job folders and folders of them), kept apart
    by window: with ``window``, the files of that window (an index, ``"latest"``: the latest window there is, or
    ``"all"``: every window); with ``metric``, that metric's. Files of the same name (one window from several jobs)
    are merged. ``ValueError`` naming the windows and metrics there are when the choice is missing or
    ambiguous."""
    files = [f for p in paths for f in aggregate_files_in(p)]
    if not files:
        raise ValueError("no .agg file among " + ", ".join(os.fspath(p) for p in paths))
    if len(files) == 1 and window is None:
        return Selection(None, {None: read_aggregate(files[0])}, os.fspath(files[0]), None)
    keys: dict[Path, tuple[str, str, int | None]] = {}
    for f in files:
        try:
            keys[f] = parse_key_name(f.name[:-len(AGG_SUFFIX)] if f.name.endswith(AGG_SUFFIX) else f.name)
        except ValueError:
            raise ValueError(f"{f}: not named metric.fingerprint[.wWINDOW].agg, so its metric and window are "
                             "unknown: decode it alone, without --window") from None
    if metric is not None:
        keys = {f: k for f, k in keys.items() if k[0] == metric}
        if not keys:
            raise ValueError(f"no aggregate of metric {metric!r}; the metrics there are: "
                             + ", ".join(sorted({k[0] for k in map(_key_of, files)})))
    windows = sorted({k[2] for k in keys.values() if k[2] is not None})
    listed = ", ".join(map(str, windows)) or "none (the aggregates are not per window: made without --by-window)"
    chosen: int | str | None = window
    if window is None:
        if len(set(keys.values())) > 1 and windows:
            raise ValueError(f"the aggregates given hold several windows ({listed}): pass --window W, latest or all")
    elif window != "all":
        if not windows:
            raise ValueError(f"no aggregate for window {window}: the windows there are {listed}")
        chosen = windows[-1] if window == "latest" else window
        keys = {f: k for f, k in keys.items() if k[2] == chosen}
        if not keys:
            raise ValueError(f"no aggregate for window {window}; the windows there are: {listed}")
    names = sorted({key_name((k[0], k[1], None)) for k in keys.values()})
    if len(names) > 1:
        raise ValueError("the aggregates chosen are of several metrics or parameters (" + ", ".join(names) + "): "
                         "pass --metric, or one file")
    by_window: dict[int | None, Aggregate] = {}
    for f in sorted(keys):
        one, w = read_aggregate(f), keys[f][2]
        if w in by_window:
            by_window[w].merge(one)
        else:
            by_window[w] = one
    first = next(iter(keys.values()))
    name = names[0] if window == "all" else key_name(first)
    return Selection(first[0], dict(sorted(by_window.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))),
                     name, chosen)


def select_aggregate(paths: Sequence[str | os.PathLike[str]], *, window: int | str | None = None,
                     metric: str | None = None) -> tuple[str | None, Aggregate, str]:
    """:func:`select_windows` merged into one aggregate: the metric named by the files (or ``None``), the
    aggregate and what was chosen, in words. With ``window="all"`` this is every window, withheld ones too: the
    data owner's view, no release rule applied (:func:`decode_job` pools the releasable windows only)."""
    sel = select_windows(paths, window=window, metric=metric)
    return sel.metric, merge_all(sel.windows.values()), sel.name


def _key_of(f: Path) -> tuple[str, str, int | None]:
    return parse_key_name(f.name[:-len(AGG_SUFFIX)])


class Decoded(NamedTuple):
    """One decoded aggregate: its spec and metric, its number of reports and its estimates; ``window``, the window
    decoded (an index, ``"latest"`` resolved, ``"all"``, or ``None``); ``pooling``, for a pooled view (``"all"``),
    the windows it sums and those it left out (:class:`~ldp.jobs.release.Pooling`); ``aggregate``, the (merged)
    aggregate decoded. A pooled view whose every window was left out has ``n`` 0 and no estimates or aggregate
    (``None``)."""

    spec: CollectionSpec
    metric: MetricSpec
    n: int
    estimates: Any
    window: int | str | None = None
    pooling: Pooling | None = None
    aggregate: Aggregate | None = None


def decode_job(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
               specs: Mapping[str, CollectionSpec], *, metric: str | None = None,
               candidates: str | os.PathLike[str] | None = None, window: int | str | None = None,
               apply_release: bool = True, **options: Any) -> Decoded:
    """Read an aggregate file (or choose and merge among files and job folders, :func:`select_windows`, e.g. one
    ``window``) and decode it: its spec, metric, ``n`` and estimates (all of them: the caller applies the metric's
    release thresholds, :func:`ldp.jobs.release.release`, with ``pooling``).

    ``window="all"`` (or several windows' files: a range) is a pooled view: it sums the windows of at least the
    metric's ``min_reports`` reports each and leaves the others out, named in ``pooling`` — were they pooled, the
    pooled view minus a released window's would be the withheld window. ``apply_release=False`` (``--no-release``,
    the data owner's view) pools every window. Each window is judged by its count in the files given."""
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    sel = select_windows(paths, window=window, metric=metric)
    named = sel.metric
    if metric is None and named is None and len(paths) == 1:
        name = Path(paths[0]).name
        if name.endswith(AGG_SUFFIX):
            try:
                named = parse_key_name(name[:-len(AGG_SUFFIX)])[0]
            except ValueError:
                pass
    m = find_metric(next(iter(sel.windows.values())), specs, metric or named)
    spec = next(s for s in specs.values() if s.metrics.get(m.name) is m)
    pooling = None
    if sel.window == "all":
        pooling = pool_windows({w: a.n for w, a in sel.windows.items()}, spec.release_for(m.name),
                               apply=apply_release)
        if pooling.empty:
            return Decoded(spec, m, 0, None, sel.window, pooling)
        agg = merge_all(sel.windows[w] for w in pooling.pooled)
    else:
        agg = merge_all(sel.windows.values())
    est = decode_aggregate(agg, load_candidates(spec, m.name, candidates), **options)
    return Decoded(spec, m, agg.n, est, sel.window, pooling, agg)


def decode_file(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                specs: Mapping[str, CollectionSpec], *, metric: str | None = None,
                candidates: str | os.PathLike[str] | None = None, window: int | str | None = None,
                **options: Any) -> tuple[MetricSpec, Any]:
    """:func:`decode_job`'s ``(metric, estimates)``: every estimate, no release threshold applied (``"all"``: every
    window pooled, withheld ones too; the data owner's view)."""
    d = decode_job(path, specs, metric=metric, candidates=candidates, window=window, apply_release=False,
                   **options)
    return d.metric, d.estimates


def estimates_csv(est: Any, poisoning: Mapping[str, Any] | None = None) -> str:
    """The estimates as CSV (:meth:`to_csv`); with ``poisoning`` (an :func:`~ldp.jobs.poisoning.evidence_summary`)
    two more columns, the same on every row: ``poisoning_verdict`` (``ok``, ``suspicious`` or ``untested``) and
    ``poisoning_p_value`` (the smallest p-value of its checks, empty when none ran)."""
    import csv as csv_module
    import io

    text = str(est.to_csv())
    if poisoning is None or not text:
        return text
    p = poisoning.get("p_value")
    extra = [str(poisoning["verdict"]), "" if p is None else repr(float(p))]
    rows = list(csv_module.reader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv_module.writer(out, lineterminator="\n")
    writer.writerow([*rows[0], "poisoning_verdict", "poisoning_p_value"])
    writer.writerows([*row, *extra] for row in rows[1:])
    return out.getvalue()


def estimates_json(est: Any, poisoning: Mapping[str, Any] | None = None) -> str:
    """The estimates as JSON (:meth:`to_json`); with ``poisoning``, under ``"poisoning"`` as ``ldp decode --json``
    prints it."""
    import json as json_module

    if poisoning is None:
        return str(est.to_json())
    return json_module.dumps({**json_module.loads(est.to_json()), "poisoning": dict(poisoning)})


def write_estimates(est: Any, *, csv: str | os.PathLike[str] | None = None, json: str | os.PathLike[str] | None = None,
                    plot: str | os.PathLike[str] | None = None, title: str = "",
                    poisoning: Mapping[str, Any] | None = None) -> list[Path]:
    """Write the estimates as CSV, JSON and a PNG plot (each when its path is given). ``poisoning``: the window's
    poisoning evidence (:func:`~ldp.jobs.poisoning.evidence_summary`), written in each: two CSV columns
    (:func:`estimates_csv`), a JSON key (:func:`estimates_json`) and a line under the plot's ``title``."""
    written = []
    if plot is not None:
        heading = f"{title}\npoisoning: {poisoning['verdict']}" if title and poisoning is not None else title
        plot_estimates(est, plot, heading)
        written.append(Path(plot))
    for path, text in ((csv, estimates_csv(est, poisoning) if csv else ""),
                       (json, estimates_json(est, poisoning) + "\n" if json else "")):
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
            written.append(Path(path))
    return written


def plot_estimates(est: Any, path: str | os.PathLike[str], title: str = "", top: int = 30) -> None:
    """A PNG: a bar per item (the ``top`` largest counts) with its confidence interval; a mean as one point
    with its interval; a multi metric's estimates (``{attribute: estimate}``) as one panel per attribute."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(f"the plot needs matplotlib: {install_hint('matplotlib', 'plot')}") from None

    panels = list(est.items()) if isinstance(est, Mapping) else [("", est)]
    heights = [1.2 + 0.32 * (min(len(e.items), top) if hasattr(e, "items") and not isinstance(e, Mapping) else 1)
               for _, e in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (name, e) in zip(axes[:, 0], panels, strict=True):
        _plot_panel(ax, e, top)
        label = f"{e.protocol}: n={e.n:,}"
        ax.set_title(f"{name} ({label})" if name else (title or label))
    if title and len(panels) > 1:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_panel(ax: Any, est: Any, top: int) -> None:
    """One estimate on ``ax``: counts as bars with intervals, a mean as a point with its interval."""
    import numpy as np

    if not hasattr(est, "count"):  # a MeanEstimate
        ax.errorbar([est.mean], [0], xerr=[[est.mean - est.ci_low], [est.ci_high - est.mean]], fmt="o",
                    color="#4C72B0", ecolor="#333333", capsize=3)
        ax.set_yticks([0], ["mean"])
        ax.set_xlabel(f"estimated mean ({est.confidence:.0%} CI)")
        return
    count = np.nan_to_num(np.asarray(est.count, dtype=float), nan=0.0)
    order = np.argsort(-count, kind="stable")[:top][::-1]
    items = [est.items[i] for i in order]
    err = np.nan_to_num(est.z * np.asarray(est.std_error, dtype=float)[order], nan=0.0)
    ax.barh(range(len(items)), count[order], xerr=err, color="#4C72B0", ecolor="#333333", capsize=3)
    ax.set_yticks(range(len(items)), items)
    ax.axvline(0, color="#999999", linewidth=0.8)
    ax.set_xlabel(f"estimated count of clients ({est.confidence:.0%} CI)")
