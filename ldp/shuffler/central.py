"""What a shuffler run's anonymity set buys: the central guarantee of each metric in each window it released, and
none for a metric withheld there (below its threshold: :mod:`ldp.shuffler.plan`).

A window's segment holds ``n`` reports of a metric, from every replica, in a random order: a report of that metric
hides among those ``n`` (the analyst sees each report's metric and window). The guarantee is the one the
collector's dashboard states for a shuffled segment (:func:`ldp.pipeline.amplification.shuffle_entry`: Feldman,
McMillan and Talwar's bound, δ = 10⁻⁸), for a device with one report of the metric in the window, against the
analyst only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ldp.pipeline.amplification import metric_epsilon, shuffle_entry
from ldp.spec import CollectionSpec

__all__ = ["window_guarantees", "shortfall"]


def shortfall(devices: int, threshold: int | None) -> str:
    """Why a metric was withheld in a window, in words: ``"3 of 100 devices"``, or that it has no threshold."""
    if threshold is None:
        return f"{devices:,} device(s), no threshold: its spec was not given, nor --min-reports"
    return f"{devices:,} of {threshold:,} devices"


def window_guarantees(windows: Mapping[str, Mapping[str, Any]], specs: Mapping[str, CollectionSpec]
                      ) -> dict[str, dict[str, Any]]:
    """Per released window (the run's ``windows``), per ``<spec fingerprint>/<metric>``: the metric, its reports
    ``n`` there and the central guarantee of one report among them (``central: None`` with a ``note`` when the spec
    or metric is not among ``specs``, or the report is not pure ε-LDP). A metric withheld in the window (its
    reports written to no segment) gets ``central: None`` and ``withheld``: ``[devices, threshold]``, never a
    figure: its reports are released nowhere, and an ε for them would describe a release that did not happen."""
    out: dict[str, dict[str, Any]] = {}
    for window, w in windows.items():
        if w.get("withheld") or not w.get("segment"):
            continue
        per: dict[str, Any] = {}
        for key, (n, threshold) in sorted((w.get("withheld_metrics") or {}).items()):
            per[key] = {"metric": key.partition("/")[2] or key, "n": 0, "central": None,
                        "withheld": [n, threshold], "note": f"withheld: {shortfall(n, threshold)}"}
        for key, n in sorted((w.get("by_metric") or {}).items()):
            fp, _, name = key.partition("/")
            spec = specs.get(fp)
            if spec is None or name not in spec.metrics:
                per[key] = {"metric": name, "n": n, "central": None, "note": "not a metric of the specs given"}
                continue
            eps0 = metric_epsilon(spec.metric(name))
            entry = shuffle_entry(eps0, [(True, int(n))])
            per[key] = {"metric": name, "n": n, "epsilon0": eps0,
                        "central": None if entry is None else entry["central"]}
            if entry is None:
                per[key]["note"] = "a report is not pure ε-LDP: no amplification is claimed"
        out[window] = per
    return out
