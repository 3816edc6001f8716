"""What the Prio3 tests share: the binding (``ldp.prio``, its compiled part the distribution ``ldp-telemetry-prio``
that ``pip install ./bindings/prio`` builds with cargo) and the crate's VDAF draft 18 test vectors, read from the
``prio`` crate's source that cargo downloaded for that build (found by ``cargo metadata`` on the binding's crate, so a
clean clone finds them once its build fetched the crate; nothing is copied into the repository).

Without the binding, or without cargo or the crate's source, the tests skip, saying what is missing; under
``LDP_REQUIRE_PRIO=1`` (CI: ``.ci/run``) they fail instead, so a build that silently left the binding out fails
there."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CRATE = ROOT / "bindings" / "prio"
PRIO_VERSION = "0.18.1"
DRAFT = 18
REQUIRE = "LDP_REQUIRE_PRIO"


def required() -> bool:
    return os.environ.get(REQUIRE, "") == "1"


def missing(why: str) -> None:
    """Skip the test, or fail it under ``LDP_REQUIRE_PRIO=1``."""
    if required():
        pytest.fail(f"{REQUIRE}=1 but {why}", pytrace=False)
    pytest.skip(why)


def binding() -> Any:
    """The ``ldp.prio`` module with its binding built (else skipped, or failed under ``LDP_REQUIRE_PRIO=1``)."""
    import ldp.prio

    if not ldp.prio.available():
        missing("the Prio3 binding (ldp-telemetry-prio) is not installed: pip install ./bindings/prio, with cargo "
                f"on PATH; {ldp.prio._why_missing}")
    return ldp.prio


@functools.cache
def _vector_dir() -> tuple[Path | None, str]:
    cargo = shutil.which("cargo")
    if cargo is None:
        return None, "cargo is not on PATH (the test vectors are read from the prio crate's source cargo fetched)"
    done = subprocess.run([cargo, "metadata", "--format-version", "1", "--locked", "--manifest-path",
                           str(CRATE / "Cargo.toml")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return None, f"cargo metadata failed on {CRATE}: {done.stderr.strip()[-2000:]}"
    packages = json.loads(done.stdout)["packages"]
    found = [p for p in packages if p["name"] == "prio" and p["version"] == PRIO_VERSION]
    if not found:
        return None, f"bindings/prio does not depend on prio {PRIO_VERSION}"
    folder = Path(found[0]["manifest_path"]).parent / "src" / "vdaf" / "test_vec" / str(DRAFT)
    if not folder.is_dir():
        return None, f"the prio crate's source has no {folder}"
    return folder, ""


def vector_dir() -> Path:
    """The crate's draft 18 vectors (skipped, or failed under ``LDP_REQUIRE_PRIO=1``, when cargo cannot say)."""
    folder, why = _vector_dir()
    if folder is None:
        missing(why)
        raise AssertionError("unreachable")  # pytest.skip and pytest.fail raise
    return folder


def vector_names(types: tuple[str, ...]) -> list[str]:
    """The vector files of ``types`` (``Prio3Count_0.json``, ``Prio3Count_bad_meas_share.json``, …), for
    parametrizing: ``["<vectors not found>"]`` when they cannot be listed (the test then says why)."""
    folder, _ = _vector_dir()
    if folder is None:
        return ["<vectors not found>"]
    return sorted(p.name for p in folder.glob("*.json") if p.name.split("_", 1)[0] in types)


def refused(call: Any, operation: str, *words: str) -> Any:
    """The :class:`~ldp.errors.PrioError` ``call()`` raises, checked: its ``operation``, and each of ``words`` in
    its message."""
    from ldp.errors import PrioError

    with pytest.raises(PrioError) as info:
        call()
    assert info.value.operation == operation, str(info.value)
    for word in words:
        assert word in str(info.value), str(info.value)
    return info.value
