"""Import paths of release 0.1 that moved when the package was laid out by idea (issue 29), kept working for one
release: ``import ldp.accountant`` gives :mod:`ldp.privacy.accountant` itself (the same module object, so
``isinstance`` and monkeypatching agree) with a :class:`DeprecationWarning` naming the new path. Removed in 0.3.

Standard library only: :mod:`ldp` installs the finder on import, and the client imports :mod:`ldp`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

__all__ = ["MOVED", "install"]

MOVED: dict[str, str] = {
    "ldp.accountant": "ldp.privacy.accountant",
    "ldp.ledger": "ldp.privacy.ledger",
    "ldp.ledger_sql": "ldp.privacy.ledger_store",
    "ldp.audit": "ldp.privacy.audit",
    "ldp.uploader": "ldp.client.uploader",
    "ldp.cli_associate": "ldp.cli.associate",
    "ldp.cli_compare": "ldp.cli.compare",
    "ldp.cli_counts": "ldp.cli.counts",
    "ldp.cli_logging": "ldp.cli.log",
    "ldp.cli_multi": "ldp.cli.multi",
    "ldp.cli_ngrams": "ldp.cli.rappor_ngrams",
    "ldp.cli_numeric": "ldp.cli.numeric",
    "ldp.cli_pem": "ldp.cli.pem",
    "ldp.cli_protocols": "ldp.cli.protocols",
    "ldp.cli_serve": "ldp.cli.serve",
    "ldp.cli_server": "ldp.cli.server",
    "ldp.cli_support": "ldp.cli.support",
    "ldp.cli_watch": "ldp.cli.watch",
    "ldp.plan_costs": "ldp.plan.costs",
    "ldp.plan_multi": "ldp.plan.multi",
    "ldp.plan_ngrams": "ldp.plan.rappor_ngrams",
    "ldp.plan_numeric": "ldp.plan.numeric",
    "ldp.plan_oracles": "ldp.plan.oracles",
    "ldp.plan_pem": "ldp.plan.pem",
    "ldp.simulation_multi": "ldp.simulation.multi",
    "ldp.simulation_ngrams": "ldp.simulation.rappor_ngrams",
    "ldp.simulation_numeric": "ldp.simulation.numeric",
    "ldp.simulation_pem": "ldp.simulation.pem",
    "ldp.regtest": "ldp.simulation.rappor_regtest",
    "ldp.random_base": "ldp.randomness.base",
    "ldp.buffered_random": "ldp.randomness.buffered",
    "ldp.tables": "ldp.display.tables",
    "ldp.progress": "ldp.display.progress",
    "ldp.decoders.association_io": "ldp.server.association",
}
"""Old module path → its home since 0.2. (``ldp.client``, ``ldp.cli``, ``ldp.plan``, ``ldp.simulation`` and
``ldp.randomness`` became packages under the same name, re-exporting their public names.)"""


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new} in ldp-telemetry 0.2; the old path goes in 0.3", DeprecationWarning,
                  stacklevel=3)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved path and loads it as the module at its new home."""

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        _warn(spec.name, MOVED[spec.name])
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported at its new home."""


def module_getattr(name: str) -> ModuleType:
    """``ldp.<old name>`` as an attribute (``from ldp import ledger_sql``)."""
    full = f"ldp.{name}"
    if full not in MOVED:
        raise AttributeError(f"module 'ldp' has no attribute {name!r}")
    return importlib.import_module(full)


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
