"""A replica's claim on its name in the shared store: one process per ``replica`` name, by construction.

Two processes under one name would write chunks under one prefix and count as one replica; before this claim,
their ``<UTC second>-<seq>`` names overwrote each other's chunks and acknowledged batches were lost. Now:

* **At start** the replica takes the lease ``replicas/<name>/lease/`` (:class:`ldp.storage.lease.Lease`, renewed
  every ``claim_seconds/4``): a second process under a live claim refuses to start
  (:class:`~ldp.errors.LeaseHeldError` naming the first, its host and pid, and when its claim expires).
* **Every chunk key** carries the claim's fencing token and a sequence number of the claim
  (:func:`ldp.pipeline.chunks.chunk_key`), so a key never repeats — not after a restart, not with the clock
  stepped back — and chunks are written with create-if-absent: a collision is an error, never an overwrite.
* **Every write** checks the claim first (:class:`~ldp.storage.lease.FencedStore`): a replica paused past its claim,
  or whose claim another process took, answers 503 until it holds its claim again.
* **Restarted on the same host** after being killed, a replica takes over its own dead predecessor's claim at once
  (:func:`own_dead_claim`): the claim is the one this data folder last held, on this host, and its process is gone.
  Elsewhere (another host, another data folder) the claim is taken over when it expires.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable
from pathlib import Path

from ldp.storage import Store
from ldp.storage.lease import Lease, LeaseInfo, pid_gone

__all__ = ["replica_claim", "own_dead_claim", "remember_claim", "CLAIM_FILE"]

CLAIM_FILE = "replica-claim.json"
"""The file in the data folder naming the claim this folder's replica last held."""


def own_dead_claim(data_dir: Path) -> Callable[[LeaseInfo], bool]:
    """The takeover rule of a replica using ``data_dir``: a live claim may be taken before it expires when it is the
    one this folder's replica last held (:data:`CLAIM_FILE`), held on this host, by a process that is gone."""

    def rule(info: LeaseInfo) -> bool:
        try:
            last = json.loads((data_dir / CLAIM_FILE).read_text())
        except (OSError, ValueError):
            return False
        return (isinstance(last, dict) and last.get("holder") == info.holder and info.host == socket.gethostname()
                and pid_gone(info.pid))

    return rule


def replica_claim(store: Store, replica: str, data_dir: Path, ttl: float) -> Lease:
    """The claim of ``replica``'s name in ``store`` (module docstring), not yet taken."""
    return Lease(store, f"replicas/{replica}/lease/", f"replica {replica}", ttl=ttl, takeover=own_dead_claim(data_dir))


def remember_claim(lease: Lease, data_dir: Path) -> None:
    """Write which claim this folder's replica holds (for :func:`own_dead_claim` after a crash); best effort."""
    from ldp.jobs.store import write_atomic

    with contextlib.suppress(OSError):
        data_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(data_dir / CLAIM_FILE, json.dumps({"holder": lease.holder, "token": lease.token}).encode())
