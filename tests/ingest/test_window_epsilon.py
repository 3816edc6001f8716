"""One figure for a window's central ε (issue 72, item 4): a small collection end to end — replicas' chunks of an RR
metric (binary randomized response, analysed exactly) and a GRR metric over three values (k-RR's clone structure),
mixed by ``ldp shuffle``, folded by the ingest service from the store, shown on the dashboard — states for a window the
same ε as ``ldp privacy ... --shuffled N`` and ``ldp spec validate --shuffled N`` (all by
:func:`ldp.pipeline.guarantee.window_guarantee`); the dashboard's cumulative figure, composed with the same structure,
equals it over one window and is not below it over two."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import call_main

from ldp.ingest.dashboard import render_dashboard
from ldp.ingest.watch import fold_app
from ldp.jobs import Section
from ldp.pipeline.guarantee import window_guarantee
from ldp.privacy.shuffle import shuffled_epsilon
from ldp.protocols import get_protocol
from ldp.reports import ReportBatch
from ldp.shuffler import ChunkBatch, chunk_key, encode_chunk
from ldp.spec import CollectionSpec, Envelope
from ldp.storage.local import LocalStore

pytest.importorskip("dp_accounting")

DAY = 86400
W0 = 20000  # a UTC day, as a window index
SPEC = {"spec_version": 1, "name": "one_figure", "window_seconds": DAY,
        "budget": {"per_window": 3.0, "lifetime": 300.0},
        "metrics": {"dark": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75},
                             "budget": {"per_report": 1.1, "per_window": 1.1, "lifetime": 100.0}},
                    "tier": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 3},
                             "budget": {"per_report": 1.0, "per_window": 1.0, "lifetime": 100.0}}}}
"""One report of each metric per device and window (per_window = per_report): k = 1, so the structure applies."""
N = {"dark": 80, "tier": 80}
"""Reports of each metric in the first window (below 100, which the cumulative figure does not round)."""
DELTA = 1e-8


def section_lines(spec: CollectionSpec, name: str, window: int, n: int, seed: int) -> bytes:
    """``n`` reports of metric ``name`` for ``window``, as envelope lines."""
    m = spec.metrics[name]
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2 if m.protocol == "rr" else 3, n)
    s = Section(spec.fingerprint, name, window, get_protocol(m.protocol).encoder_type(m.params).encode_batch(values,
                                                                                                            rng))
    reports = s.reports.reports() if isinstance(s.reports, ReportBatch) else s.reports
    return b"".join(Envelope(s.spec, s.metric, s.window, r).to_json().encode() + b"\n" for r in reports)


def upload(store: LocalStore, spec: CollectionSpec, window: int, n: dict[str, int]) -> None:
    """One replica's chunk of ``window``: a batch per metric."""
    batches = [ChunkBatch(f"{name}-{window}", window * DAY, DAY, section_lines(spec, name, window, k, window + i))
               for i, (name, k) in enumerate(sorted(n.items()))]
    store.put(chunk_key("demo", "r1", window * DAY + 60, window - W0 + 1), encode_chunk(batches))


def shuffle(root: Path, spec_path: Path) -> dict[str, Any]:
    """``ldp shuffle --spec``'s figures of its one window, per metric name."""
    code, out, err = call_main(["shuffle", "--store", str(root / "store"), "--app", "demo", "--spec", str(spec_path),
                                "--min-reports", "1", "--json"])
    assert code == 0, err
    (window,) = json.loads(out)["central"].values()
    return {m["metric"]: m for m in window.values()}


def privacy(*argv: str) -> dict[str, Any]:
    code, out, err = call_main(["privacy", *argv, "--json"])
    assert code == 0, err
    return dict(json.loads(out)["central"])


