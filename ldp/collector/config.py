"""The collector's configuration: one TOML file (see docs/collector.md), loaded by :func:`load_config`.

Paths in the file (``data_dir``, each app's ``specs``) are relative to the file's folder. Tokens are
never stored: an app has the SHA-256 of its bearer token (:func:`new_token` makes one, 32 random
bytes in URL-safe base64, so one unsalted hash suffices)."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import re
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ldp.errors import ConfigError
from ldp.spec import CollectionSpec

__all__ = ["ConfigError", "Limits", "AppConfig", "CollectorConfig", "load_config", "parse_config", "new_token",
           "token_sha256", "APP_NAME_RE", "MetricsConfig", "check_origin", "check_replica", "StorageConfig"]

APP_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
"""An app's name: it names a folder under ``DATA/apps``."""
_HASH_RE = re.compile(r"[0-9a-f]{64}\Z")


@dataclass(frozen=True)
class Limits:
    """Request and segment limits (the ``[limits]`` table). ``max_buffered_bytes`` bounds the request
    bodies held at once by all requests together (as received plus inflated, until stored). A rejected line
    over ``max_reject_line_bytes`` is stored only as a prefix and a digest, and each app stores at most
    ``reject_bytes_per_day`` of rejects per UTC day (:mod:`ldp.collector.rejects`). A batch id is recognised
    as a duplicate for ``dedup_horizon_seconds`` after it was stored (:mod:`ldp.collector.journal`).
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
class StorageConfig:
    """The ``[storage]`` table: the store shared by the replicas (``url``: ``s3://bucket/prefix``, or a folder every
    replica mounts) and its options (``endpoint_url`` of an S3-compatible server, ``region_name``). Credentials come
    from the environment (``AWS_ACCESS_KEY_ID``, ...), never from this file."""

    url: str
    options: Mapping[str, str] = field(default_factory=dict)
    claim_seconds: float = 30.0
    """How long a replica's claim on its name lasts past its last renewal (``claim_seconds``): a replica killed on
    another host is replaced under its name this long after it stopped (:mod:`ldp.collector.claim`)."""

    def open(self) -> Any:
        """The :class:`~ldp.storage.Store`."""
        from ldp.storage import open_store

        return open_store(self.url, dict(self.options) or None)


@dataclass(frozen=True)
class CollectorConfig:
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
    """The web origins whose pages may upload (``cors_origins``; ``("*",)``: any): see :mod:`ldp.collector.cors`.
    Empty: no CORS headers at all."""
    replica: str | None = None
    """This process's name among several collectors behind one balancer (``replica``, or ``ldp serve --replica``):
    every sample of ``/metrics`` carries it as the label ``replica``, and ``/healthz`` says it. ``None``: one
    collector, no label."""
    storage: StorageConfig | None = None
    """Where batches are stored: ``None``, the local ``data_dir`` (segments, journals); a :class:`StorageConfig`,
    chunks in the shared store (:mod:`ldp.collector.chunklog`), one replica among several."""

    def app_dir(self, app: str) -> Path:
        """``DATA/apps/<app>``."""
        return self.data_dir / "apps" / app

    def closed_dir(self, app: str) -> Path:
        """Where an app's closed (immutable) segments are: the input folder of ``ldp aggregate``."""
        return self.app_dir(app) / "segments" / "closed"


