"""The tests' S3 server answers conditional writes one at a time (tests/support/moto_atomic.py): a check-then-write
application, which lets two racing creates both win, lets one win behind the wrapper."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from support.moto_atomic import atomic_conditionals


def _racy_store() -> tuple[Callable[..., Iterable[bytes]], list[int]]:
    """A WSGI app that creates ``/k`` if absent by looking, waiting, then writing (as moto 5 does, unlocked)."""
    objects: dict[str, bytes] = {}
    won: list[int] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        exists = "k" in objects
        time.sleep(0.02)
        if exists:
            start_response("412 Precondition Failed", [])
            return [b""]
        objects["k"] = b"x"
        won.append(threading.get_ident())
        start_response("200 OK", [])
        return [b""]

    return app, won


def _race(app: Callable[..., Iterable[bytes]], threads: int = 8) -> None:
    environ = {"REQUEST_METHOD": "PUT", "PATH_INFO": "/k", "HTTP_IF_NONE_MATCH": "*"}
    workers = [threading.Thread(target=lambda: list(app(dict(environ), lambda *a: None))) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def test_racing_creates_win_once_behind_the_wrapper_and_more_than_once_without() -> None:
    app, won = _racy_store()
    _race(app)
    assert len(won) > 1  # the unwrapped check-then-write: several creates won (what CI saw of moto)
    app, won = _racy_store()
    _race(atomic_conditionals(app))
    assert len(won) == 1
