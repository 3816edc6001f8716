"""What a shuffler run's anonymity set buys: the central guarantee of each metric in each window it released, and
the spec's ``min_reports`` as the shuffler's threshold.

A window's segment holds ``n`` reports of a metric, from every replica, in a random order: a report of that metric
hides among those ``n`` (the analyst sees each report's metric and window). The guarantee is the one the
collector's dashboard states for a shuffled segment (:func:`ldp.collector.amplification.shuffle_entry`: Feldman,
McMillan and Talwar's bound, δ = 10⁻⁸), for a device with one report of the metric in the window, against the
analyst only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ldp.collector.amplification import per_report_epsilon, shuffle_entry
from ldp.collector.series import privacy_entry
from ldp.spec import CollectionSpec

__all__ = ["window_guarantees", "spec_min_reports"]


def window_guarantees(windows: Mapping[str, Mapping[str, Any]], specs: Mapping[str, CollectionSpec]
                      ) -> dict[str, dict[str, Any]]:
    """Per released window (the run's ``windows``), per ``<spec fingerprint>/<metric>``: the metric, its reports
    ``n`` there and the central guarantee of one report among them (``central: None`` with a ``note`` when the spec
    or metric is not among ``specs``, or the report is not pure ε-LDP)."""
    out: dict[str, dict[str, Any]] = {}
    for window, w in windows.items():
        if w.get("withheld") or not w.get("segment"):
            continue
        per: dict[str, Any] = {}
        for key, n in sorted((w.get("by_metric") or {}).items()):
            fp, _, name = key.partition("/")
            spec = specs.get(fp)
            if spec is None or name not in spec.metrics:
                per[key] = {"metric": name, "n": n, "central": None, "note": "not a metric of the specs given"}
                continue
            eps0 = per_report_epsilon(privacy_entry(spec, spec.metric(name)))
            entry = shuffle_entry(eps0, [(True, int(n))])
            per[key] = {"metric": name, "n": n, "epsilon0": eps0,
                        "central": None if entry is None else entry["central"]}
            if entry is None:
                per[key]["note"] = "a report is not pure ε-LDP: no amplification is claimed"
        out[window] = per
    return out


def spec_min_reports(specs: Iterable[CollectionSpec]) -> int:
    """The smallest ``release.min_reports`` of the specs' metrics (0 without one): the shuffler holds a window of
    fewer reports; each metric's own threshold is applied again when the segments are folded."""
    found = [spec.release_for(name).min_reports for spec in specs for name in spec.metrics]
    return min((m or 0 for m in found), default=0)
