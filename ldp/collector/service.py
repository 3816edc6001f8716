"""The whole collection service that ``ldp serve`` runs: the collector, the dashboard and the folding.

:func:`create_service` is :func:`~ldp.collector.app.create_app` with the dashboard's routes (``GET /``,
``GET /v1/estimates``) and, when ``[fold] every_seconds`` is above 0, a
:class:`~ldp.collector.watch.Watcher` started and stopped with the app, so the page's estimates are at
most that old."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ldp.collector.app import create_app
from ldp.collector.dashboard import dashboard_routes
from ldp.collector.watch import Watcher

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ldp.collector.config import CollectorConfig

__all__ = ["create_service"]

logger = logging.getLogger(__name__)


def create_service(config: CollectorConfig, *, refresh_seconds: int = 30) -> Starlette:
    """The collector app with the dashboard and, if ``config.fold_every_seconds > 0``, continuous folding. A replica
    over shared storage (``[storage]``) folds the anonymized segments the shuffler stage (``ldp shuffle``) wrote to
    the store, never its own chunks: enable ``[fold]`` on one replica (or on a collector that takes no uploads)."""
    hooks: dict[str, Any] = {}
    if config.fold_every_seconds > 0:
        watcher = Watcher.from_config(config)
        hooks = {"on_startup": [watcher.startup_hook], "on_shutdown": [watcher.shutdown_hook]}
        if config.storage is not None:
            logger.info("folding the shuffled segments of %s every %g s", config.storage.url,
                        config.fold_every_seconds)
    routes = dashboard_routes(config.data_dir, config.apps, refresh_seconds=refresh_seconds)
    return create_app(config, extra_routes=routes, **hooks)
