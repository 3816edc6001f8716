"""``ldp serve --role leader|helper``: an aggregator built from its config and served (issue 71, item 3).

:func:`build` makes the :class:`~ldp.aggregators.leader.Leader` or :class:`~ldp.aggregators.helper.Helper` from an
:class:`~ldp.aggregators.config.AggregatorConfig` (its own store, opened with its role, so that it can touch only
``aggregators/<role>/``); :func:`serve` runs it under uvicorn, the leader with a background thread that runs the
aggregation jobs every ``aggregate_every`` seconds (collections run them too, for their window).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ldp.aggregators.config import AggregatorConfig, load_keypair
from ldp.errors import AggregatorError, ConfigError, StorageError

__all__ = ["build", "create_service", "serve", "Aggregating"]

logger = logging.getLogger("ldp.aggregators")


def hold_role(config: AggregatorConfig) -> tuple[Any, Any]:
    """The aggregator's store, opened with its role, and the role's lease taken (:mod:`ldp.storage.lease`: one
    process per role and store, so that the in-memory state — the report IDs seen, the jobs in progress — is the
    only one; a predecessor that died on this host is taken over at once, a live one is refused with
    :class:`~ldp.errors.LeaseHeldError` naming it), or, for a replica (``config.replica``), its name's lease
    (:mod:`ldp.storage.lease`: one process per name; what replicas share is in the store,
    :mod:`ldp.aggregators.scale_out`). Returns (the store fenced by the lease, the lease)."""
    from ldp.storage import open_store
    from ldp.storage.lease import FencedStore, Lease, dead_holder_here
    from ldp.storage.roles import RoleStore, aggregator_prefix, aggregator_role

    store = RoleStore(open_store(config.store, config.store_options or None), aggregator_role(config.role))
    if config.replica is not None:  # one of several processes: its name claimed instead (ldp.aggregators.scale_out)
        from ldp.aggregators.scale_out import replica_prefix

        lease = Lease(store, replica_prefix(config.role, config.replica),
                      f"{config.role} aggregator replica {config.replica}", takeover=dead_holder_here)
    else:
        lease = Lease(store, aggregator_prefix(config.role) + "lease/", f"{config.role} aggregator",
                      takeover=dead_holder_here)
    lease.start()
    return FencedStore(store, lease), lease


def build(config: AggregatorConfig, store: Any, *, helper: Any = None) -> Any:
    """The aggregator of ``config`` over ``store`` (:func:`hold_role`'s); ``helper``: the leader's peer, default an
    HTTP client of ``peer.url``."""
    from ldp.aggregators.helper import Helper
    from ldp.aggregators.http import HelperClient
    from ldp.aggregators.leader import Leader

    keypair = load_keypair(config.hpke_key)
    check_device_configs(config, keypair.config.to_bytes())
    records_key = None if config.records_key is None else load_keypair(config.records_key, "records_key")
    tasks = [e.task for e in config.tasks]
    keys = {e.task.task_id: e.verify_key for e in config.tasks}
    common: dict[str, Any] = {"records_key": records_key, "job_retention": config.job_retention}
    if config.role == "helper":
        return Helper(tasks, store, keypair, keys, replicated=config.replica is not None, **common)
    assert config.peer_url is not None and config.peer_token is not None
    peer = helper if helper is not None else HelperClient(config.peer_url, config.peer_token,
                                                          token_header=config.peer_token_header)
    return Leader(tasks, store, keypair, keys, peer, job_size=config.job_size, report_expiry=config.report_expiry,
                  job_bytes=config.job_bytes, max_job_attempts=config.max_job_attempts, replica=config.replica,
                  job_lease=config.job_lease, jobs_in_flight=config.jobs_in_flight, **common)


def check_device_configs(config: AggregatorConfig, mine: bytes) -> None:
    """Refuse to start (:class:`~ldp.errors.ConfigError`) when a task file names, for this aggregator's role, an HPKE
    config other than its own key's ``mine``: its devices would seal shares that this aggregator cannot open."""
    index = 0 if config.role == "leader" else 1
    for entry in config.tasks:
        configs = entry.task.hpke_configs
        if configs is not None and configs[index] != mine:
            raise ConfigError(f"task {entry.task.id_text} ({entry.task.app}/{entry.task.metric}): its hpke_configs."
                              f"{config.role} is not this {config.role}'s key's config ({config.hpke_key}): devices "
                              "would seal to another key; write the task again with this key's config "
                              f"(ldp collect task --{config.role}-config, as `ldp serve keygen` printed it)")


class Aggregating:
    """The leader's background aggregation: every ``every`` seconds, the jobs of every task; a failure (the helper
    away, the store failing) is logged and tried again at the next turn."""

    def __init__(self, leader: Any, every: float) -> None:
        self.leader, self.every = leader, every
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ldp-aggregating", daemon=True)

    def start(self) -> None:
        if self.every > 0:
            self.thread.start()

    def _run(self) -> None:
        while not self.stop_event.wait(self.every):
            try:
                done = self.leader.run_aggregation_jobs()
                if done.get("jobs"):
                    logger.info("aggregated %d jobs: %d reports prepared, %d refused", done["jobs"],
                                done.get("prepared", 0), done.get("refused", 0))
            except (AggregatorError, StorageError, OSError) as exc:
                logger.warning("aggregation run failed (tried again in %g s): %s", self.every, exc)

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=60)


