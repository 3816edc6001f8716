"""Import paths that moved, kept working for one release: ``import ldp.accountant`` gives
:mod:`ldp.privacy.accountant` itself (the same module object, so ``isinstance`` and monkeypatching agree) with a
:class:`DeprecationWarning` naming the new path.

* :data:`MOVED`: the modules of release 0.1 moved when the package was laid out by idea (issue 29); gone in 0.3.
* :data:`RENAMED`: the packages renamed so that no word names two things (issue 83, docs/glossary.md): the ingest
  service behind ``ldp serve`` was ``ldp.collector`` (DAP's *collector* is the analysts' side, ``ldp collect``), the
  offline jobs were ``ldp.server``; each prefix covers its submodules. Gone in the release after next.
* :func:`renamed_attributes`: a module's renamed public names (``CollectorConfig``, ``fold_files``), the same
  objects under their old names, with the same warning; :func:`renamed_method` a class's renamed method
  (``Leader.aggregate``).

Standard library only: :mod:`ldp` installs the finder on import, and the client imports :mod:`ldp`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "RENAMED", "install", "new_path", "renamed_attributes", "renamed_method"]

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
    "ldp.cli_server": "ldp.cli.jobs",
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
    "ldp.decoders.association_io": "ldp.jobs.association",
}
"""Old module path → its home since 0.2. (``ldp.client``, ``ldp.cli``, ``ldp.plan``, ``ldp.simulation`` and
``ldp.randomness`` became packages under the same name, re-exporting their public names.)"""


RENAMED: dict[str, str] = {
    "ldp.collector.ingest": "ldp.ingest.upload",
    "ldp.collector": "ldp.ingest",
    "ldp.server": "ldp.jobs",
    "ldp.cli.server": "ldp.cli.jobs",
}
"""Old package or module path → its name since issue 83; a package's submodules follow it (``ldp.collector.config``
→ ``ldp.ingest.config``). The longest matching prefix wins."""


def new_path(old: str) -> str | None:
    """Where the module ``old`` lives now, or ``None`` when it did not move."""
    if old in MOVED:
        return MOVED[old]
    for prefix in sorted(RENAMED, key=len, reverse=True):
        if old == prefix or old.startswith(prefix + "."):
            return RENAMED[prefix] + old[len(prefix):]
    return None


def _warn(old: str, new: str, stacklevel: int = 3) -> None:
    when = ("in ldp-telemetry 0.2; the old path goes in 0.3" if old in MOVED
            else "(issue 83: one name per idea); the old name goes in the release after next")
    warnings.warn(f"{old} moved to {new} {when}", DeprecationWarning, stacklevel=stacklevel)


def renamed_method(owner: str, old: str, new: str) -> Callable[..., Any]:
    """A method under its old name ``old``: warns, then calls ``new`` on the same instance with the same arguments."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        _warn(f"{owner}.{old}", f"{owner}.{new}")
        return getattr(self, new)(*args, **kwargs)

    method.__name__ = method.__qualname__ = old
    method.__doc__ = f"The name of :meth:`{new}` before issue 83: deprecated, gone in the release after next."
    return method


def renamed_attributes(module: str, names: dict[str, str], fallback: Callable[[str], Any] | None = None
                       ) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) giving each old name of ``names`` (old → new) as the new name's object,
    with a :class:`DeprecationWarning`; any other name goes to ``fallback`` (the module's lazy exports), else
    :class:`AttributeError`."""

    def __getattr__(name: str) -> Any:
        if name in names:
            _warn(f"{module}.{name}", f"{module}.{names[name]}")
            return getattr(sys.modules[module], names[name])
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved path and loads it as the module at its new home (whose own ``__spec__``, which the import
    system overwrites with the old path's, is put back)."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if new_path(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = new_path(spec.name)
        assert new is not None  # find_spec claimed it
        _warn(spec.name, new)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module was imported at its new home): its own ``__spec__`` put back."""
        alias = module.__spec__
        if alias is not None and alias.name in self._specs:
            module.__spec__ = self._specs.pop(alias.name)


def module_getattr(name: str) -> ModuleType:
    """``ldp.<old name>`` as an attribute (``from ldp import ledger_sql``)."""
    full = f"ldp.{name}"
    if new_path(full) is None:
        raise AttributeError(f"module 'ldp' has no attribute {name!r}")
    return importlib.import_module(full)


def install() -> None:
    """Put the finder first on ``sys.meta_path``: a renamed package's submodule (``ldp.collector.config``) would
    otherwise be found by the path finder inside the new package's folder and loaded a second time, as another
    module object under the old name and without a warning."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
