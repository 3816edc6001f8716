"""Progress bars for long work: a tqdm bar on a terminal or in a notebook, nothing otherwise.

:func:`progress` returns a tqdm bar when it is wanted (``enabled=True``, or ``None`` and stderr is a
terminal or the code runs in a Jupyter kernel) and tqdm is installed (the ``server`` extra installs
it); it is tqdm's automatic front end (``tqdm.auto``: a widget in a notebook with ipywidgets, text on
stderr elsewhere). Otherwise a :class:`NoProgress` with the same ``update``/``set_postfix_str``/``close``
and context-manager interface that does nothing. A missing tqdm is never an error. Bars go to stderr only: what a
command prints on stdout never changes. The library functions that show progress take
``progress: bool | None = None``; the ``ldp`` command passes ``False`` under ``-q``. Work run
inside a bar's ``with`` block (the demo's SFP discovery, say) shows no bar of its own unless asked
(``enabled=True``): one bar at a time, and ``progress=False`` on the outer call silences all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = ["NoProgress", "in_notebook", "iterate", "progress", "wanted"]

T = TypeVar("T")

_open: ContextVar[int] = ContextVar("ldp_progress_open", default=0)  # bars entered with ``with`` and not closed


class _Scope:
    """While entered (``with``), :func:`wanted` is ``False`` for ``enabled=None``: work done inside a
    bar shows no bar of its own, and a bar turned off (``ldp -q``) turns off those under it."""

    _entered = False

    def close(self) -> None:
        """End the bar (and its scope)."""
        if self._entered:
            self._entered = False
            _open.set(max(_open.get() - 1, 0))

    def __enter__(self) -> Any:
        if not self._entered:
            self._entered = True
            _open.set(_open.get() + 1)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NoProgress(_Scope):
    """A stand-in for a tqdm bar that shows nothing."""

    def update(self, n: float = 1) -> None:
        """Ignore ``n`` units of work done."""

    def set_description_str(self, desc: str | None = None, refresh: bool = True) -> None:
        """Ignore a new description."""

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Ignore a new postfix."""

    def __bool__(self) -> bool:  # ``if bar:`` tells a real bar from this one
        return False


class _Bar(_Scope):
    """A tqdm bar (every tqdm attribute is reachable) that keeps the nesting scope."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def update(self, n: float = 1) -> None:
        """Advance by ``n`` units."""
        self.bar.update(n)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Show ``s`` after the counts (the current step's name)."""
        self.bar.set_postfix_str(s, refresh=refresh)

    def close(self) -> None:
        """Close the tqdm bar."""
        self.bar.close()
        super().close()

    def __getattr__(self, name: str) -> Any:
        if name == "bar":  # not yet set (copying, unpickling)
            raise AttributeError(name)
        return getattr(self.bar, name)

    def __bool__(self) -> bool:  # not tqdm's (false when total == 0)
        return True


def wanted(enabled: bool | None) -> bool:
    """``enabled``, or when ``None``: whether no bar is open around the call and stderr is a terminal or
    this is a notebook (:func:`in_notebook`)."""
    if enabled is not None:
        return bool(enabled)
    return _open.get() == 0 and (_stderr_is_terminal() or in_notebook())


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (an IPython shell with an ``IPKernelApp``); IPython is only
    looked up among the loaded modules, never imported."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    if get is None:
        return False
    try:
        shell = get()
        return shell is not None and "IPKernelApp" in getattr(shell, "config", {})
    except Exception:  # noqa: BLE001 - a half-initialised or foreign IPython: no bar rather than an error
        return False


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def progress(total: float | None = None, desc: str = "", enabled: bool | None = None, **options: Any) -> Any:
    """A tqdm bar over ``total`` units on stderr (``options`` go to tqdm: ``unit=``, ``unit_scale=``…),
    or a :class:`NoProgress` when not :func:`wanted` or tqdm is not installed. Used with ``with``,
    calls inside the block that leave ``enabled`` at ``None`` show no bar of their own."""
    if not wanted(enabled):
        return NoProgress()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return NoProgress()
    return _Bar(tqdm(total=total, desc=desc, file=sys.stderr, **{"leave": False, "dynamic_ncols": True, **options}))


def iterate(iterable: Iterable[T], total: int | None = None, desc: str = "", enabled: bool | None = None,
            **options: Any) -> Iterator[T]:
    """Yield the items of ``iterable``, advancing a :func:`progress` bar by one after each
    (``total`` defaults to ``len(iterable)`` when it has one); the bar closes at the end."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with progress(total, desc, enabled, **options) as bar:
        for item in iterable:
            yield item
            bar.update(1)