def create_service(config: AggregatorConfig, *, helper: Any = None) -> Any:
    """The Starlette app of the aggregator ``config`` describes: its role's lease held (:func:`hold_role`) until the
    app's lifespan ends, the leader's background aggregation running meanwhile."""
    import contextlib

    from ldp.aggregators.http import create_app

    store, lease = hold_role(config)
    try:
        aggregator = build(config, store, helper=helper)
    except BaseException:
        lease.stop()
        raise
    app = create_app(aggregator, peer_token_sha256=config.peer_token_sha256,
                     collector_token_sha256=config.collector_token_sha256,
                     operator_token_sha256=config.operator_token_sha256)
    background = Aggregating(aggregator, config.aggregate_every if config.role == "leader" else 0)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        background.start()
        try:
            yield
        finally:
            background.stop()
            if hasattr(aggregator, "stop"):
                aggregator.stop()
            lease.stop()

    app.router.lifespan_context = lifespan
    app.state.lease = lease
    return app


def serve(config: AggregatorConfig, host: str, port: int, announce: Any = None, *, http: str = "native") -> int:
    """Serve until SIGTERM/SIGINT; the exit status. ``announce`` is given the start-up line (the address listened
    on) once the server listens. ``http``: ``native`` (:func:`serve_native`) or ``uvicorn``."""
    if http == "native":
        return serve_native(config, host, port, announce)
    if http != "uvicorn":
        raise ValueError(f"http is native or uvicorn, got {http!r}")
    import uvicorn

    app = create_service(config)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                           lifespan="on"))
    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets)
        for s in server.servers:
            for sock in s.sockets:
                name = sock.getsockname()
                if announce is not None:
                    announce(_announcement(config, name[0], name[1]))

    server.startup = startup  # type: ignore[method-assign]
    server.run()
    return 0 if server.started else 2


def _announcement(config: AggregatorConfig, host: str, port: int) -> str:
    return (f"ldp serve: the {config.role} listens on http://{host}:{port} ({len(config.tasks)} task(s), store "
            f"{config.store})")


GATHER = 0.005
"""The least seconds between the starts of two of the leader's upload batches while uploads keep coming: each
batch is one chunk, one new object in the store (a file created and synced costs ~0.8 ms of CPU on a nearly full
ext4 disk), so that at most ~200 are written a second under any load, for at most 5 ms more latency."""


def front_for(app: Any, role: str, host: str, port: int, *, reuse_port: bool = False) -> Any:
    """The binding's HTTP front serving ``app`` (:class:`ldp.web.front.Front`): at the leader, its uploads taken in
    batches (:class:`ldp.aggregators.uploads.UploadBatches`), each opened as it arrives (the leader's key and its
    tasks by their names in the upload path); the bodies read up to the role's largest route's."""
    from functools import partial

    from ldp.aggregators.cors import cors_headers
    from ldp.aggregators.routes import MAX_BODY, MAX_REPORT, MAX_REQUEST
    from ldp.aggregators.task import b64
    from ldp.aggregators.uploads import UploadBatches
    from ldp.web.front import Front

    cors = partial(cors_headers, role)  # on the front's own 500s too, as on every answer of a device route
    if role == "leader":
        leader = app.state.aggregator
        return Front(app, host, port, max_body=max(MAX_REPORT, MAX_REQUEST), reuse_port=reuse_port,
                     batch=UploadBatches(leader), gather=GATHER, workers=2, error_headers=cors, keypair=leader.keypair,
                     upload_tasks={b64(tid): tid for tid in leader.state})
    return Front(app, host, port, max_body=max(MAX_BODY, MAX_REQUEST), reuse_port=reuse_port, error_headers=cors)


def serve_native(config: AggregatorConfig, host: str, port: int, announce: Any = None) -> int:
    """:func:`serve` on the binding's HTTP front (:func:`front_for`), until SIGTERM or SIGINT."""
    import signal

    # replicas on one host may share a port (SO_REUSEPORT: the kernel spreads the connections over them)
    front = front_for(create_service(config), config.role, host, port, reuse_port=config.replica is not None)
    done = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        front.start()
        if announce is not None:
            announce(_announcement(config, *front.address))
        while not done.wait(1.0):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        front.stop()
    return 0
