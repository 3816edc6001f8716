"""What ``/healthz``, ``/readyz`` and ``/livez`` tell whom (issue 70, item 9).

Anyone may ask: a balancer or an orchestrator asks without a token. So an anonymous answer says up or down and,
when down, why in one word of a fixed vocabulary (:data:`HEALTH_REASONS`): ``{"status": "ok"}``,
``{"status": "unavailable", "reason": "storage"}``. Never an error's text (it may quote a path, a bucket or an
endpoint), an app's name, a replica's name or the data folder. The details (the writer's state and error, since
when, the last error healed, a chore's warning, the queue, the apps, the replica) go to the operator's token only.

The config has no role of its own for the operator: the operator's token is the scraper's (``[metrics]
token_sha256``), who already reads ``/metrics``, where the same states are counted. Without one, nobody reads the
details here (the log has them). A wrong token gets the anonymous answer with the same status code, and
``WWW-Authenticate: Bearer error="invalid_token"`` says it was refused: the status code is what a balancer acts on,
so a token cannot change it, and a stale token in a health check cannot take a healthy replica out of the pool.

Nothing here imports an HTTP stack: :mod:`ldp.ingest.app` answers with what these functions return."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ldp.web.auth import bearer_digest, holder_of

if TYPE_CHECKING:
    from ldp.ingest.config import IngestConfig

__all__ = ["HEALTH_REASONS", "INVALID_TOKEN", "coarse_health", "operator_of", "is_operator", "health_answer",
           "live_answer"]

HEALTH_REASONS = {"storage_error": "storage", "closing": "shutting_down", "stopped": "stopped"}
"""Why the ingest service is down, in the words an anonymous answer uses: the writer's state -> its word (any other
state: ``"other"``)."""
INVALID_TOKEN = 'Bearer error="invalid_token"'
"""``WWW-Authenticate`` of an answer to a token that is not the operator's (RFC 9110 allows it on any status)."""


def coarse_health(state: str) -> dict[str, str]:
    """What anyone is told of the writer's ``state`` (:meth:`~ldp.ingest.segments.SegmentWriter.health`'s
    ``status``): ``{"status": "ok"}``, or ``{"status": "unavailable", "reason": <a word of HEALTH_REASONS, or
    "other">}``."""
    if state == "ok":
        return {"status": "ok"}
    return {"status": "unavailable", "reason": HEALTH_REASONS.get(state, "other")}


def operator_of(config: IngestConfig) -> bytes | None:
    """The SHA-256 of the operator's token: the ``[metrics]`` scraper's (``None``: none, nobody reads details)."""
    want = config.metrics.token_sha256
    return bytes.fromhex(want) if want is not None else None


def is_operator(authorization: str | None, want: bytes | None) -> bool | None:
    """Whether an ``Authorization`` header bears the operator's token (SHA-256 ``want``), compared in constant time
    (:mod:`ldp.web.auth`): ``None`` without a header, ``False`` with any other (or when there is no operator's
    token)."""
    if authorization is None:
        return None
    return want is not None and holder_of(bearer_digest(authorization), [(want, True)]) is not None


def health_answer(detail: Mapping[str, Any], config: IngestConfig, operator: bool | None
                  ) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The status code, body and extra headers of ``/healthz`` (and ``/readyz``) for the writer's ``detail``
    (:meth:`~ldp.ingest.segments.SegmentWriter.health`) and a caller who is the operator (``True``), bears another
    token (``False``) or none (``None``): 200 up, 503 down (with ``Retry-After``), whoever asks."""
    up = detail["status"] == "ok"
    headers = {} if up else {"Retry-After": "1"}
    if operator:
        doc = {**detail, "apps": sorted(config.apps)}
        if config.replica is not None:
            doc["replica"] = config.replica
        return (200 if up else 503), doc, headers
    if operator is False:
        headers["WWW-Authenticate"] = INVALID_TOKEN
    return (200 if up else 503), dict(coarse_health(str(detail["status"]))), headers


def live_answer(config: IngestConfig, operator: bool | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The body and extra headers of ``/livez``: ``{"status": "alive"}``, with the replica's name for the operator."""
    if operator:
        return ({"status": "alive", "replica": config.replica} if config.replica is not None
                else {"status": "alive"}), {}
    return {"status": "alive"}, ({"WWW-Authenticate": INVALID_TOKEN} if operator is False else {})
