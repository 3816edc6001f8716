"""The dashboard: one server-rendered HTML page of every app's estimates over time, and the same data as JSON.

It reads ``DATA/apps/<app>/estimates.json`` (written by :func:`ldp.ingest.watch.fold_app`: per metric the
pooled estimate and the last N windows) and ``DATA/ingest.json`` (the ingest service's counters), and renders the
Jinja2 template ``templates/dashboard.html`` (autoescape on: every string from a spec or a report is escaped), which
extends the services' page shell (:mod:`ldp.web.pages`); no JavaScript. Jinja2 comes with the ``serve`` extra;
:func:`dashboard_routes` imports Starlette.

Both read paths answer analysts only (:class:`~ldp.ingest.access.ReadAccess`): a bearer token, or the cookie of
the sign-in form (``templates/signin.html``, the dashboard's answer 401), unless the config says ``public = true``.
The JSON paths' refusals are the services' problem documents (:mod:`ldp.web.problems`), and the sign-in form's body
is read under their one body limit (:mod:`ldp.web.body`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from ldp.ingest.access import SESSION_SECONDS, ReadAccess
from ldp.ingest.backlog import open_segment_started, waiting_state
from ldp.ingest.estimates_export import DEFAULT_MAX_ITEMS
from ldp.ingest.pageview import CHART_ROWS, app_view, length_text, shown_rows, time_view
from ldp.ingest.series import release_settings, window_entry_for
from ldp.ingest.watch import app_dir, load_estimates
from ldp.web.pages import SECURITY_HEADERS, render

if TYPE_CHECKING:
    from starlette.routing import Route

__all__ = ["CHART_ROWS", "dashboard_routes", "estimates_document", "load_ingest", "load_state", "render_dashboard",
           "render_page", "render_sign_in", "shown_rows", "waiting", "MAX_SIGN_IN_BYTES"]

MAX_SIGN_IN_BYTES = 4096
"""The largest sign-in form body read (a token is 43 characters); 413 above."""


def load_ingest(data_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``DATA/ingest.json`` (``None`` when missing or being replaced)."""
    try:
        doc = json.loads((Path(data_dir) / "ingest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def load_state(data_dir: str | os.PathLike[str], apps: Iterable[str],
               release: Mapping[str, Mapping[str, Any]] | None = None
               ) -> tuple[dict[str, dict[str, Any] | None], dict[str, Any] | None]:
    """Every app's estimates (``None`` before its first fold) and the ingest counters. An ``estimates.json``
    folded under other release thresholds than ``release[app]`` (:func:`~ldp.ingest.series.release_settings`
    of the app's specs; without it, under none) counts as not folded yet: it may hold what they now withhold."""
    docs = {app: load_estimates(data_dir, app) for app in apps}
    for app, doc in docs.items():
        made = (doc.get("settings") or {}).get("release") if doc is not None else None
        if doc is not None and (made is None or (release is not None and app in release and made != release[app])):
            docs[app] = None
    return docs, load_ingest(data_dir)


def release_of(apps: Iterable[str] | Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    """Each app's release settings when ``apps`` maps names to app configs (with ``specs``), else ``None``."""
    if not isinstance(apps, Mapping):
        return None
    return {name: release_settings(a.specs) for name, a in apps.items() if isinstance(getattr(a, "specs", None),
                                                                                       Mapping)}


def _ingest_app(ingest: Mapping[str, Any] | None, app: str) -> Mapping[str, Any] | None:
    apps = ingest.get("apps") if isinstance(ingest, Mapping) else None
    found = apps.get(app) if isinstance(apps, Mapping) else None
    return found if isinstance(found, Mapping) else None


def waiting(data_dir: str | os.PathLike[str] | None, estimates: Mapping[str, Mapping[str, Any] | None],
            ingest: Mapping[str, Any] | None, now: datetime) -> dict[str, dict[str, Any] | None]:
    """Per app, the reports accepted but not folded yet and when the next fold counts them
    (:func:`ldp.ingest.backlog.waiting_state`; the open segment is looked up under ``data_dir``)."""
    return {app: waiting_state(doc, _ingest_app(ingest, app),
                               open_segment_started(app_dir(data_dir, app)) if data_dir is not None else None, now)
            for app, doc in estimates.items()}


def render_dashboard(data_dir: str | os.PathLike[str], apps: Iterable[str], refresh_seconds: int = 30, *,
                     release: Mapping[str, Mapping[str, Any]] | None = None, sign_out: bool = False) -> str:
    """The page for the data directory as it is now (``release``: as :func:`load_state` takes it)."""
    estimates, ingest = load_state(data_dir, apps, release)
    return render_page(estimates, ingest, refresh_seconds=refresh_seconds, data_dir=data_dir, sign_out=sign_out)


def render_sign_in(error: str | None = None, session_seconds: int = SESSION_SECONDS) -> str:
    """The sign-in page (the dashboard's answer 401): a form that POSTs the analyst token to ``login``, and ``error``
    (why the last try failed) if any."""
    return render("ldp.ingest", "signin.html", error=error, lasts=length_text(session_seconds))


def render_page(estimates: Mapping[str, Mapping[str, Any] | None], ingest: Mapping[str, Any] | None = None, *,
                refresh_seconds: int = 30, now: datetime | None = None,
                data_dir: str | os.PathLike[str] | None = None, sign_out: bool = False) -> str:
    """The whole HTML page: a section per app (its state, reports waiting for a fold), in it a section per
    metric (its time series with confidence bands, and its latest window's chart and table). ``sign_out``: the
    reader came with the sign-in cookie, so the page has a button to sign out."""
    if isinstance(refresh_seconds, bool) or not isinstance(refresh_seconds, int) or refresh_seconds < 1:
        raise ValueError(f"refresh_seconds must be an int >= 1, got {refresh_seconds!r}")
    now = now or datetime.now(UTC)
    backlog = waiting(data_dir, estimates, ingest, now)
    apps = [app_view(i, app, doc, _ingest_app(ingest, app), backlog.get(app), now)
            for i, (app, doc) in enumerate(estimates.items())]
    return render("ldp.ingest", "dashboard.html", apps=apps, refresh_seconds=refresh_seconds, now=time_view(now),
                  sign_out=sign_out)


def estimates_document(estimates: Mapping[str, Mapping[str, Any] | None], ingest: Mapping[str, Any] | None,
                       window: int | str | None = None, *, data_dir: str | os.PathLike[str] | None = None,
                       now: datetime | None = None) -> dict[str, Any]:
    """What ``GET /v1/estimates`` answers: every app's ``estimates.json`` (with ``window``: each metric's entry
    for that window, an index, ``"latest"`` or ``"all"``), the ingest counters, and per app the reports
    ``waiting`` for a fold. ``"all"`` (and a metric's entry without ``window``) is the pooled estimate of the windows
    released only, the others named in its ``release.left_out`` (:mod:`ldp.ingest.series`): no withheld window
    is the difference of two answers."""
    docs: dict[str, Any] = dict(estimates)
    if window is not None:
        docs = {app: None if doc is None else
                {**{k: v for k, v in doc.items() if k != "metrics"},
                 "metrics": [window_entry_for(m, window) for m in doc.get("metrics", [])]}
                for app, doc in estimates.items()}
    out = {"apps": docs, "ingest": ingest, "waiting": waiting(data_dir, estimates, ingest, now or datetime.now(UTC))}
    return out if window is None else {"window": window, **out}


def dashboard_routes(data_dir: str | os.PathLike[str], apps: Iterable[str], refresh_seconds: int = 30, *,
                     access: ReadAccess | None = None, max_items: int = DEFAULT_MAX_ITEMS) -> list[Route]:
    """Starlette routes: ``GET /`` the page, ``GET /v1/estimates[?window=W|latest|all]`` every app's
    ``estimates.json`` (and the ingest counters, and the reports waiting for a fold) as one JSON document,
    ``GET /metrics/estimates`` the latest released window's estimates as Prometheus series (at most ``max_items``
    items per metric: :mod:`ldp.ingest.estimates_export`), ``POST /login`` and ``POST /logout`` (the sign-in
    form's, setting and clearing the cookie).
    ``apps``: the app names, or the config's apps (name -> app config): then an ``estimates.json`` folded under
    other release thresholds than the specs' is not shown until the next fold.

    ``access``: who reads (:class:`~ldp.ingest.access.ReadAccess`; ``None``: nobody, the safe default). Anyone
    else gets 401 before anything is read: the sign-in page for ``/``, a problem document for the JSON and the
    series."""
    from starlette.routing import Route

    render_page({}, None, refresh_seconds=refresh_seconds)  # refuses a bad refresh period now, not per request
    d = _Dashboard(data_dir, list(apps), release_of(apps), refresh_seconds, access or ReadAccess(), max_items)
    return [Route("/", d.page, methods=["GET"]), Route("/v1/estimates", d.estimates, methods=["GET"]),
            Route("/metrics/estimates", d.series, methods=["GET"]),
            Route("/login", d.login, methods=["POST"]), Route("/logout", d.logout, methods=["POST"])]


_UNAUTHORIZED = {**SECURITY_HEADERS, "WWW-Authenticate": "Bearer"}


class _Dashboard:
    """The read paths' handlers (:func:`dashboard_routes`); the sync ones run in Starlette's thread pool (they read
    files)."""

    def __init__(self, data_dir: str | os.PathLike[str], names: list[str],
                 expected: dict[str, dict[str, Any]] | None, refresh_seconds: int, rule: ReadAccess,
                 max_items: int) -> None:
        self.data_dir, self.names, self.expected = data_dir, names, expected
        self.refresh_seconds, self.rule, self.max_items = refresh_seconds, rule, max_items

    def allowed(self, request: Any) -> str | None:
        return self.rule.allows(request.headers.get("authorization"), request.headers.get("cookie"))

    def sign_in(self, status: int, error: str | None = None) -> Any:
        from starlette.responses import HTMLResponse

        return HTMLResponse(render_sign_in(error, self.rule.session_seconds), status_code=status,
                            headers=_UNAUTHORIZED)

    @staticmethod
    def refused(detail: str) -> Any:
        """401 as the services' problem document, with the page's headers and the challenge."""
        from ldp.web.problems import problem

        return problem(401, "unauthorized", detail, headers=_UNAUTHORIZED)

    def page(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse

        via = self.allowed(request)
        if via is None:
            return self.sign_in(401)
        return HTMLResponse(render_dashboard(self.data_dir, self.names, self.refresh_seconds, release=self.expected,
                                             sign_out=via == "cookie"), headers=SECURITY_HEADERS)

    def estimates(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        from ldp.jobs.decode import parse_window
        from ldp.web.problems import problem

        if self.allowed(request) is None:
            return self.refused("an analyst token is required: 'Authorization: Bearer <token>', or sign in on the "
                                "dashboard")
        window = None
        raw = request.query_params.getlist("window")
        if raw:
            try:
                if len(raw) > 1:
                    raise ValueError("give one window")
                window = parse_window(raw[0])
            except ValueError as exc:
                return problem(400, "bad_window", str(exc), headers=SECURITY_HEADERS)
        docs, ingest = load_state(self.data_dir, self.names, self.expected)
        return JSONResponse(estimates_document(docs, ingest, window, data_dir=self.data_dir),
                            headers=SECURITY_HEADERS)

    async def login(self, request: Any) -> Any:
        """The sign-in form's POST (``token=...``, form-encoded): back to the page with the cookie, or the form again
        with why. The body is read under the services' one body limit, :data:`MAX_SIGN_IN_BYTES`."""
        from starlette.concurrency import run_in_threadpool
        from starlette.exceptions import HTTPException
        from starlette.responses import RedirectResponse

        from ldp.web.body import read_body

        if self.rule.public:
            return RedirectResponse("./", status_code=303, headers=SECURITY_HEADERS)
        try:
            body, _ = await read_body(request, MAX_SIGN_IN_BYTES)
        except HTTPException as exc:
            if exc.status_code != 413:
                raise
            return self.sign_in(413, "That is far longer than a token.")
        try:
            fields = parse_qs(body.decode("latin-1"), max_num_fields=8)
        except ValueError:  # more fields than the form has
            fields = {}
        token = (fields.get("token") or [""])[0]
        value = await run_in_threadpool(self.rule.cookie_for, token) if token else None  # the first makes the key
        if value is None:
            return self.sign_in(401, "That is not an analyst token." if token else "Give your analyst token.")
        response = RedirectResponse("./", status_code=303, headers=SECURITY_HEADERS)
        response.headers.append("Set-Cookie", self.rule.set_cookie(value, request.url.scheme == "https"))
        return response

    def series(self, request: Any) -> Any:
        """The estimates for a Prometheus scraper holding an analyst token (OpenMetrics when it asks for it)."""
        from prometheus_client.exposition import choose_encoder
        from starlette.responses import Response

        from ldp.ingest.estimates_export import EstimatesCollector

        if self.allowed(request) is None:
            return self.refused("an analyst token is required: 'Authorization: Bearer <token>' (Prometheus: "
                                "authorization.credentials in the scrape config)")
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        collector = EstimatesCollector(lambda: load_state(self.data_dir, self.names, self.expected)[0],
                                       self.max_items)
        return Response(encoder(collector), media_type=content_type, headers=SECURITY_HEADERS)

    def logout(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        response = RedirectResponse("./", status_code=303, headers=SECURITY_HEADERS)
        response.headers.append("Set-Cookie", self.rule.clear_cookie(request.url.scheme == "https"))
        return response
