"""Optional dependencies, and the error that names the extra to install.

The distribution is ``ldp-telemetry`` on PyPI (the name ``ldp`` there belongs to an unrelated
project); the import package is :mod:`ldp`. A plain ``pip install ldp-telemetry`` is what a client
app needs: the standard library, ``mmh3`` and ``bitarray`` (:mod:`ldp.encoders`, :mod:`ldp.client.runtime`,
:mod:`ldp.spec`, :mod:`ldp.privacy.ledger`, :mod:`ldp.privacy.audit`). The server, simulation, planning and
regression side needs the ``server`` extra (numpy, scipy, scikit-learn):
``pip install 'ldp-telemetry[server]'``. Each server package checks for it when imported, so a
client-only install asked for a server feature says which extra to install instead of failing deep
inside with a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from ldp.errors import MissingExtraError

__all__ = ["DISTRIBUTION", "SERVER_MODULES", "MissingExtraError", "available", "install_hint", "pip_install",
           "require_extra"]

DISTRIBUTION = "ldp-telemetry"
"""Our name on PyPI: every install line a user copies names it, never the bare import name."""

SERVER_MODULES = ("numpy", "scipy", "sklearn")
"""The top-level modules the ``server`` extra provides."""


def pip_install(extra: str | None = None) -> str:
    """The install line for ``extra`` (or the plain client install): ``pip install 'ldp-telemetry[plot]'``."""
    return f"pip install {DISTRIBUTION}" if extra is None else f"pip install '{DISTRIBUTION}[{extra}]'"


def install_hint(package: str, extra: str) -> str:
    """How to get one optional ``package``: ``pip install 'ldp-telemetry[plot]' (or pip install matplotlib)``."""
    return f"{pip_install(extra)} (or pip install {package})"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # an import hook that refuses it, or a broken package
        return False


def available(*modules: str) -> bool:
    """Whether every one of ``modules`` can be imported (looked up only, as :func:`require_extra` does)."""
    return all(_importable(m) for m in modules)


def require_extra(feature: str, extra: str = "server", modules: Sequence[str] = SERVER_MODULES) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` unless every one of ``modules`` can be imported.

    Only looks the modules up (``importlib.util.find_spec``): nothing is imported here."""
    missing = [m for m in modules if not _importable(m)]
    if missing:
        raise MissingExtraError(f"{feature} needs the {extra!r} extra (missing: {', '.join(missing)}); "
                                f"install it with: {pip_install(extra)}")
