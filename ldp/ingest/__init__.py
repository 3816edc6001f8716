"""``ldp serve``: the ingest service, which takes the devices' uploads over HTTP, stores them durably and folds them
(``pip install 'ldp-telemetry[serve]'``). It was ``ldp.collector`` until issue 83: in DAP, and in the two-aggregator
mode (:mod:`ldp.aggregators`), the *collector* is the analysts' side (``ldp collect``).

:func:`~ldp.ingest.app.create_app` is the ASGI app, :func:`~ldp.ingest.config.load_config`
reads its TOML config, :class:`~ldp.ingest.segments.SegmentWriter` stores batches durably and
exactly once. See docs/ingest.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ldp._moved import renamed_attributes
from ldp.ingest.config import AppConfig, ConfigError, IngestConfig, Limits, load_config, new_token, token_sha256

__all__ = ["AppConfig", "ConfigError", "IngestConfig", "Limits", "load_config", "new_token", "token_sha256",
           "create_app"]

if TYPE_CHECKING:
    from ldp.ingest.app import create_app


def _lazy(name: str) -> object:
    if name == "create_app":  # imports Starlette: only when asked
        from ldp.ingest.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__getattr__ = renamed_attributes(__name__, {"CollectorConfig": "IngestConfig"}, _lazy)  # issue 83, one more release
