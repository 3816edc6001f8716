"""The ingest service's configuration: one TOML file (see docs/ingest.md), loaded by :func:`load_config`.

Paths in the file (``data_dir``, each app's ``specs``) are relative to the file's folder. Tokens are
never stored: an app has the SHA-256 of its bearer token (:func:`new_token` makes one, 32 random
bytes in URL-safe base64, so one unsalted hash suffices), and so do the analysts (``[analysts]
tokens_sha256``, who read the dashboard and ``/v1/estimates``) and the scraper (``[metrics] token_sha256``).
Each role has tokens of its own: a token listed for two roles is refused. The file is read, its unknown keys refused
and its values checked by the services' one config loader (:mod:`ldp.web.config`); this module declares the ingest
service's sections."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ldp._moved import renamed_attributes
from ldp.errors import ConfigError
from ldp.ingest.origins import check_origin, cors_origins
from ldp.spec import CollectionSpec
from ldp.web import config as loader

__all__ = ["ConfigError", "Limits", "AppConfig", "IngestConfig", "load_config", "parse_config", "new_token",
           "token_sha256", "APP_NAME_RE", "MetricsConfig", "check_origin", "check_replica", "StorageConfig",
           "TOP_LEVEL_KEYS", "ExportConfig"]

APP_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
"""An app's name: it names a folder under ``DATA/apps``."""
TOP_LEVEL_KEYS = frozenset({"data_dir", "limits", "fold", "apps", "metrics", "export", "cors_origins", "replica",
                            "storage", "analysts", "public"})
"""The keys of the file's top level."""
_PLAIN_TOP_KEYS = frozenset({"data_dir", "cors_origins", "replica", "public"})
"""Top-level keys that are not tables: in TOML they come before the first ``[table]`` (written after one, they belong
to it, where they are unknown keys: the error says so)."""


@dataclass(frozen=True)
class Limits:
    """Request and segment limits (the ``[limits]`` table). ``max_buffered_bytes`` bounds the request
    bodies held at once by all requests together (as received plus inflated, until stored). A rejected line
    over ``max_reject_line_bytes`` is stored only as a prefix and a digest, and each app stores at most
    ``reject_bytes_per_day`` of rejects per UTC day (:mod:`ldp.ingest.rejects`); a day's ``rejects/`` file is
    deleted ``reject_retention_days`` after that day ended. A batch id is recognised as a duplicate for
    ``dedup_horizon_seconds`` after it was stored, then leaves the index, and the file within a day more
    (:mod:`ldp.ingest.journal`).
    ``header_timeout_seconds`` bounds the time from a connection's accept (or its last answer) to the end
    of the next request's headers, ``idle_timeout_seconds`` the time without a byte while no request is
    in progress, and ``max_header_bytes`` what a connection may buffer while its request's headers are
    incomplete (400 beyond)."""

    max_body_bytes: int = 4 * 2**20
    max_decompressed_bytes: int = 32 * 2**20
    max_lines: int = 5000
    body_timeout_seconds: float = 10.0
    max_pending_batches: int = 64
    max_buffered_bytes: int = 256 * 2**20
    segment_max_bytes: int = 64 * 2**20
    segment_max_seconds: float = 300.0
    max_reject_line_bytes: int = 64 * 2**10
    reject_bytes_per_day: int = 64 * 2**20
    reject_retention_days: int = 30
    dedup_horizon_seconds: float = 90 * 86400.0
    header_timeout_seconds: float = 10.0
    idle_timeout_seconds: float = 5.0
    max_header_bytes: int = 8192


@dataclass(frozen=True)
class AppConfig:
    """One app: its name, the SHA-256 (hex) of its bearer token, its spec files and the specs by fingerprint."""

    name: str
    token_sha256: str
    spec_paths: tuple[Path, ...]
    specs: Mapping[str, CollectionSpec] = field(repr=False)


@dataclass(frozen=True)
class MetricsConfig:
    """The ``[metrics]`` table: whether ``GET /metrics`` is served, and the SHA-256 (hex) of the bearer
    token it then requires (``None``: no token, like ``/healthz``)."""

    enabled: bool = True
    token_sha256: str | None = None


