"""What the tests of the TypeScript client's built entries share: where they are, and a missing build skipped for a
developer without Node but failed in CI (which builds the client first and sets ``LDP_REQUIRE_TS_BUNDLE=1``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

from support import ROOT

CLIENT = ROOT / "clients" / "typescript"
DAP_WASM = CLIENT / "dist" / "dap" / "wasm" / "ldp_dap_bg.wasm"
"""The ``dap`` entry's WebAssembly (``npm run build``)."""


def require_built(paths: Iterable[Path], why: str) -> None:
    """Skip (fail, under ``LDP_REQUIRE_TS_BUNDLE=1``) with ``why`` unless every one of ``paths`` exists."""
    if all(p.exists() for p in paths):
        return
    if os.environ.get("LDP_REQUIRE_TS_BUNDLE") == "1":
        pytest.fail(f"LDP_REQUIRE_TS_BUNDLE=1 but {why}", pytrace=False)
    pytest.skip(why)


def node_for(paths: Iterable[Path], why: str) -> str:
    """The ``node`` executable, once :func:`require_built` passed for ``paths`` (no Node counts as no build)."""
    node = shutil.which("node")
    require_built([*paths, *([] if node else [Path("/nonexistent/node")])], why)
    assert node is not None
    return node
