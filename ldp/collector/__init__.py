"""``ldp serve``: the HTTP collector (``pip install 'ldp-telemetry[serve]'``).

:func:`~ldp.collector.app.create_app` is the ASGI app, :func:`~ldp.collector.config.load_config`
reads its TOML config, :class:`~ldp.collector.segments.SegmentWriter` stores batches durably and
exactly once. See docs/collector.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ldp.collector.config import AppConfig, CollectorConfig, ConfigError, Limits, load_config, new_token, token_sha256

__all__ = ["AppConfig", "CollectorConfig", "ConfigError", "Limits", "load_config", "new_token", "token_sha256",
           "create_app"]

if TYPE_CHECKING:
    from ldp.collector.app import create_app


def __getattr__(name: str) -> object:
    if name == "create_app":  # imports Starlette: only when asked
        from ldp.collector.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