@dataclass(frozen=True)
class ExportConfig:
    """The ``[export]`` table: the released estimates as metrics (:mod:`ldp.ingest.estimates_export`):
    ``max_items`` exported per metric on ``GET /metrics/estimates`` and in the OTLP push, and ``otlp_endpoint``,
    where to push them after each fold (``None``: no push); the push's headers come from the environment
    (``OTEL_EXPORTER_OTLP_METRICS_HEADERS``), never from the file."""

    max_items: int = 100
    otlp_endpoint: str | None = None
    otlp_timeout_seconds: float = 10.0


@dataclass(frozen=True)
class StorageConfig:
    """The ``[storage]`` table: the store shared by the replicas (``url``: ``s3://bucket/prefix``,
    ``az://container/prefix``, or a folder every replica mounts) and its options, per kind (:data:`STORAGE_OPTIONS`:
    ``endpoint_url`` of an S3-compatible server and ``region_name``; Azure's ``account_name`` or ``account_url``).
    Credentials come from the environment (``AWS_ACCESS_KEY_ID``, ``AZURE_STORAGE_KEY``, ...), never from this
    file."""

    url: str
    options: Mapping[str, str] = field(default_factory=dict)
    claim_seconds: float = 30.0
    """How long a replica's claim on its name lasts past its last renewal (``claim_seconds``): a replica killed on
    another host is replaced under its name this long after it stopped (:mod:`ldp.ingest.claim`)."""

    def open(self) -> Any:
        """The :class:`~ldp.storage.Store`."""
        from ldp.storage import open_store

        return open_store(self.url, dict(self.options) or None)


@dataclass(frozen=True)
class IngestConfig:
    """The whole configuration. ``fold_every_seconds`` is the continuous aggregation period (0: off)."""

    path: Path | None
    data_dir: Path
    limits: Limits
    apps: Mapping[str, AppConfig]
    fold_every_seconds: float = 60.0
    metrics: MetricsConfig = MetricsConfig()
    fold_windows: int = 14
    """Windows each metric keeps decoded in ``estimates.json`` (``[fold] windows``): the dashboard's time series."""
    cors_origins: tuple[str, ...] = ()
    """The web origins whose pages may upload (``cors_origins``; ``("*",)``: any): see :mod:`ldp.ingest.cors`.
    Empty: no CORS headers at all."""
    replica: str | None = None
    """This process's name among several ingest services behind one balancer (``replica``, or ``ldp serve --replica``):
    every sample of ``/metrics`` carries it as the label ``replica``, and ``/healthz`` says it. ``None``: one
    ingest service, no label."""
    storage: StorageConfig | None = None
    """Where batches are stored: ``None``, the local ``data_dir`` (segments, journals); a :class:`StorageConfig`,
    chunks in the shared store (:mod:`ldp.ingest.chunklog`), one replica among several."""
    analysts: tuple[str, ...] = ()
    """The SHA-256 (hex) of each analyst's token (``[analysts] tokens_sha256``): a bearer of one reads the dashboard
    and ``/v1/estimates`` (:mod:`ldp.ingest.access`). Empty, and not :attr:`public`: nobody reads them."""
    export: ExportConfig = ExportConfig()
    """``[export]``: the released estimates as Prometheus series and OTLP pushes."""
    public: bool = False
    """``public = true``: the dashboard and ``/v1/estimates`` answer everyone, without a token (``ldp serve`` warns at
    start). Estimates are aggregates of privatized reports, but still the operator's data: opened only on purpose."""

    def app_dir(self, app: str) -> Path:
        """``DATA/apps/<app>``."""
        return self.data_dir / "apps" / app

    def closed_dir(self, app: str) -> Path:
        """Where an app's closed (immutable) segments are: the input folder of ``ldp fold``."""
        return self.app_dir(app) / "segments" / "closed"


STORAGE_OPTIONS: Mapping[str, tuple[str, ...]] = {"s3": ("endpoint_url", "region_name"),
                                                  "az": ("account_name", "account_url")}
