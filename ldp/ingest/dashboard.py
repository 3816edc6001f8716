"""The dashboard: one server-rendered HTML page of every app's estimates over time, and the same data as JSON.

It reads ``DATA/apps/<app>/estimates.json`` (written by :func:`ldp.ingest.watch.fold_app`: per metric the
pooled estimate and the last N windows) and ``DATA/ingest.json`` (the ingest service's counters), and renders the
Jinja2 template ``templates/dashboard.html`` (autoescape on: every string from a spec or a report is escaped);
no JavaScript. Jinja2 comes with the ``serve`` extra; :func:`dashboard_routes` imports Starlette.

Both read paths answer analysts only (:class:`~ldp.ingest.access.ReadAccess`): a bearer token, or the cookie of
the sign-in form (``templates/signin.html``, the dashboard's answer 401), unless the config says ``public = true``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from ldp.ingest.access import SESSION_SECONDS, ReadAccess
from ldp.ingest.backlog import open_segment_started, waiting_state
from ldp.ingest.estimates_export import DEFAULT_MAX_ITEMS
from ldp.ingest.pageview import CHART_ROWS, app_view, length_text, shown_rows, time_view
from ldp.ingest.series import release_settings, window_entry_for
from ldp.ingest.watch import app_dir, load_estimates

if TYPE_CHECKING:
    from starlette.routing import Route

__all__ = ["CHART_ROWS", "dashboard_routes", "estimates_document", "load_ingest", "load_state", "render_dashboard",
           "render_page", "render_sign_in", "shown_rows", "waiting", "MAX_SIGN_IN_BYTES"]

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
"""The headers of every answer of the read paths: no script at all, forms (sign in, sign out) to this origin only,
never in a frame (no clickjacking of the sign-in form), never cached."""
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


@lru_cache(maxsize=2)
def _template(name: str = "dashboard.html") -> Any:
    try:
        import jinja2
    except ImportError:
        from ldp.extras import install_hint

        raise ImportError(f"the dashboard needs Jinja2: {install_hint('jinja2', 'serve')}") from None
    env = jinja2.Environment(loader=jinja2.PackageLoader("ldp.ingest", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(name)


def render_dashboard(data_dir: str | os.PathLike[str], apps: Iterable[str], refresh_seconds: int = 30, *,
                     release: Mapping[str, Mapping[str, Any]] | None = None, sign_out: bool = False) -> str:
    """The page for the data directory as it is now (``release``: as :func:`load_state` takes it)."""
    estimates, ingest = load_state(data_dir, apps, release)
    return render_page(estimates, ingest, refresh_seconds=refresh_seconds, data_dir=data_dir, sign_out=sign_out)


def render_sign_in(error: str | None = None, session_seconds: int = SESSION_SECONDS) -> str:
    """The sign-in page (the dashboard's answer 401): a form that POSTs the analyst token to ``login``, and ``error``
    (why the last try failed) if any."""
    return str(_template("signin.html").render(error=error, lasts=length_text(session_seconds)))


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
    return str(_template().render(apps=apps, refresh_seconds=refresh_seconds, now=time_view(now), sign_out=sign_out))


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
    else gets 401 before anything is read: the sign-in page for ``/``, a JSON error for ``/v1/estimates``."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    from ldp.jobs.decode import parse_window

    names = list(apps)
    expected = release_of(apps)
    render_page({}, None, refresh_seconds=refresh_seconds)  # refuses a bad refresh period now, not per request
    rule = access if access is not None else ReadAccess()
    unauthorized = {**SECURITY_HEADERS, "WWW-Authenticate": "Bearer"}

    def allowed(request: Request) -> str | None:
        return rule.allows(request.headers.get("authorization"), request.headers.get("cookie"))

    def sign_in(status: int, error: str | None = None) -> HTMLResponse:
        return HTMLResponse(render_sign_in(error, rule.session_seconds), status_code=status, headers=unauthorized)

    def page(request: Request) -> HTMLResponse:  # sync: Starlette runs it in its thread pool (file reads)
        via = allowed(request)
        if via is None:
            return sign_in(401)
        return HTMLResponse(render_dashboard(data_dir, names, refresh_seconds, release=expected,
                                             sign_out=via == "cookie"), headers=SECURITY_HEADERS)

    def estimates(request: Request) -> JSONResponse:
        if allowed(request) is None:
            return JSONResponse({"error": "unauthorized", "detail": "an analyst token is required: 'Authorization: "
                                 "Bearer <token>', or sign in on the dashboard"}, status_code=401, headers=unauthorized)
        window = None
        raw = request.query_params.getlist("window")
        if raw:
            try:
                if len(raw) > 1:
                    raise ValueError("give one window")
                window = parse_window(raw[0])
            except ValueError as exc:
                return JSONResponse({"error": "bad_window", "detail": str(exc)}, status_code=400,
                                    headers=SECURITY_HEADERS)
        docs, ingest = load_state(data_dir, names, expected)
        return JSONResponse(estimates_document(docs, ingest, window, data_dir=data_dir), headers=SECURITY_HEADERS)

    async def login(request: Request) -> Response:
        """The sign-in form's POST (``token=...``, form-encoded): back to the page with the cookie, or the form again
        with why. The body is read up to :data:`MAX_SIGN_IN_BYTES` only."""
        if rule.public:
            return RedirectResponse("./", status_code=303, headers=SECURITY_HEADERS)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_SIGN_IN_BYTES:
                return sign_in(413, "That is far longer than a token.")
        try:
            fields = parse_qs(body.decode("latin-1"), max_num_fields=8)
        except ValueError:  # more fields than the form has
            fields = {}
        token = (fields.get("token") or [""])[0]
        value = await run_in_threadpool(rule.cookie_for, token) if token else None  # the first makes the key file
        if value is None:
            return sign_in(401, "That is not an analyst token." if token else "Give your analyst token.")
        response = RedirectResponse("./", status_code=303, headers=SECURITY_HEADERS)
        response.headers.append("Set-Cookie", rule.set_cookie(value, request.url.scheme == "https"))
        return response

    def series(request: Request) -> Response:
        """The estimates for a Prometheus scraper holding an analyst token (OpenMetrics when it asks for it)."""
        if allowed(request) is None:
            return JSONResponse({"error": "unauthorized", "detail": "an analyst token is required: 'Authorization: "
                                 "Bearer <token>' (Prometheus: authorization.credentials in the scrape config)"},
                                status_code=401, headers=unauthorized)
        from prometheus_client.exposition import choose_encoder

        from ldp.ingest.estimates_export import EstimatesCollector

        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        body = encoder(EstimatesCollector(lambda: load_state(data_dir, names, expected)[0], max_items))
        return Response(body, media_type=content_type, headers=SECURITY_HEADERS)

    def logout(request: Request) -> Response:
        response = RedirectResponse("./", status_code=303, headers=SECURITY_HEADERS)
        response.headers.append("Set-Cookie", rule.clear_cookie(request.url.scheme == "https"))
        return response

    return [Route("/", page, methods=["GET"]), Route("/v1/estimates", estimates, methods=["GET"]),
            Route("/metrics/estimates", series, methods=["GET"]),
            Route("/login", login, methods=["POST"]), Route("/logout", logout, methods=["POST"])]
