"""Griffe extension for the API reference: render our reStructuredText-flavoured docstrings as
Markdown, without touching the code.

* Sphinx roles (``:class:`~ldp.reports.Report```, ``:func:`bucket```, ...) become code spans;
  with ``~`` only the last dotted component is shown, as in Sphinx.
* Definition lists (a line, then its description indented by four spaces) become a bold term
  followed by the description as plain paragraphs (Markdown would turn an indented paragraph
  after a blank line into a code block).

Loaded by mkdocs.yml (plugins > mkdocstrings > handlers > python > options > extensions); the
file is excluded from the site.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

ROLE = re.compile(r":(?:py:)?(?:attr|class|data|exc|func|meth|mod|obj):`(~?)([^`]+)`")
INDENT = "    "


def _code(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def _is_term(line: str, following: str) -> bool:
    return (bool(line.strip()) and not line[0].isspace() and " : " not in line
            and not re.match(r"([*+-]|\d+\.)\s", line)
            and following.startswith(INDENT) and bool(following.strip()))


def _definition_lists(text: str) -> str:
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if i + 1 < len(lines) and _is_term(lines[i], lines[i + 1]):
            out += [f"**{lines[i].strip()}**", ""]
            i += 1
            while i < len(lines) and (lines[i].startswith(INDENT) or not lines[i].strip()):
                if not lines[i].strip() and not (i + 1 < len(lines) and lines[i + 1].startswith(INDENT)):
                    break
                out.append(lines[i][len(INDENT):])
                i += 1
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


class ReSTToMarkdown(Extension):
    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _definition_lists(ROLE.sub(_code, obj.docstring.value))
