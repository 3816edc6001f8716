"""A metric collected in the two-aggregator mode is never recorded for the ingest service (its value goes to two
aggregators, secret-shared): without its task (tests/client/test_client_dap.py records it with one) it is refused
with ``trust_model``, nothing charged or stored; ``local`` and ``shuffle`` record as before. The spec's ``trust`` is
checked, fingerprinted when not ``local``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ldp.client import TelemetryClient
from ldp.errors import RefusalValueError, SpecError
from ldp.spec import CollectionSpec


def _spec(trust: str | None, protocol: str = "grr", params: dict[str, Any] | None = None) -> CollectionSpec:
    metric: dict[str, Any] = {"protocol": protocol, "params": params or {"epsilon": 1.0, "domain_size": 4},
                              "budget": {"per_report": 1.0}}
    if trust is not None:
        metric["trust"] = trust
    return CollectionSpec.from_dict({"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 100},
                                     "metrics": {"m": metric}})


@pytest.mark.parametrize("trust", ["two-aggregator", "two-aggregator+local"])
def test_a_two_aggregator_metric_is_refused_with_nothing_written(tmp_path: Path, trust: str) -> None:
    with TelemetryClient(_spec(trust), tmp_path / "state.db", rng=1, simulation=True) as client:
        for record in (lambda: client.record("m", 1), lambda: client.record_many([("m", 1)])):
            with pytest.raises(RefusalValueError) as exc:
                record()
            assert exc.value.code == "trust_model" and exc.value.fields == {"metric": "m", "trust": trust}
        assert client.pending() == [] and client.spent("m").epsilon == 0


@pytest.mark.parametrize("trust", [None, "local", "shuffle"])
def test_local_and_shuffle_record(tmp_path: Path, trust: str | None) -> None:
    with TelemetryClient(_spec(trust), tmp_path / "state.db", rng=1, simulation=True) as client:
        assert client.record("m", 1) >= 0 and len(client.pending()) == 1


def test_trust_is_fingerprinted_only_when_not_local() -> None:
    assert _spec(None).fingerprint == _spec("local").fingerprint
    assert "trust" not in json.dumps(_spec("local").to_dict())
    assert len({_spec(t).fingerprint for t in ("local", "shuffle", "two-aggregator", "two-aggregator+local")}) == 4
    assert _spec("shuffle").metric("m").trust == "shuffle"


def test_a_bad_trust_is_refused() -> None:
    with pytest.raises(SpecError, match=r"metrics\.m\.trust: must be one of local, shuffle, two-aggregator"):
        _spec("central")
    with pytest.raises(SpecError, match="olh does not fit in Prio3"):
        _spec("two-aggregator", "olh", {"epsilon": 1.0, "domain_size": 4})
