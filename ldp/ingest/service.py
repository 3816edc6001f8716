"""The whole ingest service that ``ldp serve`` runs: the ingest service, the dashboard and the folding.

:func:`create_service` is :func:`~ldp.ingest.app.create_app` with the dashboard's routes (``GET /``,
``GET /v1/estimates``, the sign-in form's ``POST /login`` and ``/logout``) for the config's analysts
(:class:`~ldp.ingest.access.ReadAccess`) and, when ``[fold] every_seconds`` is above 0, a
:class:`~ldp.ingest.watch.Watcher` started and stopped with the app, so the page's estimates are at
most that old."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ldp.ingest.access import ReadAccess
from ldp.ingest.app import create_app
from ldp.ingest.dashboard import dashboard_routes
from ldp.ingest.watch import Watcher

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ldp.ingest.config import IngestConfig

__all__ = ["create_service", "PUBLIC_WARNING"]

logger = logging.getLogger(__name__)
PUBLIC_WARNING = ("public = true: the dashboard and /v1/estimates answer anyone who reaches this service, without "
                  "a token (the estimates and every app's upload counters); remove it and give analysts tokens "
                  "('ldp serve token --analyst') unless that is meant")


def create_service(config: IngestConfig, *, refresh_seconds: int = 30) -> Starlette:
    """The ingest service app with the dashboard and, if ``config.fold_every_seconds > 0``, continuous folding. A
    replica over shared storage (``[storage]``) folds the anonymized segments the shuffler stage (``ldp shuffle``)
    wrote to the store, never its own chunks: enable ``[fold]`` on one replica (or on an ingest service that takes no
    uploads)."""
    hooks: dict[str, Any] = {}
    if config.fold_every_seconds > 0:
        watcher = Watcher.from_config(config)
        if config.export.otlp_endpoint is not None:
            from ldp.ingest.estimates_export import OtlpPush

            push = OtlpPush(config.export.otlp_endpoint, max_items=config.export.max_items,
                            timeout=config.export.otlp_timeout_seconds)
            watcher.after_fold.append(push.push)
            logger.info("pushing the released estimates to %s after each fold", config.export.otlp_endpoint)
        hooks = {"on_startup": [watcher.startup_hook], "on_shutdown": [watcher.shutdown_hook]}
        if config.storage is not None:
            logger.info("folding the shuffled segments of %s every %g s", config.storage.url,
                        config.fold_every_seconds)
    access = ReadAccess.from_config(config)
    if access.public:  # on purpose, but said at every start: the one switch that opens the operator's data
        logger.warning("%s", PUBLIC_WARNING)
    elif access.closed:
        logger.info("the dashboard and /v1/estimates answer 401 to everyone: no [analysts] tokens_sha256 (make one "
                    "with 'ldp serve token --analyst') and no public = true")
    routes = dashboard_routes(config.data_dir, config.apps, refresh_seconds=refresh_seconds, access=access,
                              max_items=config.export.max_items)
    return create_app(config, extra_routes=routes, **hooks)
