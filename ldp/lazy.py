"""Packages that export names from their submodules on first use (PEP 562), so that importing the
package, or one light submodule of it, does not import every heavy submodule."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_exports"]


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
