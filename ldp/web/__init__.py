"""The HTTP service layer both services are built on: ``ldp serve`` (:mod:`ldp.ingest`) and ``ldp serve --role
leader|helper`` (:mod:`ldp.aggregators`), each of which adds only its routes (issue 83, item 2).

* :mod:`~ldp.web.auth` — the one ``Authorization`` parser (RFC 9110 §11.1: the scheme case-insensitive; OWS around
  the token) and the comparison of token hashes in constant time (standard library only);
* :mod:`~ldp.web.problems` — the one refusal: an RFC 9457 problem document, DAP's types for the aggregators'
  (DAP-09 §3.2), and the exception handlers that make every refusal one (404 and 405 included);
* :mod:`~ldp.web.body` — the one body limit: streamed, refused with 413 before more than the limit is read;
* :mod:`~ldp.web.secret_files` — the one rule for a token's or a key's file;
* :mod:`~ldp.web.config` — the one TOML loader: the file read, unknown keys refused, the shared value checks;
* :mod:`~ldp.web.pages` — the pages' shell, templates and headers;
* :mod:`~ldp.web.app` — the Starlette app with these answers.

Imported by the services only, never by client code (``tests/web/test_web_parts.py``). Only :mod:`~ldp.web.app` and
:mod:`~ldp.web.body` import Starlette when imported; the others (and this package's face) import no HTTP stack, so
what only checks a token or reads a config — and the aggregators' clients — loads none.
"""

__all__: list[str] = []
