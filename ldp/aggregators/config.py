"""An aggregator's TOML config (``ldp serve --role leader|helper --config FILE``; issue 71, item 3).

Each aggregator has its own, in its own organisation; nothing in one is the other's secret but the tasks' verify
keys (which they share) and the leader's token (the helper keeps only its hash)::

    role = "leader"                      # or "helper" (``--role`` must say the same)
    store = "/var/lib/ldp/leader"        # its own store: a folder, s3://..., az://... (never the other's)
    hpke_key = "leader-hpke.json"        # its HPKE key pair (``ldp serve keygen``), mode 0600
    job_size = 1000                      # leader: reports per aggregation job
    aggregate_every = 30                 # leader: seconds between aggregation runs (0: only when collecting)
    report_expiry = 604800               # leader: seconds after which a report is too old to take

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

Relative paths are relative to the config file. Every problem is a :class:`~ldp.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldp.aggregators.task import Task, b64, unb64
from ldp.errors import ConfigError
from ldp.storage.roles import AGGREGATOR_ROLES

__all__ = ["AggregatorConfig", "TaskEntry", "load_config", "read_secret", "write_secret", "save_keypair",
           "load_keypair"]

KEY_FORMAT = "ldp-hpke-key/1"


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
    collector_token_sha256: str | None = None
    job_size: int = 1000
    aggregate_every: float = 30.0
    report_expiry: int = 7 * 86400
    operator_token_sha256: str | None = None


def read_secret(path: Path, what: str) -> str:
    """A secret file's text (stripped); refused when others may read it."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{what}: {path} is readable by others (mode {stat.S_IMODE(mode):o}): chmod 600 it")
    return text


def write_secret(path: Path, text: str) -> None:
    """Create ``path`` holding ``text``, mode 0600 (refuses to overwrite)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def save_keypair(path: Path, keypair: Any) -> None:
    """Write an HPKE key pair (its DAP HpkeConfig and private key, base64url), mode 0600."""
    write_secret(path, json.dumps({"format": KEY_FORMAT, "config": b64(keypair.config.to_bytes()),
                                   "private_key": b64(keypair.private_key)}) + "\n")


def load_keypair(path: Path) -> Any:
    """The HPKE key pair :func:`save_keypair` wrote."""
    from ldp import prio

    text = read_secret(path, "hpke_key")
    try:
        data = json.loads(text)
        if data.get("format") != KEY_FORMAT:
            raise ValueError(f"not an {KEY_FORMAT} file")
        return prio.HpkeKeypair.from_bytes(unb64(data["config"], None, "config"),
                                           unb64(data["private_key"], None, "private_key"))
    except (ValueError, KeyError, AttributeError) as exc:
        raise ConfigError(f"hpke_key: {path}: {exc}") from None


def _str(data: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}{key} must be a non-empty string")
    return value


def load_config(path: str | os.PathLike[str], role: str | None = None) -> AggregatorConfig:
    """Read and check an aggregator's config (module docstring); ``role``: the command line's, which must agree."""
    path = Path(path)
    base = path.parent
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from None
    known = {"role", "store", "store_options", "hpke_key", "job_size", "aggregate_every", "report_expiry", "peer",
             "collector", "operator", "tasks"}
    if unknown := sorted(set(data) - known):
        raise ConfigError(f"{path}: unknown keys {', '.join(unknown)}")
    cfg_role = data.get("role", role)
    if cfg_role not in AGGREGATOR_ROLES:
        raise ConfigError(f"role must be leader or helper, got {cfg_role!r}")
    if role is not None and role != cfg_role:
        raise ConfigError(f"--role {role} but the config is the {cfg_role}'s")
    store = _str(data, "store", "")
    assert store is not None
    if "://" not in store and not os.path.isabs(store):
        store = str(base / store)
    options = data.get("store_options", {})
    if not isinstance(options, dict):
        raise ConfigError("store_options must be a table")
    hpke = _str(data, "hpke_key", "")
    assert hpke is not None
    peer = data.get("peer", {})
    collector = data.get("collector", {})
    if not isinstance(peer, dict) or not isinstance(collector, dict):
        raise ConfigError("peer and collector must be tables")
    peer_url = peer_token = peer_hash = collector_hash = None
    if cfg_role == "leader":
        peer_url = _str(peer, "url", "peer.")
        if not peer_url or not peer_url.startswith(("http://", "https://")):
            raise ConfigError(f"peer.url must be the helper's http(s) URL, got {peer_url!r}")
        token_file = _str(peer, "token_file", "peer.")
        peer_token = read_secret(base / str(token_file), "peer.token_file")
        collector_hash = _hash(collector, "collector.")
    else:
        peer_hash = _hash(peer, "peer.")
        if collector:
            raise ConfigError("the helper has no [collector]: the collector talks to the leader only")
    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise ConfigError("[[tasks]]: at least one task (file, verify_key_file)")
    tasks = []
    for i, entry in enumerate(raw_tasks):
        where = f"tasks[{i}]."
        if not isinstance(entry, dict) or set(entry) - {"file", "verify_key_file"}:
            raise ConfigError(f"{where} holds file and verify_key_file")
        try:
            task = Task.load(base / str(_str(entry, "file", where)))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{where}file: {exc}") from None
        key_text = read_secret(base / str(_str(entry, "verify_key_file", where)), f"{where}verify_key_file")
        try:
            key = unb64(key_text, None, f"{where}verify_key_file")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        tasks.append(TaskEntry(task, key))
    operator = data.get("operator", {})
    if not isinstance(operator, dict) or set(operator) - {"token_sha256"}:
        raise ConfigError("[operator] holds token_sha256 (the operator's own token for /status and the page)")
    operator_hash = _hash(operator, "operator.") if operator else None
    expiry = data.get("report_expiry", 7 * 86400)
    if isinstance(expiry, bool) or not isinstance(expiry, int) or not 1 <= expiry <= 10 * 366 * 86400:
        raise ConfigError(f"report_expiry must be seconds (an integer, at most 10 years), got {expiry!r}")
    job_size = data.get("job_size", 1000)
    every = data.get("aggregate_every", 30)
    if isinstance(job_size, bool) or not isinstance(job_size, int) or not 1 <= job_size <= 100_000:
        raise ConfigError(f"job_size must be an integer in [1, 100000], got {job_size!r}")
    if isinstance(every, bool) or not isinstance(every, int | float) or not 0 <= every <= 86400:
        raise ConfigError(f"aggregate_every must be seconds in [0, 86400], got {every!r}")
    return AggregatorConfig(cfg_role, store, dict(options), base / hpke, tuple(tasks), peer_url, peer_token,
                            peer_hash, collector_hash, job_size, float(every), expiry, operator_hash)


def _hash(table: dict[str, Any], where: str) -> str:
    value = table.get("token_sha256")
    if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ConfigError(f"{where}token_sha256 must be 64 lowercase hex digits (`ldp serve token` prints it)")
    return value