"""The ``[storage]`` options of each kind of object storage: where it is, never a secret."""
STORAGE_SCHEMES: Mapping[str, str] = {"s3": "s3", "az": "az", "abfs": "az", "abfss": "az"}
"""The URL schemes ``[storage] url`` takes, and their kind (:data:`STORAGE_OPTIONS`)."""
STORAGE_SECRETS: Mapping[str, str] = {
    "key": "AWS_ACCESS_KEY_ID", "secret": "AWS_SECRET_ACCESS_KEY", "aws_access_key_id": "AWS_ACCESS_KEY_ID",
    "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY", "connection_string": "AZURE_STORAGE_CONNECTION_STRING",
    "account_key": "AZURE_STORAGE_KEY", "sas_token": "AZURE_STORAGE_SAS_TOKEN"}
"""Credentials, which the file never holds: each with the environment variable that gives it."""


def _storage(where: str, raw: Any, base: Path) -> StorageConfig:
    named = {n for names in STORAGE_OPTIONS.values() for n in names}
    secret = sorted(set(raw) & set(STORAGE_SECRETS)) if isinstance(raw, dict) else []
    if secret:
        raise ConfigError(f"{where}.{secret[0]}: credentials are never in this file (it is read by every replica and "
                          f"often versioned): set {STORAGE_SECRETS[secret[0]]} in the environment of ldp serve")
    doc = _table(where, raw, {"url", "claim_seconds"} | named)
    claim = doc.get("claim_seconds", 30.0)
    if isinstance(claim, bool) or not isinstance(claim, (int, float)) or not 1 <= claim <= 3600:
        raise ConfigError(f"{where}.claim_seconds must be a number of seconds in [1, 3600], got {claim!r}")
    url = doc.get("url")
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{where}.url must be s3://bucket[/prefix], az://container[/prefix] or a folder, got "
                          f"{url!r}")
    options: dict[str, str] = {}
    for key in sorted(named & set(doc)):
        if not isinstance(doc[key], str) or not doc[key]:
            raise ConfigError(f"{where}.{key} must be a non-empty string, got {doc[key]!r}")
        options[key] = doc[key]
    scheme = url.partition("://")[0] if "://" in url else None
    if scheme is None or scheme == "file":
        if options:
            raise ConfigError(f"{where}: {', '.join(options)} are for object storage, not a folder")
        return StorageConfig(str((base / url).resolve()) if scheme is None else url, options, float(claim))
    kind = STORAGE_SCHEMES.get(scheme)
    if kind is None:
        raise ConfigError(f"{where}.url: only s3://, az:// (or abfs://, abfss://) object storage or a folder is "
                          f"supported, got {url!r}")
    wrong = sorted(set(options) - set(STORAGE_OPTIONS[kind]))
    if wrong:
        raise ConfigError(f"{where}: {', '.join(wrong)} are not options of {scheme}:// storage (it takes "
                          f"{', '.join(STORAGE_OPTIONS[kind])})")
    if kind == "az":
        from ldp.storage.azure import parse_url

        try:
            parse_url(url)
        except ValueError as exc:
            raise ConfigError(f"{where}.url: {exc}") from None
    return StorageConfig(url, options, float(claim))


def check_replica(name: Any, where: str = "replica") -> str:
    """A replica's name if valid — 1 to 64 of a-z, 0-9, ``_`` and ``-``, starting with a letter or digit (it is
    a Prometheus label value and a part of object names) — else :class:`ConfigError`."""
    if not isinstance(name, str) or not APP_NAME_RE.match(name):
        raise ConfigError(f"{where}: a replica name is 1 to 64 of a-z, 0-9, '_' and '-', got {name!r}")
    return name


def new_token() -> str:
    """A new bearer token: 32 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")


def token_sha256(token: str) -> str:
    """The hex SHA-256 of a token, as the config's ``token_sha256`` holds it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _number(where: str, value: Any, kind: type, low: float, low_open: bool = False) -> Any:
    return loader.number(where, value, kind, low, low_open=low_open)


def _table(where: str, value: Any, known: set[str]) -> dict[str, Any]:
    return loader.table(where, value, known, plain=_PLAIN_TOP_KEYS)


