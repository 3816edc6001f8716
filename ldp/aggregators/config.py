"""An aggregator's TOML config (``ldp serve --role leader|helper --config FILE``; issue 71, item 3).

Each aggregator has its own, in its own organisation; nothing in one is the other's secret but the tasks' verify
keys (which they share) and the leader's token (the helper keeps only its hash)::

    role = "leader"                      # or "helper" (``--role`` must say the same)
    store = "/var/lib/ldp/leader"        # its own store: a folder, s3://..., az://... (never the other's)
    hpke_key = "leader-hpke.json"        # its HPKE key pair (``ldp serve keygen``), mode 0600
    records_key = "leader-records.json"  # optional: the key pair its job shares are sealed to at rest (default
                                         # hpke_key; ``ldp.aggregators.sealing``), never in its store
    job_retention = 0                    # seconds a released window's job records are kept (default 0)
    job_size = 1000                      # leader: reports per aggregation job
    job_bytes = 16777216                 # leader: bytes of reports per aggregation job (64 KiB to 64 MiB)
    max_job_attempts = 12                # leader: attempts of a job before it is set aside
    aggregate_every = 30                 # leader: seconds between aggregation runs (0: only when collecting)
    report_expiry = 604800               # leader: seconds after which a report is too old to take
    replica = "d1"                       # optional: this process is one replica of several over the store
                                         # (``--replica``; ``ldp.aggregators.scale_out``, docs/scale-out.md)
    job_lease = 60                       # leader replicas: seconds a driver holds a job's attempt
    jobs_in_flight = 2                   # leader: aggregation jobs with the helper at once (1 to 64)

    [operator]
    token_sha256 = "..."                 # optional: the operator's own token for /status and the page

    [store_options]                      # passed to the store (endpoint_url, ...)

    [peer]
    url = "https://helper.example"       # leader: the helper's base URL
    token_file = "helper.token"          # leader: the bearer token it presents to the helper
    token_sha256 = "..."                 # helper: the hash of the leader's token

    [collector]
    token_sha256 = "..."                 # leader: the hash of the collector's token (``ldp collect``)

    [[tasks]]
    file = "browser.task.json"           # the public task (``ldp collect task``)
    verify_key_file = "browser.verify"   # the 32-byte secret both aggregators share (base64url), mode 0600

Relative paths are relative to the config file. The file is read, its unknown keys refused and its values checked by
the services' one config loader (:mod:`ldp.web.config`), the key and token files read under their one secret-file
rule (:mod:`ldp.web.secret_files`: a regular file of its user's, mode 0600); this module declares the aggregator's
sections. Every problem is a :class:`~ldp.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldp.aggregators.task import Task, b64, unb64
from ldp.errors import ConfigError
from ldp.storage.roles import AGGREGATOR_ROLES
from ldp.web import config as loader
from ldp.web.secret_files import read_secret, write_secret

__all__ = ["AggregatorConfig", "TaskEntry", "load_config", "read_secret", "write_secret", "save_keypair",
           "load_keypair"]

KEY_FORMAT = "ldp-hpke-key/1"
PLAIN_KEYS = frozenset({"role", "store", "hpke_key", "records_key", "job_retention", "job_size", "job_bytes",
                        "max_job_attempts", "aggregate_every", "report_expiry", "replica", "job_lease",
                        "jobs_in_flight"})
"""The top-level keys that are not tables."""
TOKEN_HEADERS = ("authorization", "dap-auth-token")
"""``[peer] token_header``: ``Authorization: Bearer <token>`` (the default), or ``DAP-Auth-Token: <token>`` (what a
helper of another DAP implementation may expect, as Janus's interoperation aggregator does)."""
TABLES = frozenset({"store_options", "peer", "collector", "operator", "tasks"})


@dataclass(frozen=True)
class TaskEntry:
    task: Task
    verify_key: bytes


@dataclass(frozen=True)
class AggregatorConfig:
    role: str
    store: str
    store_options: dict[str, Any]
    hpke_key: Path
    tasks: tuple[TaskEntry, ...]
    peer_url: str | None = None
    peer_token: str | None = None
    peer_token_sha256: str | None = None
    peer_token_header: str = "authorization"
    """How the leader sends its token to the helper (:data:`TOKEN_HEADERS`)."""
    collector_token_sha256: str | None = None
    job_size: int = 1000
    job_bytes: int = 16 << 20
    max_job_attempts: int = 12
    aggregate_every: float = 30.0
    report_expiry: int = 7 * 86400
    operator_token_sha256: str | None = None
    records_key: Path | None = None
    job_retention: float = 0.0
    replica: str | None = None
    job_lease: float = 60.0
    jobs_in_flight: int = 2


def save_keypair(path: Path, keypair: Any) -> None:
    """Write an HPKE key pair (its DAP HpkeConfig and private key, base64url), mode 0600."""
    write_secret(path, json.dumps({"format": KEY_FORMAT, "config": b64(keypair.config.to_bytes()),
                                   "private_key": b64(keypair.private_key)}) + "\n")


def load_keypair(path: Path, what: str = "hpke_key") -> Any:
    """The HPKE key pair :func:`save_keypair` wrote (``what``: the config key naming it, in errors)."""
    from ldp import prio

    text = read_secret(path, what)
    try:
        data = json.loads(text)
        if data.get("format") != KEY_FORMAT:
            raise ValueError(f"not an {KEY_FORMAT} file")
        return prio.HpkeKeypair.from_bytes(unb64(data["config"], None, "config"),
                                           unb64(data["private_key"], None, "private_key"))
    except (ValueError, KeyError, AttributeError) as exc:
        raise ConfigError(f"{what}: {path}: {exc}") from None


def _str(data: dict[str, Any], key: str, where: str) -> str:
    return loader.text(f"{where}{key}", data.get(key))


def _hash(table: dict[str, Any], where: str) -> str:
    return loader.token_hash(f"{where}token_sha256", table.get("token_sha256"))


def _role(data: dict[str, Any], role: str | None) -> str:
    """The config's role, which the command line's (``role``, if given) must be."""
    cfg_role = data.get("role", role)
    if cfg_role not in AGGREGATOR_ROLES:
        raise ConfigError(f"role must be leader or helper, got {cfg_role!r}")
    if role is not None and role != cfg_role:
        raise ConfigError(f"--role {role} but the config is the {cfg_role}'s")
    return str(cfg_role)


def _peers(data: dict[str, Any], role: str, base: Path) -> dict[str, Any]:
    """``[peer]`` and ``[collector]``: the leader's way to the helper (its URL and token file) and the collector's
    token hash; the helper's hash of the leader's token (and no ``[collector]``)."""
    peer = loader.table("peer", data.get("peer", {}), {"url", "token_file", "token_sha256", "token_header"},
                        plain=PLAIN_KEYS)
    collector = loader.table("collector", data.get("collector", {}), {"token_sha256"}, plain=PLAIN_KEYS)
    if role == "helper":
        if collector:
            raise ConfigError("the helper has no [collector]: the collector talks to the leader only")
        if "token_header" in peer:
            raise ConfigError("peer.token_header is the leader's (how it sends its token to the helper): the helper "
                              "takes either header")
        return {"peer_token_sha256": _hash(peer, "peer.")}
    header = peer.get("token_header", "authorization")
    if header not in TOKEN_HEADERS:
        raise ConfigError(f"peer.token_header must be one of {', '.join(TOKEN_HEADERS)}, got {header!r}")
    peer_url = _str(peer, "url", "peer.")
    if not peer_url.startswith(("http://", "https://")):
        raise ConfigError(f"peer.url must be the helper's http(s) URL, got {peer_url!r}")
    token = read_secret(loader.relative_path(base, _str(peer, "token_file", "peer.")), "peer.token_file")
    return {"peer_url": peer_url, "peer_token": token, "peer_token_header": header,
            "collector_token_sha256": _hash(collector, "collector.")}


def _tasks(data: dict[str, Any], base: Path) -> tuple[TaskEntry, ...]:
    """``[[tasks]]``: each public task and its verify key (a secret file)."""
    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise ConfigError("[[tasks]]: at least one task (file, verify_key_file)")
    tasks = []
    for i, entry in enumerate(raw_tasks):
        where = f"tasks[{i}]."
        entry = loader.table(f"tasks[{i}]", entry, {"file", "verify_key_file"}, plain=PLAIN_KEYS)
        try:
            task = Task.load(loader.relative_path(base, _str(entry, "file", where)))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{where}file: {exc}") from None
        key_file = loader.relative_path(base, _str(entry, "verify_key_file", where))
        try:
            key = unb64(read_secret(key_file, f"{where}verify_key_file"), None, f"{where}verify_key_file")
        except ValueError as exc:  # a ConfigError is one: its message stays
            raise ConfigError(str(exc)) from None
        tasks.append(TaskEntry(task, key))
    return tuple(tasks)


def _replica(name: str) -> str:
    from ldp.aggregators.scale_out import check_replica_name

    try:
        return check_replica_name(name)
    except ValueError as exc:
        raise ConfigError(f"replica: {exc}") from None


def _leader_settings(data: dict[str, Any]) -> dict[str, Any]:
    """The leader's numbers: ``job_size``, ``job_bytes``, ``max_job_attempts``, ``aggregate_every``,
    ``report_expiry``, ``job_lease``, ``jobs_in_flight``."""
    from ldp.aggregators.jobs import (
        DEFAULT_JOB_BYTES,
        DEFAULT_JOBS_IN_FLIGHT,
        DEFAULT_MAX_JOB_ATTEMPTS,
        MAX_JOB_BYTES,
        MAX_JOBS_IN_FLIGHT,
    )

    return {"job_size": loader.number("job_size", data.get("job_size", 1000), int, 1, high=100_000),
            "job_bytes": loader.number("job_bytes", data.get("job_bytes", DEFAULT_JOB_BYTES), int, 1 << 16,
                                       high=MAX_JOB_BYTES),
            "max_job_attempts": loader.number("max_job_attempts",
                                              data.get("max_job_attempts", DEFAULT_MAX_JOB_ATTEMPTS), int, 1,
                                              high=1000),
            "aggregate_every": loader.number("aggregate_every", data.get("aggregate_every", 30), float, 0,
                                             high=86400),
            "report_expiry": loader.number("report_expiry", data.get("report_expiry", 7 * 86400), int, 1,
                                           high=10 * 366 * 86400),
            "job_lease": loader.number("job_lease", data.get("job_lease", 60), float, 1, high=86400),
            "jobs_in_flight": loader.number("jobs_in_flight", data.get("jobs_in_flight", DEFAULT_JOBS_IN_FLIGHT), int,
                                            1, high=MAX_JOBS_IN_FLIGHT)}


def load_config(path: str | os.PathLike[str], role: str | None = None) -> AggregatorConfig:
    """Read and check an aggregator's config (module docstring); ``role``: the command line's, which must agree."""
    path = Path(path)
    base = path.parent
    data = loader.table(str(path), loader.read_toml(path), PLAIN_KEYS | TABLES, plain=PLAIN_KEYS)
    cfg_role = _role(data, role)
    store = _str(data, "store", "")
    if "://" not in store and not os.path.isabs(store):
        store = str(base / store)
    options = loader.section(data, "store_options")  # passed to the store, which checks them
    hpke = _str(data, "hpke_key", "")
    operator = loader.table("operator", data.get("operator", {}), {"token_sha256"}, plain=PLAIN_KEYS)
    operator_hash = _hash(operator, "operator.") if operator else None
    peers, settings = _peers(data, cfg_role, base), _leader_settings(data)
    records = data.get("records_key")
    replica = None if data.get("replica") is None else _replica(_str(data, "replica", ""))
    retention = loader.number("job_retention", data.get("job_retention", 0), float, 0, high=10 * 366 * 86400)
    return AggregatorConfig(cfg_role, store, dict(options), base / hpke, _tasks(data, base),
                            operator_token_sha256=operator_hash, job_retention=retention, replica=replica,
                            records_key=None if records is None else base / _str(data, "records_key", ""),
                            **peers, **settings)
