"""What both services' pages share: the page shell (``templates/page.html``: the document's head, the styles every
page starts from), Jinja2 with autoescape on (every text from a spec, a report or a status is escaped), and the
headers of every page (:data:`SECURITY_HEADERS`).

A service's page is a template in its package's ``templates/`` folder that extends ``page.html`` (blocks ``title``,
``head``, ``style``, ``body``): :func:`render` finds it there and the shell here. Jinja2 comes with the ``serve``
extra and is imported when a page is first rendered; nothing here imports an HTTP stack (a page can be rendered
without one, as the tests do)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["SECURITY_HEADERS", "render", "template"]

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
"""The headers of every page and of the answers beside it: no script at all, forms (sign in, sign out) to this origin
only, never in a frame (no clickjacking of a form), never cached."""


@lru_cache(maxsize=8)
def template(package: str, name: str) -> Any:
    """The Jinja2 template ``name`` of ``package``'s ``templates/`` folder, which may extend the shell."""
    try:
        import jinja2
    except ImportError:
        from ldp.extras import install_hint

        raise ImportError(f"the pages need Jinja2: {install_hint('jinja2', 'serve')}") from None
    loader = jinja2.ChoiceLoader([jinja2.PackageLoader(package, "templates"),
                                  jinja2.PackageLoader("ldp.web", "templates")])
    env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    return env.get_template(name)


def render(package: str, name: str, **context: Any) -> str:
    """The page ``name`` of ``package`` with ``context``."""
    return str(template(package, name).render(**context))
