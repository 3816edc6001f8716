"""Helpers of the end-to-end test (tests/ingest/test_e2e_browser.py): a real ``python -m ldp serve`` on a free
loopback port, JSON over HTTP, and the headless Chromium of the machine (Debian's ``/usr/bin/chromium``,
driven by Playwright for Python; never a browser Playwright downloads)."""

from __future__ import annotations

import functools
import http.client
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REQUIRE_BROWSER = "LDP_REQUIRE_BROWSER"
ARTIFACTS = "LDP_TEST_ARTIFACTS"
ANALYST = "e2e-analyst-token-0123456789abcdefghijklmnopq"
"""The analyst token of every config :func:`write_ingest_config` writes: :func:`get_json` reads with it."""


def need_browser() -> None:
    """Skip (or, with ``LDP_REQUIRE_BROWSER=1`` as in CI, fail) when Playwright or Chromium is missing."""
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("Playwright for Python (pip install playwright; its browser download is not needed)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"Chromium at {CHROMIUM} (apt-get install chromium)")
    for module in ("starlette", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"{module} (pip install 'ldp-telemetry[serve]')")
    if not missing:
        return
    reason = "the browser end-to-end test needs " + " and ".join(missing)
    if os.environ.get(REQUIRE_BROWSER) == "1":
        pytest.fail(f"{reason}; {REQUIRE_BROWSER}=1 requires it")
    pytest.skip(reason)


def artifact_dir(tmp_path: Path) -> Path:
    """Where screenshots go: ``$LDP_TEST_ARTIFACTS`` (CI sets it) if set, else the test's ``tmp_path``."""
    folder = Path(os.environ.get(ARTIFACTS) or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def free_port() -> int:
    """A loopback port free right now (the server may still lose a race for it: :func:`serve` retries)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(port: int, path: str, timeout: float = 5.0, token: str | None = ANALYST) -> tuple[int, Any]:
    """``GET path`` on the loopback server (with ``token`` as the bearer: the analyst's by default, which reads
    ``/v1/estimates``): status and the decoded JSON body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@dataclass
class Served:
    """A running ``ldp serve``: its process, port, base URL and stderr file."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self, lines: int = 40) -> str:
        """The last lines of the server's output."""
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` s: the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def _start(config: Path, log: Path, timeout: float) -> Served:
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ldp", "serve", "--config", str(config),
                                 "--host", "127.0.0.1", "--port", str(port)], stdout=out, stderr=out)
    served = Served(proc, port, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ldp serve exited with status {proc.returncode}:\n{served.tail()}")
        try:
            if get_json(port, "/healthz", timeout=1.0)[0] == 200:
                return served
        except (OSError, ValueError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    served.stop()
    raise RuntimeError(f"ldp serve did not answer /healthz within {timeout} s:\n{served.tail()}")


@contextmanager
def serve(config: Path, log: Path, timeout: float = 30.0, tries: int = 3) -> Iterator[Served]:
    """Run ``python -m ldp serve --config CONFIG`` on a free loopback port until /healthz answers 200;
    stop it (SIGTERM, then SIGKILL) on leaving, and print its output's tail if the body failed."""
    for attempt in range(tries):
        try:
            served = _start(config, log, timeout)
            break
        except RuntimeError:
            if attempt == tries - 1 or "address already in use" not in log.read_text(errors="replace").lower():
                raise  # not a lost race for the port
    try:
        yield served
    except BaseException:
        served.stop()  # first: the tail then holds the shutdown too
        print(f"--- ldp serve output (tail of {log}) ---\n{served.tail()}", file=sys.stderr)
        raise
    finally:
        served.stop()


def write_ingest_config(tmp: Path, app: str, token: str, spec: dict[str, Any],
                           cors_origin: str | None = None) -> Path:
    """``tmp/serve.toml`` for one app uploading ``spec`` (written to ``tmp/spec.json``) with ``token``: folds every
    second, segments open for an hour (so the reports wait for a fold until the ingest service stops), the analyst
    :data:`ANALYST` (who reads the dashboard and ``/v1/estimates``), and ``cors_origins`` when a web page of
    ``cors_origin`` uploads."""
    from ldp.ingest.config import token_sha256

    (tmp / "spec.json").write_text(json.dumps(spec))
    config = tmp / "serve.toml"
    cors = f'cors_origins = ["{cors_origin}"]\n' if cors_origin else ""
    config.write_text(f'data_dir = "data"\n{cors}[limits]\nsegment_max_seconds = 3600\n[fold]\nevery_seconds = 1\n'
                      f'[analysts]\ntokens_sha256 = ["{token_sha256(ANALYST)}"]\n'
                      f'[apps.{app}]\ntoken_sha256 = "{token_sha256(token)}"\nspecs = ["spec.json"]\n')
    return config


def wait_for_fold(served: Served, app: str, reports: int, devices: int, timeout: float) -> dict[str, Any]:
    """``/v1/estimates``'s document of ``app`` once it has folded ``reports`` reports, every metric from ``devices``
    devices; ``AssertionError`` with the last document after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    doc: Any = None
    while time.monotonic() < deadline:
        status, body = get_json(served.port, "/v1/estimates")
        doc = body.get("apps", {}).get(app) if status == 200 else None
        if doc and doc.get("accepted") == reports and all(m["n"] == devices for m in doc["metrics"]):
            return dict(doc)
        time.sleep(0.2)
    raise AssertionError(f"the reports were not folded within {timeout} s: {json.dumps(doc)[:2000]}")


@contextmanager
def static_site(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on a free loopback port (another origin than the ingest service's); yield its URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]  # (a partial: set on the class below)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
