"""moto's S3 server (``python -m moto.server``'s app and request handler) with its conditional writes made atomic,
for the tests' S3 store (:mod:`support.s3_server`).

moto 5 answers a ``PutObject`` with ``If-None-Match: *`` by looking for the key and then writing it, unlocked, in
one of its server's threads: two creates of one key racing in can both win, which S3 never lets happen (a
conditional write is atomic there), and the store contract's ``create_race`` check then fails now and then on a
loaded machine. Here every request carrying ``If-None-Match`` or ``If-Match`` is answered under one lock (its whole
answer built inside it); the others run as moto runs them.

    python tests/support/moto_atomic.py HOST PORT
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

CONDITIONAL = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH")


def atomic_conditionals(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """``app`` (a WSGI application) with its conditional requests answered one at a time."""
    lock = threading.Lock()

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not any(environ.get(h) for h in CONDITIONAL):
            return app(environ, start_response)
        with lock:
            return list(app(environ, start_response))

    return wrapped


def main(host: str, port: int) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    os.environ.setdefault("MOTO_PORT", str(port))
    run_simple(host, port, atomic_conditionals(DomainDispatcherApplication(create_backend_app)), threaded=True,
               request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
