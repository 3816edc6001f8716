"""The Prio3 tests' shared fixtures: the binding (skipped, or failed under LDP_REQUIRE_PRIO=1, without it) and two
aggregators' HPKE key pairs."""

from __future__ import annotations

from typing import Any

import pytest
from prio_support import binding


@pytest.fixture(scope="module")
def prio() -> Any:
    return binding()


@pytest.fixture(scope="module")
def keys(prio: Any) -> tuple[Any, Any]:
    return prio.HpkeKeypair.generate(1), prio.HpkeKeypair.generate(2)