def _storage(where: str, raw: Any, base: Path) -> StorageConfig:
    doc = _table(where, raw, {"url", "endpoint_url", "region_name", "claim_seconds"})
    claim = doc.get("claim_seconds", 30.0)
    if isinstance(claim, bool) or not isinstance(claim, (int, float)) or not 1 <= claim <= 3600:
        raise ConfigError(f"{where}.claim_seconds must be a number of seconds in [1, 3600], got {claim!r}")
    url = doc.get("url")
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{where}.url must be s3://bucket[/prefix] or a folder, got {url!r}")
    options: dict[str, str] = {}
    for key in ("endpoint_url", "region_name"):
        if key in doc:
            if not isinstance(doc[key], str) or not doc[key]:
                raise ConfigError(f"{where}.{key} must be a non-empty string, got {doc[key]!r}")
            options[key] = doc[key]
    if "://" not in url:
        if options:
            raise ConfigError(f"{where}: endpoint_url and region_name are for object storage, not a folder")
        url = str((base / url).resolve())
    elif not url.startswith(("s3://", "file://")):
        raise ConfigError(f"{where}.url: only s3:// object storage or a folder is supported, got {url!r}")
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
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ConfigError(f"{where} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    if value < low or (low_open and value == low) or value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(f"{where} must be {'>' if low_open else '>='} {low}, got {value!r}")
    return kind(value)


def _table(where: str, value: Any, known: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table, got {type(value).__name__}")
    unknown = sorted(set(value) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))} "
                          f"(known: {', '.join(sorted(known))})")
    return value


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
    enabled = doc.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.enabled must be true or false, got {enabled!r}")
    digest = doc.get("token_sha256")
    if digest is not None and (not isinstance(digest, str) or not _HASH_RE.match(digest)):
        raise ConfigError(f"{where}.token_sha256 must be the 64 lowercase hex digits of sha256(token) (run "
                          f"'ldp serve token'), got {digest!r}")
    same = [a.name for a in apps.values() if a.token_sha256 == digest]
    if same:
        raise ConfigError(f"{where}.token_sha256 is the token of app {same[0]!r}: the scraper needs its own token")
    return MetricsConfig(enabled, digest)


_ORIGIN_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>\[[^\]/?#]*\]|[^/:?#\[\]]*)"
                        r"(?::(?P<port>[^/?#]*))?(?P<rest>.*)\Z", re.S)
_LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _ipv6_text(address: ipaddress.IPv6Address) -> str:
    """An IPv6 address as browsers write it in an origin (WHATWG URL: lowercase hex, the first longest run of two
    or more zero pieces as ``::``, never dotted IPv4)."""
    pieces = [int.from_bytes(address.packed[i:i + 2], "big") for i in range(0, 16, 2)]
    best, start = (0, -1), None
    for i, piece in enumerate([*pieces, 1]):
        if piece == 0 and start is None:
            start = i
        elif piece != 0 and start is not None:
            best = max(best, (i - start, -start))
            start = None
    run, first = best[0], -best[1]
    hexes = [f"{p:x}" for p in pieces]
    if run < 2:
        return ":".join(hexes)
    return ":".join(hexes[:first]) + "::" + ":".join(hexes[first + run:])


def check_origin(origin: str) -> str | None:
    """What is wrong with ``origin`` as an entry of ``cors_origins`` (``None``: nothing). An entry is compared
    byte for byte with the ``Origin`` header, so it must be written as browsers write it: ``http`` or ``https``,
    ``://``, the host in lowercase (ASCII: ``xn--`` for an internationalised name; an IP address in its usual
    form), a port only when not the scheme's default, and nothing after (no path, not even ``/``)."""
    if origin == "null":
        return "is the origin of sandboxed frames and local files, which any site can produce: not allowed"
    m = _ORIGIN_RE.match(origin)
    if m is None or not m["host"] or "@" in m["host"]:
        return "is not an origin: write scheme://host[:port], e.g. 'https://app.example.com'"
    scheme, host, port, rest = m["scheme"].lower(), m["host"], m["port"], m["rest"]
    if scheme not in _DEFAULT_PORTS:
        return f"has the scheme {m['scheme']!r}: an origin here is http:// or https://"
    if port is not None and port.isdigit():
        port = str(int(port))
    canonical = f"{scheme}://{host.lower()}" + (f":{port}" if port and port != _DEFAULT_PORTS[scheme] else "")
    if rest:
        what = "a trailing slash" if rest == "/" else "a path, query or fragment"
        return f"has {what}: an origin is scheme://host[:port] only; write {canonical!r}"
    if not host.isascii():
        return "has a host that is not ASCII: write an internationalised domain name in its xn-- (punycode) form"
    if canonical != origin:
        return (f"is not written as browsers send it (lowercase, no default port, no leading zero); write "
                f"{canonical!r}")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        return f"has the port {port!r}: a port is 1 to 65535"
    if host.startswith("["):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"has the host {host!r}, not an IPv6 address"
        if address.scope_id or f"[{_ipv6_text(address)}]" != host:
            return f"has the IPv6 address {host!r}, which browsers write as '[{_ipv6_text(address)}]'"
        return None
    labels = host.split(".")
    if labels[-1].isdigit() or labels[-1].startswith("0x"):  # browsers read a host ending in a number as IPv4
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return f"has the host {host!r}, which ends in a number but is not an IPv4 address like 192.0.2.1"
        return None
    if len(host) > 253 or not all(_LABEL_RE.match(label) for label in labels):
        return f"has the host {host!r}, not a valid host name"
    return None


