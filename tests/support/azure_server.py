"""Azurite, the Azure Storage emulator, for the tests of the ``az://`` store: ``azurite-blob`` (the npm package,
pinned by ``tests/support/azurite/package-lock.json``, installed there by ``npm ci``) in its own process on a free
loopback port, its data in memory, its telemetry off. No mock of the SDK: ``azure-storage-blob`` speaks HTTP to it as
to Azure.

Where Azurite is not installed (``npm ci`` not run in ``tests/support/azurite``) or ``azure-storage-blob`` is
missing, the tests that need it are skipped — unless ``LDP_REQUIRE_AZURITE=1`` (CI), where they fail."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "azurite"
BINARY = HERE / "node_modules" / ".bin" / "azurite-blob"
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's one account and its well-known key (public, in Microsoft's documentation: a test key, no secret)."""
FAST = {"connect_timeout": "1", "read_timeout": "3", "max_attempts": "1"}


def required() -> bool:
    return os.environ.get("LDP_REQUIRE_AZURITE", "") == "1"


def unavailable(why: str) -> None:
    """Skip the test, or fail it under ``LDP_REQUIRE_AZURITE=1``."""
    if required():
        pytest.fail(f"LDP_REQUIRE_AZURITE=1 but {why}", pytrace=False)
    pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Azurite:
    """A running ``azurite-blob``: its port, the blob endpoint, the options of a client, containers made on demand;
    ``stop()`` / ``start()`` take it down and up again on the same port (its data in memory is lost)."""

    port: int
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    def connection_string(self, endpoint: str | None = None) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
                f"BlobEndpoint={endpoint or self.endpoint};")

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        """The store options of a client of this server (through ``endpoint``: a relay in front of it)."""
        return {"account_url": endpoint or self.endpoint, "account_name": ACCOUNT, "account_key": KEY}

    def container(self, name: str | None = None) -> str:
        """Create container ``name`` (a fresh one if ``None``; idempotent); return ``az://name``."""
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import BlobServiceClient

        name = name or f"c{uuid.uuid4().hex[:20]}"
        try:
            BlobServiceClient.from_connection_string(self.connection_string()).create_container(name)
        except ResourceExistsError:
            pass
        return f"az://{name}"

    def start(self) -> None:
        log = (self.workdir / "azurite.log").open("ab")
        self.proc = subprocess.Popen(
            [str(BINARY), "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--skipApiVersionCheck",
             "--loose", "--inMemoryPersistence", "--disableTelemetry", "--silent"],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)  # in memory: nothing written but its log
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"azurite-blob exited ({self.proc.returncode}): {self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"azurite-blob did not listen on port {self.port} within 30 s: {self.tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def tail(self) -> str:
        path = self.workdir / "azurite.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""


@contextmanager
def azurite_server(workdir: Path) -> Iterator[Azurite]:
    """Azurite for the duration of the block; skipped (failed under ``LDP_REQUIRE_AZURITE=1``) when it or the Azure
    SDK is not installed or does not start."""
    try:
        import azure.storage.blob  # noqa: F401
    except ImportError:
        unavailable("the Azure tests need azure-storage-blob (the azure extra)")
    if not BINARY.exists():
        unavailable(f"Azurite is not installed: run `npm ci` in {HERE}")
    server = Azurite(_free_port(), workdir)
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        unavailable(f"Azurite did not start: {exc}")
    try:
        yield server
    finally:
        server.stop()
