"""Optional dependencies, and the error that names the extra to install.

A plain ``pip install ldp`` is what a client app needs: the standard library, ``mmh3`` and
``bitarray`` (:mod:`ldp.encoders`, :mod:`ldp.client`, :mod:`ldp.spec`, :mod:`ldp.ledger`,
:mod:`ldp.audit`). The server, simulation, planning and regression side needs the ``server``
extra (numpy, scipy, scikit-learn): ``pip install 'ldp[server]'``. Each server package checks for
it when imported, so a client-only install asked for a server feature says which extra to install
instead of failing deep inside with a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

__all__ = ["SERVER_MODULES", "MissingExtraError", "require_extra"]

SERVER_MODULES = ("numpy", "scipy", "sklearn")
"""The top-level modules the ``server`` extra provides."""


class MissingExtraError(ImportError):
    """A feature needs an optional extra that is not installed (the message says which)."""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # an import hook that refuses it, or a broken package
        return False


def require_extra(feature: str, extra: str = "server", modules: Sequence[str] = SERVER_MODULES) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` unless every one of ``modules`` can be imported.

    Only looks the modules up (``importlib.util.find_spec``): nothing is imported here."""
    missing = [m for m in modules if not _importable(m)]
    if missing:
        raise MissingExtraError(f"{feature} needs the {extra!r} extra (missing: {', '.join(missing)}); "
                                f"install it with: pip install 'ldp[{extra}]'")
