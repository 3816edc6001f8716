"""A real S3-compatible server for the tests: moto in server mode (its ``moto.server`` app, its conditional writes
made atomic as S3's are: :mod:`support.moto_atomic`), in its own process on a free loopback port. No mock of the
client library: ``s3fs``/``botocore`` speak HTTP to it as to S3."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "ldp-test", "AWS_SECRET_ACCESS_KEY": "ldp-test-secret",
               "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class S3Server:
    """A running server: its ``endpoint`` URL and process (``stop()`` / ``start()`` simulate an outage)."""

    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def options(self) -> dict[str, str]:
        """The store options of a client of this server."""
        return {"endpoint_url": self.endpoint, "key": CREDENTIALS["AWS_ACCESS_KEY_ID"],
                "secret": CREDENTIALS["AWS_SECRET_ACCESS_KEY"], "region_name": CREDENTIALS["AWS_DEFAULT_REGION"]}

    def start(self) -> None:
        with self.log.open("ab") as out:
            # moto's server, its conditional writes atomic as S3's are (support/moto_atomic.py)
            self.proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("moto_atomic.py")),
                                          "127.0.0.1", str(self.port)], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).read()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"moto server exited: {self.log.read_text()[-2000:]}") from None
                time.sleep(0.1)
        raise RuntimeError(f"moto server did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def bucket(self, name: str) -> str:
        """Create bucket ``name`` (idempotent); return ``s3://name``."""
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
                              aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
        try:
            client.create_bucket(Bucket=name)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass
        return f"s3://{name}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def s3_server(log: Path) -> Iterator[S3Server]:
    """A moto server for the duration of the block (skipped when moto[server] is not installed)."""
    pytest.importorskip("moto.server", reason="the S3 tests need moto[server] (the test extra)")
    pytest.importorskip("s3fs", reason="the S3 tests need s3fs (the s3 extra)")
    server = S3Server(free_port(), log)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Outage:
    """A TCP relay in front of a server that can be cut: :meth:`down` refuses new connections and drops the open
    ones (the store is unreachable), :meth:`up` relays again on the same port. ``delay``: seconds each piece of the
    server's answers is held (a slow store)."""

    def __init__(self, target_port: int) -> None:
        import threading

        self.delay = 0.0
        self.target_port, self.port = target_port, free_port()
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.up()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        import threading

        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    @contextmanager
    def cut(self) -> Iterator[None]:
        """The server unreachable while the block runs (the store contract's ``outage``), then relayed again."""
        self.down()
        try:
            yield
        finally:
            self.up()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept(): the port is closed now
            except OSError:
                pass
            listener.close()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def _accept(self, listener: socket.socket) -> None:
        import threading

        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b, slow in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pipe, args=(a, b, slow), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, slow: bool) -> None:
        try:
            while data := src.recv(65536):
                if slow and self.delay > 0:
                    time.sleep(self.delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
