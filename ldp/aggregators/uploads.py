"""The leader's uploads taken in batches from the HTTP front (issue 86, item 3).

Under :class:`ldp.web.front.Front` the leader's door is this: each batch of requests the front hands over, its
``PUT /tasks/{task}/reports`` taken here, by task, and the others left to the app. A task's uploads go through
:meth:`~ldp.aggregators.leader.Leader.upload_many` together: every check of :meth:`~ldp.aggregators.leader.Leader.
upload` on each report, the leader's shares opened in one batch call spread over the cores, the reports taken
written as one chunk (one durable write: group commit, the batch being whatever arrived while the previous one was
written) before any of them is answered 201. The answers are the route's (:meth:`ldp.aggregators.routes._Routes.
upload`), in its order: a path naming no task 404, a ``Content-Type`` other than DAP's report 415 (counted at the
door), a body the front did not read as :func:`ldp.web.front.body_refusal` says (a declared length over
:data:`~ldp.aggregators.routes.MAX_REPORT` 413), then each report's refusal or 201; a store that fails answers
the batch's reports 500, none of them taken (the chunk was not written). Every answer carries the route's CORS
header (:func:`ldp.aggregators.cors.with_cors`), as the app's do. ``tests/aggregators/test_front.py`` holds the
two doors to the same answers.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any
from urllib.parse import unquote

from ldp.aggregators.cors import ALLOW_ANY_ORIGIN, UPLOAD_PATH, with_cors
from ldp.aggregators.routes import MAX_REPORT, refusal, task_of, upload_refusal
from ldp.errors import AggregatorError
from ldp.web.front import answer, body_refusal
from ldp.web.problems import problem

__all__ = ["UploadBatches"]

logger = logging.getLogger("ldp.aggregators")

_CREATED: tuple[int, list[tuple[str, bytes]], bytes] = (
    201, [("content-length", b"0"), (ALLOW_ANY_ORIGIN[0].decode("ascii"), ALLOW_ANY_ORIGIN[1])], b"")


class UploadBatches:
    """The ``batch`` of :class:`ldp.web.front.Front` for ``leader`` (module docstring)."""

    def __init__(self, leader: Any) -> None:
        self.leader = leader

    def __call__(self, requests: list[Any]) -> list[Any]:
        """Answer the uploads among ``requests``; the others, in their order."""
        rest: list[Any] = []
        by_task: dict[str, list[Any]] = defaultdict(list)
        for request in requests:
            match = UPLOAD_PATH.fullmatch(unquote(request.path)) if request.method == "PUT" else None
            if match is None:
                rest.append(request)
            else:
                by_task[match.group(1)].append(request)
        for named, uploads in by_task.items():
            self._task(named, uploads)
        return rest

    def _task(self, named: str, uploads: list[Any]) -> None:
        """One task's uploads (module docstring)."""
        taken: list[Any] = []
        try:
            task_id = task_of(named)
            self.leader.task_state(task_id)
        except AggregatorError as exc:
            for request in uploads:
                answer(request, with_cors(refusal(exc, named)))
            return
        bodies: list[bytes] = []
        for request in uploads:
            refused = upload_refusal(self.leader, task_id, request.header("content-type"))
            body = b"" if refused is not None or request.body_error else request.body  # read once (a copy)
            if refused is not None:
                answer(request, with_cors(refusal(refused, named)))
            elif request.body_error or len(body) > MAX_REPORT:
                answer(request, with_cors(body_refusal(request, MAX_REPORT) or problem(
                    413, "too_large", f"the body is over {MAX_REPORT} bytes", headers={"Connection": "close"})))
            else:
                taken.append(request)
                bodies.append(body)
        if taken:
            self._store(task_id, named, taken, bodies)

    def _store(self, task_id: bytes, named: str, taken: list[Any], bodies: list[bytes]) -> None:
        # the shares the front opened as the uploads arrived (each, when it knew the task by this path's name)
        opened = [r.opened for r in taken] if all(r.open_tried for r in taken) else None
        try:
            outcomes = self.leader.upload_many(task_id, bodies, opened)
        except Exception as exc:  # noqa: BLE001 (each upload answered: none of them is stored)
            logger.error("storing %d uploads failed (%s)", len(taken), type(exc).__name__)
            for request in taken:
                answer(request, with_cors(problem(500, "internal", "the service failed on this request")))
            return
        for request, outcome in zip(taken, outcomes, strict=True):
            if outcome is None:
                request.respond(*_CREATED)
            else:
                answer(request, with_cors(refusal(outcome, named)))