def _limits(where: str, raw: Any) -> Limits:
    names = {f.name: f for f in fields(Limits)}
    doc = _table(where, raw, set(names))
    values = {}
    for name, value in doc.items():
        is_int = names[name].type in ("int", int)
        values[name] = _number(f"{where}.{name}", value, int if is_int else float, 0 if is_int else 0.0,
                               low_open=True)
    limits = Limits(**values)
    if limits.dedup_horizon_seconds <= limits.segment_max_seconds:
        raise ConfigError(f"{where}.dedup_horizon_seconds ({limits.dedup_horizon_seconds:g}) must be over "
                          f"segment_max_seconds ({limits.segment_max_seconds:g}): the journal of an open segment "
                          "must stay whole")
    return limits


def _metrics(where: str, raw: Any, apps: Mapping[str, AppConfig]) -> MetricsConfig:
    doc = _table(where, raw, {"enabled", "token_sha256"})
    enabled = loader.boolean(f"{where}.enabled", doc.get("enabled", True))
    digest = doc.get("token_sha256")
    if digest is not None:
        loader.token_hash(f"{where}.token_sha256", digest)
    same = [a.name for a in apps.values() if a.token_sha256 == digest]
    if same:
        raise ConfigError(f"{where}.token_sha256 is the token of app {same[0]!r}: the scraper needs its own token")
    return MetricsConfig(enabled, digest)


def _export(where: str, raw: Any) -> ExportConfig:
    from ldp.ingest.estimates_export import MAX_ITEMS

    doc = _table(where, raw, {"max_items", "otlp_endpoint", "otlp_timeout_seconds"})
    max_items = _number(f"{where}.max_items", doc.get("max_items", 100), int, 1)
    if max_items > MAX_ITEMS:
        raise ConfigError(f"{where}.max_items must be <= {MAX_ITEMS:,} (a scrape of bounded size), got {max_items:,}")
    endpoint = doc.get("otlp_endpoint")
    if endpoint is not None and (not isinstance(endpoint, str) or not re.match(r"https?://[^\s/]+(/\S*)?\Z", endpoint)):
        raise ConfigError(f"{where}.otlp_endpoint must be an http(s) URL such as http://localhost:4318/v1/metrics, "
                          f"got {endpoint!r}")
    timeout = _number(f"{where}.otlp_timeout_seconds", doc.get("otlp_timeout_seconds", 10.0), float, 0.001)
    return ExportConfig(max_items, endpoint, timeout)


def _analysts(where: str, raw: Any, apps: Mapping[str, AppConfig], metrics: MetricsConfig) -> tuple[str, ...]:
    """``[analysts] tokens_sha256``: a list of hashes, none of them an app's or the scraper's (an upload token must not
    read the estimates, and an analyst's must not upload: each role has tokens of its own)."""
    doc = _table(where, raw, {"tokens_sha256"})
    if "tokens_sha256" not in doc:
        raise ConfigError(f"{where} needs tokens_sha256 = [\"<64 hex digits>\", ...] (run 'ldp serve token --analyst')")
    digests = doc["tokens_sha256"]
    if not isinstance(digests, list):
        raise ConfigError(f"{where}.tokens_sha256 must be a list of hashes, tokens_sha256 = [\"<64 hex digits>\", ...] "
                          f"(run 'ldp serve token --analyst'), got {type(digests).__name__} {digests!r}")
    for i, digest in enumerate(digests):
        loader.token_hash(f"{where}.tokens_sha256[{i}]", digest, "ldp serve token --analyst")
        same = [a.name for a in apps.values() if a.token_sha256 == digest]
        if same:
            raise ConfigError(f"{where}.tokens_sha256[{i}] is the upload token of app {same[0]!r}: an analyst needs a "
                              "token of their own (run 'ldp serve token --analyst')")
        if digest == metrics.token_sha256:
            raise ConfigError(f"{where}.tokens_sha256[{i}] is the [metrics] token: an analyst needs a token of their "
                              "own (run 'ldp serve token --analyst')")
    return tuple(dict.fromkeys(digests))


