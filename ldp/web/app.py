"""The Starlette app both services are: their routes on the layer's answers.

:func:`service_app` builds it: every refusal a problem document (:mod:`ldp.web.problems`: Starlette's own 404 and
405, a service's exception classes, any unexpected error as 500), so that a service adds only its routes (and its
lifespan). ``ldp serve`` passes its subclass (:class:`ldp.ingest.app.IngestApp`, which answers uploads before the
routing) as ``cls``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from ldp.web.problems import Handler, exception_handlers

__all__ = ["service_app"]


def service_app(routes: Sequence[BaseRoute], *, refusals: Mapping[type[Exception], Handler] | None = None,
                lifespan: Any = None, cls: type[Starlette] = Starlette) -> Starlette:
    """A service's app: its ``routes``, its ``refusals`` (its exception classes' handlers) beside the layer's, and
    its ``lifespan`` (an async context manager factory, as Starlette takes it)."""
    return cls(routes=list(routes), exception_handlers=exception_handlers(refusals), lifespan=lifespan)
