"""The encoder hooks the client asks about a device's kept state, for every registered protocol:
``Encoder.needs_secret`` (a per-device secret, for memoized responses) and ``Encoder.assigned_cohorts(params)``
(how many cohorts the client draws the device's ``cohort=`` from, once, then keeps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ldp.client import TelemetryClient
from ldp.encoders.base import Encoder
from ldp.protocols import client_protocols
from ldp.spec import CollectionSpec

PROTOCOLS = sorted(client_protocols())


def _spec(params: object) -> CollectionSpec:
    cost = params.privacy_cost  # type: ignore[attr-defined]
    per_report = cost.epsilon if not cost.delta else {"epsilon": cost.epsilon, "delta": cost.delta}
    return CollectionSpec.from_dict({
        "spec_version": 1, "name": "device-state", "budget": {"per_window": 1e4, "lifetime": 1e5},
        "metrics": {"m": {"protocol": params.protocol, "params": params.to_dict(),  # type: ignore[attr-defined]
                          "budget": {"per_report": per_report}}}})


def test_the_defaults_are_no_secret_and_no_cohort():
    assert Encoder.needs_secret is False
    assert Encoder.assigned_cohorts(object()) == 0


@pytest.mark.parametrize("name", PROTOCOLS)
def test_the_hooks_agree_with_the_encoder_arguments(name):
    """An encoder that ``needs_secret`` takes ``secret=``, one that does not refuses it; an assigned cohort is
    taken as ``cohort=``, and the encoder then reports in the one it is given."""
    params_type, encoder_type = client_protocols()[name]
    assert isinstance(encoder_type.needs_secret, bool)
    for params in params_type.examples():
        n = encoder_type.assigned_cohorts(params)
        assert type(n) is int and n >= 0, (name, n)
        extra = {"secret": b"s" * 32} if encoder_type.needs_secret else {}
        for cohort in (0, n - 1) if n else (None,):
            kept = extra if cohort is None else {**extra, "cohort": cohort}
            enc = encoder_type(params, rng=1, simulation=True, **kept)
            if cohort is not None:
                assert enc.cohort == cohort  # type: ignore[attr-defined]
        if not encoder_type.needs_secret:
            with pytest.raises(TypeError):
                encoder_type(params, rng=1, simulation=True, secret=b"s" * 32)


@pytest.mark.parametrize("name", PROTOCOLS)
def test_the_client_keeps_the_assigned_cohort(name, tmp_path: Path):
    """The client draws an assigned cohort once, in ``range(n)``, and a reopened state file gives it back."""
    params_type, encoder_type = client_protocols()[name]
    params = params_type.examples()[0]
    n = encoder_type.assigned_cohorts(params)
    spec, state = _spec(params), tmp_path / "state.db"
    with TelemetryClient(spec, state) as client:
        first = client.cohort("m")
    with TelemetryClient(spec, state) as client:
        again = client.cohort("m")
    assert again == first  # kept, or derived from the kept secret, or None (no cohort)
    if n:
        assert first is not None and 0 <= first < n