def _app(where: str, name: str, raw: Any, base: Path) -> AppConfig:
    if not APP_NAME_RE.match(name):
        raise ConfigError(f"{where}: an app name is 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or "
                          f"digit; got {name!r}")
    doc = _table(where, raw, {"token_sha256", "specs"})
    digest = loader.token_hash(f"{where}.token_sha256", doc.get("token_sha256"))
    paths = doc.get("specs")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise ConfigError(f"{where}.specs must be a non-empty list of spec file paths, got {paths!r}")
    resolved = tuple(base / p for p in paths)
    specs: dict[str, CollectionSpec] = {}
    for p in resolved:
        if not p.is_file():
            raise ConfigError(f"{where}.specs: no such spec file: {p}")
        try:
            spec = CollectionSpec.load(p)
        except ValueError as exc:
            raise ConfigError(f"{where}.specs: {p} is not a valid spec: {exc}") from None
        if (other := specs.get(spec.fingerprint)) is not None and other != spec:
            raise ConfigError(f"{where}.specs: {p} and another spec file have the same fingerprint "
                              f"{spec.fingerprint} but differ (in their release thresholds, which no fingerprint "
                              "covers): keep one")
        specs[spec.fingerprint] = spec
    return AppConfig(name, digest, resolved, specs)


def parse_config(doc: Mapping[str, Any], base_dir: str | os.PathLike[str], *, path: Path | None = None,
                 source: str = "config") -> IngestConfig:
    """Validate a decoded config document; relative paths are taken from ``base_dir``."""
    base = Path(base_dir)
    top = _table(source, dict(doc), set(TOP_LEVEL_KEYS))
    replica = check_replica(top["replica"], f"{source}: replica") if "replica" in top else None
    data_dir = top.get("data_dir", "data")
    if not isinstance(data_dir, str) or not data_dir:
        raise ConfigError(f"{source}: data_dir must be a path, got {data_dir!r}")
    limits = _limits(f"{source}: [limits]", top.get("limits", {}))
    fold = _table(f"{source}: [fold]", top.get("fold", {}), {"every_seconds", "windows"})
    every = _number(f"{source}: [fold].every_seconds", fold.get("every_seconds", 60.0), float, 0.0)
    windows = _number(f"{source}: [fold].windows", fold.get("windows", 14), int, 1)
    apps_doc = _table(f"{source}: [apps]", top.get("apps", {}), set(top.get("apps", {})))
    if not apps_doc:
        raise ConfigError(f"{source}: no [apps.<name>] table: the ingest service would accept nothing")
    apps = {name: _app(f"{source}: [apps.{name}]", name, raw, base) for name, raw in apps_doc.items()}
    seen: dict[str, str] = {}
    for app in apps.values():
        if app.token_sha256 in seen:
            raise ConfigError(f"{source}: apps {seen[app.token_sha256]!r} and {app.name!r} have the same token; "
                              "a token identifies one app")
        seen[app.token_sha256] = app.name
    metrics = _metrics(f"{source}: [metrics]", top.get("metrics", {}), apps)
    analysts = _analysts(f"{source}: [analysts]", top["analysts"], apps, metrics) if "analysts" in top else ()
    public = top.get("public", False)
    if not isinstance(public, bool):
        raise ConfigError(f"{source}: public must be true (the dashboard and /v1/estimates answer without a token) "
                          f"or false, got {public!r}")
    export = _export(f"{source}: [export]", top.get("export", {}))
    origins = cors_origins(f"{source}: cors_origins", top.get("cors_origins", []))
    storage = _storage(f"{source}: [storage]", top["storage"], base) if "storage" in top else None
    if storage is not None and replica is None:
        raise ConfigError(f"{source}: [storage] is shared by replicas: give this one a name (replica = \"...\" at the "
                          "top, or ldp serve --replica NAME)")
    return IngestConfig(path, (base / data_dir).resolve(), limits, apps, every, metrics=metrics,
                           fold_windows=windows, cors_origins=origins, replica=replica, storage=storage,
                           analysts=analysts, public=public, export=export)


def load_config(path: str | os.PathLike[str]) -> IngestConfig:
    """Read and validate a TOML config file (:class:`ConfigError` saying what is wrong)."""
    p = Path(path)
    return parse_config(loader.read_toml(p), p.resolve().parent, path=p, source=os.fspath(p))


# issue 83's renames, the old names kept for one more release
__getattr__ = renamed_attributes(__name__, {"CollectorConfig": "IngestConfig"})
