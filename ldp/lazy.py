"""Packages that export names from their submodules on first use (PEP 562), so that importing the
package, or one light submodule of it, does not import every heavy submodule; and the classes a package's
submodules define, found by importing them (how the protocol registry discovers protocols), and the classes that other
installed distributions declare under an entry-point group (how it discovers theirs)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["added_classes", "added_to", "defined_in", "entry_point_classes", "lazy_exports", "package_classes",
           "subclasses_in"]

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
        if info.name.endswith(suffix):
            found.extend(defined_in(importlib.import_module(f"{package}.{info.name}"), base))
    return found


def defined_in(module: types.ModuleType, base: type[_T]) -> list[type[_T]]:
    """The concrete subclasses of ``base`` that ``module`` defines (not those it imports)."""
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if not isinstance(obj, types.GenericAlias) and issubclass(obj, base) and not inspect.isabstract(obj)
            and obj.__module__ == module.__name__]


def entry_point_classes(group: str, base: type[_T]) -> list[tuple[EntryPoint, type[_T]]]:
    """The classes that installed distributions declare under the entry-point ``group`` (``name = "module"`` or
    ``name = "module:Class"`` in their ``[project.entry-points."<group>"]``), each with its entry point, in entry
    point name order: an entry naming a module gives the concrete subclasses of ``base`` defined in it (imported
    now), one naming a class gives that class, which must be such a subclass. Reads only the installed metadata
    (:func:`importlib.metadata.entry_points`) and the modules named; ``TypeError`` for an entry naming something
    else, naming its distribution."""
    from importlib.metadata import entry_points  # only when asked: it costs the client ~10 ms to import

    found: list[tuple[EntryPoint, type[_T]]] = []
    for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
        obj = ep.load()
        if isinstance(obj, types.ModuleType):
            found.extend((ep, cls) for cls in defined_in(obj, base))
        elif inspect.isclass(obj) and issubclass(obj, base) and not inspect.isabstract(obj):
            found.append((ep, obj))
        else:
            raise TypeError(f"entry point {ep.name} = {ep.value!r} of group {group!r} ({entry_point_origin(ep)}) "
                            f"names {obj!r}, neither a module nor a concrete {base.__name__} subclass")
    return found


def entry_point_origin(ep: EntryPoint) -> str:
    """``distribution version`` of an entry point, for messages (``unknown distribution`` when not known)."""
    dist = ep.dist
    return f"distribution {dist.name} {dist.version}" if dist is not None else "unknown distribution"


def package_classes(package: str, base: type[_T]) -> list[type[_T]]:
    """:func:`subclasses_in` ``package``, then the classes of the entry-point group named after it
    (:func:`entry_point_classes`), then those :func:`added_classes` adds for a while: what the package defines
    and what installed distributions (or a check of a protocol not yet installed) add to it."""
    return [*subclasses_in(package, base), *(cls for _, cls in entry_point_classes(package, base)),
            *(cls for cls in added_to(package) if issubclass(cls, base))]


_ADDED: dict[str, tuple[type, ...]] = {}


def added_to(package: str) -> tuple[type, ...]:
    """The classes :func:`added_classes` adds to ``package`` now."""
    return _ADDED.get(package, ())


@contextmanager
def added_classes(package: str, classes: Iterable[type]) -> Iterator[None]:
    """Within the block, :func:`package_classes` of ``package`` also gives ``classes`` (how
    :func:`ldp.protocols.checks.check_protocol` runs on a protocol no distribution has installed yet). Callers
    clear the caches built from :func:`package_classes` on entry and exit."""
    before = added_to(package)
    _ADDED[package] = (*before, *classes)
    try:
        yield
    finally:
        _ADDED[package] = before
