"""Sizes (issue 83, item 5): every module of ``ldp/`` holds at most 450 lines and every function at most 60, from
its ``def`` line to its last (docstring included, decorators not: ``end_lineno - lineno + 1``), unless its docstring
argues the exception on a line starting ``Size exception:``; the C sources of the optional kernels at most 600.

Split by concept, never by count: a long function becomes well-named steps, a long module two files where a reader
would want two (its public names re-exported from the old one). Each rule is also checked against a deliberately
broken input, so that a rule that could never fail is caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph import PACKAGE, modules

MAX_MODULE_LINES = 450
"""No module of ``ldp/`` is longer."""
MAX_FUNCTION_LINES = 60
"""No function (method, nested function) of ``ldp/`` is longer, but for an argued exception."""
SIZE_EXCEPTION = "Size exception:"
"""The start of the docstring line that argues why a function reads best whole (an exhaustive table, say)."""
MAX_C_LINES = 600
"""No C source or header of the optional kernels (``ldp/**/*.[ch]``) is longer."""


def _lines(text: str) -> int:
    return len(text.splitlines())


def long_modules(sources: dict[str, str]) -> dict[str, int]:
    """The modules (name -> source) over :data:`MAX_MODULE_LINES` lines, with their lengths."""
    return {name: n for name, text in sources.items() if (n := _lines(text)) > MAX_MODULE_LINES}


def _argued(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function's docstring has a line starting ``Size exception:`` followed by its argument."""
    doc = ast.get_docstring(node) or ""
    return any(line.strip().startswith(SIZE_EXCEPTION) and line.strip()[len(SIZE_EXCEPTION):].strip()
               for line in doc.splitlines())


def long_functions(source: str) -> dict[str, int]:
    """The functions of ``source`` (methods and nested ones too) over :data:`MAX_FUNCTION_LINES` lines without an
    argued exception, as ``"name (line N)"`` -> length."""
    return {f"{node.name} (line {node.lineno})": n for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None
            and (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES and not _argued(node)}


def test_no_module_over_450_lines() -> None:
    long = long_modules({m: p.read_text() for m, p in modules().items()})
    assert not long, (f"modules over {MAX_MODULE_LINES} lines (split them by concept, where a reader would want two "
                      f"files; re-export the public names from the old module): {long}")


def test_no_function_over_60_lines() -> None:
    long = {f"{p.relative_to(PACKAGE.parent)}: {name}": n for p in modules().values()
            for name, n in long_functions(p.read_text()).items()}
    assert not long, (f"functions over {MAX_FUNCTION_LINES} lines (split into well-named steps, each a function with "
                      f"a docstring; or argue the exception on a docstring line starting {SIZE_EXCEPTION!r}): "
                      + "".join(f"\n  {k}: {n}" for k, n in sorted(long.items())))


def long_c_sources(root: Path) -> dict[str, int]:
    """The C sources and headers under ``root`` over :data:`MAX_C_LINES` lines, with their lengths."""
    return {str(p.relative_to(root)): n for p in sorted(root.rglob("*.[ch]")) if (n := _lines(p.read_text())) >
            MAX_C_LINES}


def test_no_compiled_kernel_source_over_600_lines() -> None:
    """The C sources of the optional kernels (``ldp/**/*.c`` and their headers)."""
    long = long_c_sources(PACKAGE)
    assert not long, f"C sources over {MAX_C_LINES} lines (split them by concept): {long}"


def test_the_module_rule_catches_a_long_module() -> None:
    at_limit = "\n".join(f"x{i} = {i}" for i in range(MAX_MODULE_LINES)) + "\n"
    assert long_modules({"ldp.fine": at_limit}) == {}
    assert long_modules({"ldp.fine": at_limit, "ldp.long": at_limit + "y = 0\n"}) == {
        "ldp.long": MAX_MODULE_LINES + 1}


def _function(name: str, lines: int, *, docstring: str | None = None, indent: str = "",
              head: str = "def") -> str:
    """A function of exactly ``lines`` lines (``def`` line, docstring and body), at ``indent``."""
    doc = [f'{indent}    """{docstring}"""'] if docstring is not None else []
    body = [f"{indent}    x{i} = {i}" for i in range(lines - 1 - sum(d.count("\n") + 1 for d in doc))]
    return "\n".join([f"{indent}{head} {name}():", *doc, *body]) + "\n"


def test_the_function_rule_catches_a_long_function() -> None:
    n = MAX_FUNCTION_LINES
    assert long_functions(_function("f", n)) == {}
    assert long_functions(_function("f", n + 1)) == {"f (line 1)": n + 1}
    assert long_functions("@decorator\n@another\n" + _function("f", n)) == {}  # decorators are not counted
    assert long_functions(_function("f", n + 1, head="async def")) == {"f (line 1)": n + 1}
    method = "class C:\n" + _function("m", n + 1, indent="    ")
    assert long_functions(method) == {"m (line 2)": n + 1}
    nested = "def outer():\n" + _function("inner", n + 1, indent="    ") + "    return inner\n"
    assert long_functions(nested) == {"outer (line 1)": n + 3, "inner (line 2)": n + 1}


def test_an_argued_exception_is_allowed_and_only_an_argued_one() -> None:
    n = MAX_FUNCTION_LINES + 10
    argued = "One exhaustive table.\n\n    Size exception: every row is one case; split, the table would not read."
    assert long_functions(_function("table", n, docstring=argued)) == {}
    for unargued in ("One exhaustive table.", "Size exception:", "A size exception: it is long.", None):
        assert long_functions(_function("table", n, docstring=unargued)) == {"table (line 1)": n}, unargued


def test_the_c_source_rule_catches_a_long_source(tmp_path: Path) -> None:
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "long.c").write_text("x;\n" * (MAX_C_LINES + 1))
    (tmp_path / "k" / "fine.h").write_text("x;\n" * MAX_C_LINES)
    (tmp_path / "long.py").write_text("x = 0\n" * (MAX_C_LINES + 1))
    assert long_c_sources(tmp_path) == {str(Path("k") / "long.c"): MAX_C_LINES + 1}
