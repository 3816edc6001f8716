"""What the Prio3 tests share: the binding (``ldp.prio``, its compiled part the distribution ``ldp-telemetry-prio``
that ``pip install ./bindings/prio`` builds with cargo) and the crates' test vectors, VDAF draft 18's of the ``prio``
crate 0.18.1 and draft 08's of 0.16.8, read from the crates' source that cargo downloaded for that build (found by
``cargo metadata`` on the binding's crate, so a clean clone finds them once its build fetched the crates; nothing is
copied into the repository).

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
PRIO_VERSIONS = {8: "0.16.8", 18: "0.18.1"}
"""The crate that implements each draft, and whose ``src/vdaf/test_vec/<draft>`` folder has its vectors (draft 08's
folder is named ``08``)."""
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
def _packages() -> tuple[list[dict[str, Any]] | None, str]:
    """The binding crate's dependency graph, by ``cargo metadata``; or why not."""
    cargo = shutil.which("cargo")
    if cargo is None:
        return None, "cargo is not on PATH (the test vectors are read from the prio crates' source cargo fetched)"
    done = subprocess.run([cargo, "metadata", "--format-version", "1", "--locked", "--manifest-path",
                           str(CRATE / "Cargo.toml")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return None, f"cargo metadata failed on {CRATE}: {done.stderr.strip()[-2000:]}"
    packages: list[dict[str, Any]] = json.loads(done.stdout)["packages"]
    return packages, ""


@functools.cache
def _vector_dir(draft: int = DRAFT) -> tuple[Path | None, str]:
    packages, why = _packages()
    if packages is None:
        return None, why
    version = PRIO_VERSIONS[draft]
    found = [p for p in packages if p["name"] == "prio" and p["version"] == version]
    if not found:
        return None, f"bindings/prio does not depend on prio {version}"
    folder = Path(found[0]["manifest_path"]).parent / "src" / "vdaf" / "test_vec" / f"{draft:02d}"
    if not folder.is_dir():
        return None, f"the prio crate's source has no {folder}"
    return folder, ""


def vector_dir(draft: int = DRAFT) -> Path:
    """The draft's vectors, from its crate (``PRIO_VERSIONS``): skipped, or failed under ``LDP_REQUIRE_PRIO=1``,
    when cargo cannot say."""
    folder, why = _vector_dir(draft)
    if folder is None:
        missing(why)
        raise AssertionError("unreachable")  # pytest.skip and pytest.fail raise
    return folder


def vector_names(types: tuple[str, ...], draft: int = DRAFT) -> list[str]:
    """The draft's vector files of ``types`` (``Prio3Count_0.json``, ``Prio3Count_bad_meas_share.json``, …; the type
    is the name up to its first ``_``, so ``Prio3SumVecField64Multiproof_0.json`` is no Prio3SumVec's), for
    parametrizing: ``["<vectors not found>"]`` when they cannot be listed (the test then says why)."""
    folder, _ = _vector_dir(draft)
    if folder is None:
        return ["<vectors not found>"]
    return sorted(p.name for p in folder.glob("*.json") if p.name.split("_", 1)[0] in types)


DRAFTS = (18, 8)
"""The drafts the tests run over (``ldp.prio.VDAF_DRAFTS``), the default first."""
SEED_SIZES = {8: 16, 18: 32}
"""Prio3's seed size in each draft: a joint randomness part, and the verify key."""


def make(prio: Any, name: str, draft: int = DRAFT, *, ctx: bytes = b"", **params: Any) -> Any:
    """``name``'s VDAF of ``draft`` with ``params`` as draft 18 takes them: for draft 8 without the context string
    (VDAF-08 has none) and with ``bits`` for ``max_measurement`` (its bit length: ``2**bits - 1`` is then at least
    the draft 18 maximum, so the same measurements are in range)."""
    params = {k: v for k, v in params.items() if v is not None}
    if draft == 18:
        return getattr(prio, name)(ctx=ctx, **params)
    if "max_measurement" in params:
        params["bits"] = int(params.pop("max_measurement")).bit_length()
    return getattr(prio, name)(draft=draft, **params)


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