def test_a_window_has_one_central_epsilon_everywhere(tmp_path: Path) -> None:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(SPEC))
    spec = CollectionSpec.load(spec_path)
    store, data = LocalStore(tmp_path / "store"), tmp_path / "data"
    # the tools' figures for 80 reports: binary RR's exact one and GRR's with k-RR's structure, each below the
    # generic bound (the figure the dashboard stated before) — so a site using the generic bound fails below
    tools = {"dark": privacy("rr", "--param", "p=0.25", "--param", "q=0.75", "--shuffled", "80"),
             "tier": privacy("grr", "--epsilon", "1", "--d", "3", "--shuffled", "80")}
    for name, g in tools.items():
        eps0 = spec.metrics[name].params.privacy_cost.epsilon
        assert g["amplified"] and g["epsilon"] < shuffled_epsilon(eps0, N[name], DELTA).epsilon * 0.99
        found = window_guarantee(spec.metrics[name].params, N[name], DELTA)
        assert found is not None and g == found.to_dict()
    assert all(g["method"] != "numerical" for g in tools.values())  # each protocol's own structure, not the generic
    code, out, _ = call_main(["spec", "validate", str(spec_path), "--shuffled", "80", "--json"])
    assert code == 0
    validated = json.loads(out)["central"]

    # window 1: shuffled, folded from the store, shown
    upload(store, spec, W0, N)
    shuffled = shuffle(tmp_path, spec_path)
    doc = fold_app(data, "demo", [spec_path], store=(str(tmp_path / "store"), {}))
    metrics = {m["metric"]: m for m in doc["metrics"]}
    html = render_dashboard(data, ["demo"])
    for name, g in tools.items():
        sh, c = metrics[name]["shuffle"], metrics[name]["central"]
        assert shuffled[name]["n"] == sh["smallest"] == N[name]
        assert shuffled[name]["central"] == sh["central"] == validated[name]["guarantee"] == g
        assert c["windows"] == 1 and c["epsilon"] == g["epsilon"]  # the cumulative figure over one window
        # the page: the window line and the cumulative line state the same number
        assert html.count(f"ε={g['epsilon']:.4g}, δ=1e-08") >= 2
    assert "ε=0.8982" not in html  # GRR's generic figure at 80 (0.8982) is nowhere

    # window 2, more reports: the dashboard's window figure is still the smallest set's (window 1's), and the
    # cumulative figure over both windows is not below it
    upload(store, spec, W0 + 1, {"dark": 90, "tier": 95})
    assert {m["n"] for m in shuffle(tmp_path, spec_path).values()} == {90, 95}
    doc = fold_app(data, "demo", [spec_path], store=(str(tmp_path / "store"), {}))
    for m in doc["metrics"]:
        g = tools[m["metric"]]
        assert m["shuffle"]["central"] == g and m["central"]["windows"] == 2
        assert m["central"]["epsilon"] >= g["epsilon"]
        assert m["central"]["epsilon"] < 2 * g["epsilon"]  # composed, not summed


def test_an_old_stored_entry_still_renders(tmp_path: Path) -> None:
    """A ``shuffle`` entry written before ``reports_per_window`` was kept is read as one report's, not a crash."""
    from ldp.ingest.pageview import _central

    old = {"segments": 2, "smallest": 3000, "unshuffled_segments": 0, "delta": 1e-8,
           "central": shuffled_epsilon(1.0, 3000, 1e-8).to_dict()}
    ((label, text),) = _central(old)
    assert "one window" in label and "a device's one report among the 3,000" in text and "ε=0.1294" in text


def test_the_window_rule_k_reports_bad_input_and_delta() -> None:
    """k reports: each in a shuffle of its own among ⌊n/k⌋, the structure kept, never above the k·ε₀ report among
    ⌈n/k⌉ devices nor below one report's figure; a report with δ₀ > 0 gets no figure; bad input is named."""
    from ldp.pipeline.guarantee import Randomizer, over_windows, window_release
    from ldp.privacy.cost import PrivacyCost
    from ldp.privacy.over_time import reports_window

    rr = CollectionSpec.from_dict(SPEC).metrics["dark"].params
    eps0 = rr.privacy_cost.epsilon
    two = window_guarantee(rr, 3000, DELTA, reports=2)  # 3,000 reports, 2 a device: 1,500 devices at least
    assert two is not None and two.epsilon0 == pytest.approx(2 * eps0) and two.n == 3000
    assert two.epsilon <= shuffled_epsilon(2 * eps0, 1500, DELTA).epsilon  # the k·ε₀ report among the devices
    assert two.epsilon < 0.5 * shuffled_epsilon(2 * eps0, 1500, DELTA).epsilon  # the structure kept: far tighter
    assert two.epsilon >= window_guarantee(rr, 3000, DELTA).epsilon  # k reports leak at least one's
    assert two == reports_window(window_release(rr, 3000, 2), DELTA)
    three = window_guarantee(rr, 3001, DELTA, reports=3)
    assert three is not None and two.epsilon <= three.epsilon <= 3 * eps0
    assert window_release(rr, 3000, 2).structure == rr.shuffle_structure and window_release(rr, 3000, 2).reports == 2
    assert window_guarantee(Randomizer(PrivacyCost(1.0, 1e-9)), 3000, DELTA) is None
    assert window_guarantee(Randomizer(PrivacyCost(eps0), rr.shuffle_structure), 3000, DELTA) == \
        window_guarantee(rr, 3000, DELTA)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="reports"):
            window_guarantee(rr, 3000, DELTA, reports=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n"):
        window_guarantee(rr, 0, DELTA)
    one = over_windows([window_release(rr, 3000)], DELTA)
    assert one.windows == 1 and one.epsilon == window_guarantee(rr, 3000, DELTA).epsilon  # type: ignore[union-attr]