def _cors_origins(where: str, raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(o, str) for o in raw):
        raise ConfigError(f"{where} must be a list of origins such as \"https://app.example.com\", got {raw!r}")
    if "*" in raw and len(raw) > 1:
        raise ConfigError(f"{where}: \"*\" (any origin) must be alone, got {raw!r}")
    for origin in raw:
        if origin != "*" and (problem := check_origin(origin)) is not None:
            raise ConfigError(f"{where}: {origin!r} {problem}")
    return tuple(dict.fromkeys(raw))


def _app(where: str, name: str, raw: Any, base: Path) -> AppConfig:
    if not APP_NAME_RE.match(name):
        raise ConfigError(f"{where}: an app name is 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or "
                          f"digit; got {name!r}")
    doc = _table(where, raw, {"token_sha256", "specs"})
    digest = doc.get("token_sha256")
    if not isinstance(digest, str) or not _HASH_RE.match(digest):
        raise ConfigError(f"{where}.token_sha256 must be the 64 lowercase hex digits of sha256(token) (run "
                          f"'ldp serve token'), got {digest!r}")
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
                 source: str = "config") -> CollectorConfig:
    """Validate a decoded config document; relative paths are taken from ``base_dir``."""
    base = Path(base_dir)
    top = _table(source, dict(doc), {"data_dir", "limits", "fold", "apps", "metrics",
                                            "cors_origins", "replica", "storage"})
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
        raise ConfigError(f"{source}: no [apps.<name>] table: the collector would accept nothing")
    apps = {name: _app(f"{source}: [apps.{name}]", name, raw, base) for name, raw in apps_doc.items()}
    seen: dict[str, str] = {}
    for app in apps.values():
        if app.token_sha256 in seen:
            raise ConfigError(f"{source}: apps {seen[app.token_sha256]!r} and {app.name!r} have the same token; "
                              "a token identifies one app")
        seen[app.token_sha256] = app.name
    metrics = _metrics(f"{source}: [metrics]", top.get("metrics", {}), apps)
    origins = _cors_origins(f"{source}: cors_origins", top.get("cors_origins", []))
    storage = _storage(f"{source}: [storage]", top["storage"], base) if "storage" in top else None
    if storage is not None and replica is None:
        raise ConfigError(f"{source}: [storage] is shared by replicas: give this one a name (replica = \"...\" at the "
                          "top, or ldp serve --replica NAME)")
    return CollectorConfig(path, (base / data_dir).resolve(), limits, apps, every, metrics=metrics,
                           fold_windows=windows, cors_origins=origins, replica=replica, storage=storage)


def load_config(path: str | os.PathLike[str]) -> CollectorConfig:
    """Read and validate a TOML config file (:class:`ConfigError` saying what is wrong)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {p}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    return parse_config(doc, p.resolve().parent, path=p, source=os.fspath(p))
