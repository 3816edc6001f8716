"""What a shuffler run's anonymity set buys: the central guarantee of each metric in each window it released, and
none for a metric withheld there (below its threshold: :mod:`ldp.shuffler.plan`).

A window's segment holds ``n`` reports of a metric, from every replica, in a random order: a report of that metric
hides among those ``n`` (the analyst sees each report's metric and window). The guarantee is computed by the one
function every window figure comes from, :func:`ldp.pipeline.guarantee.window_guarantee` (the protocol's shuffle
structure, e.g. binary randomized response's exact bound, else Feldman, McMillan and Talwar's; δ = 10⁻⁸), for a
device with as many reports of the metric in the window as its spec allows (k reports: never above k·ε₀,
:mod:`ldp.privacy.target`; one when the spec caps no window), against the analyst only: the figure the ingest
service's dashboard and ``ldp privacy --shuffled n`` state for the same window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ldp.pipeline.guarantee import DELTA, window_guarantee
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
    ``n`` there, its per-report ``epsilon0``, the ``reports_per_window`` a device may send (``None``: no cap, the
    figure is one report's) and the central guarantee of a device's reports among them (``central: None`` with a
    ``note`` when the spec or metric is not among ``specs``, or the report is not pure ε-LDP). A metric withheld in
    the window (its reports written to no segment) gets ``central: None`` and ``withheld``: ``[devices,
    threshold]``, never a figure: its reports are released nowhere, and an ε for them would describe a release that
    did not happen."""
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
            params, k = spec.metric(name).params, spec.reports_per_window(name)
            g = window_guarantee(params, int(n), DELTA, k or 1)
            per[key] = {"metric": name, "n": n, "epsilon0": params.privacy_cost.epsilon, "reports_per_window": k,
                        "central": None if g is None else g.to_dict()}
            if g is None:
                per[key]["note"] = "a report is not pure ε-LDP: no amplification is claimed"
        out[window] = per
    return out
