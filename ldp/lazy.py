"""Packages that export names from their submodules on first use (PEP 562), so that importing the
package, or one light submodule of it, does not import every heavy submodule; and the classes a package's
submodules define, found by importing them (how the protocol registry discovers protocols)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar

__all__ = ["lazy_exports", "subclasses_in"]

_T = TypeVar("_T")


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]], namespace: MutableMapping[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of package ``package`` whose names are ``exports``
    (``{submodule: names}``, a submodule dotted and absolute, or a bare name in the package). A name is imported
    from its submodule when first asked for, then kept in ``namespace`` (the package's globals)."""
    where = {name: module if "." in module else f"{package}.{module}"
             for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__


def subclasses_in(package: str, base: type[_T], *, suffix: str = "") -> list[type[_T]]:
    """The concrete subclasses of ``base`` defined in the modules directly inside ``package`` whose name ends with
    ``suffix`` (each such module is imported), in module then name order. A parametrized alias
    (``Layout = dict[str, int]``, which :func:`inspect.isclass` accepts on Python 3.10) is no class here."""
    pkg = importlib.import_module(package)
    found: list[type[_T]] = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.endswith(suffix):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (not isinstance(obj, types.GenericAlias) and issubclass(obj, base) and not inspect.isabstract(obj)
                    and obj.__module__ == module.__name__):
                found.append(obj)
    return found
