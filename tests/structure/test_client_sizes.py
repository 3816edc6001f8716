"""The size rules of issue 83 in every other-language client (``clients/rust``, ``clients/typescript``,
``clients/kotlin``), as ``test_sizes.py`` holds them for ``ldp/``: a source file (library, tests, examples, benches,
fuzz targets) is at most 450 lines, and a function at most 60, from the line of its signature to its closing brace,
unless the doc comment just above it argues an exception in a line holding ``Size exception:``.

A function is found by its keyword (Rust ``fn``, TypeScript ``function``, Kotlin ``fun``), as a TypeScript method
(``name(args) {`` in a class body) or as a ``const`` arrow function with a block body; its end is the brace that
closes the first one opened after the signature (strings and line comments left out of the count). Generated data
and build output are not sources: ``node_modules``, ``target``, ``dist``.
"""

from __future__ import annotations

import re
from pathlib import Path

from support import ROOT

CLIENTS = ROOT / "clients"
MAX_LINES = 450
MAX_FUNCTION = 60
EXTENSIONS = {".rs", ".ts", ".mts", ".mjs", ".js", ".kt"}
NOT_SOURCES = {"node_modules", "target", "dist", "build", ".gradle"}
EXCEPTION = "Size exception:"

_KEYWORD = re.compile(r"^\s*(?:(?:pub(?:\([^)]*\))?|async|const|unsafe|extern\s+\"C\"|export|default|private|internal"
                      r"|public|protected|override|suspend|inline|static|operator|open|abstract|tailrec)\s+)*"
                      r"(?:fn|function\*?|fun)\b")
_METHOD = re.compile(r"^\s+(?:(?:public|private|protected|static|async|get|set|override|readonly)\s+)*"
                     r"(?!(?:if|for|while|switch|catch|return|function|else|do|with)\b)[A-Za-z_$#][\w$]*\s*"
                     r"(?:<[^>]*>)?\([^;]*\)\s*(?::\s*[^={;]+)?\{\s*$")
_ARROW = re.compile(r"^\s*(?:export\s+)?(?:const|let)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s*)?(?:\([^)]*\)|[\w$]+)"
                    r"\s*(?::\s*[^=]+)?=>\s*\{\s*$")
_STRING = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`")


def sources(root: Path = CLIENTS) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in EXTENSIONS and p.is_file()
                  and not NOT_SOURCES.intersection(p.relative_to(root).parts))


def _code(line: str) -> str:
    """The line without its strings and its line comment."""
    return _STRING.sub('""', line).split("//")[0]


def _is_start(line: str, suffix: str) -> bool:
    if _KEYWORD.match(line):
        return True
    return suffix != ".kt" and suffix != ".rs" and bool(_METHOD.match(line) or _ARROW.match(line))


def _end(lines: list[str], start: int, suffix: str) -> int | None:
    """The index of the line closing the function that starts at ``start``; ``None`` for a declaration without a
    block body (a trait or interface method, a Kotlin expression body ``= …``, a TypeScript overload)."""
    depth, opened = 0, False
    for j in range(start, len(lines)):
        code = _code(lines[j])
        if not opened:
            brace, eq, semi = code.find("{"), code.find(" = "), code.find(";")
            if suffix == ".kt" and eq >= 0 and (brace < 0 or eq < brace):
                return None
            if semi >= 0 and (brace < 0 or semi < brace):
                return None
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if opened and depth <= 0:
            return j
    return None


def _excepted(lines: list[str], start: int) -> bool:
    """Whether the doc comment (and attributes) just above line ``start`` argue a size exception."""
    j = start - 1
    while j >= 0 and lines[j].strip().startswith(("///", "//!", "//", "*", "/**", "*/", "#[", "@")):
        if EXCEPTION in lines[j]:
            return True
        j -= 1
    return False


def long_functions(text: str, suffix: str) -> dict[int, int]:
    """Line number (from 1) → length of each function over :data:`MAX_FUNCTION` lines without an exception."""
    lines = text.splitlines()
    found = {}
    for i, line in enumerate(lines):
        if _is_start(line, suffix) and (end := _end(lines, i, suffix)) is not None:
            if end - i + 1 > MAX_FUNCTION and not _excepted(lines, i):
                found[i + 1] = end - i + 1
    return found


def test_no_client_source_over_450_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in sources()
            if (n := len(p.read_text(encoding="utf-8", errors="replace").splitlines())) > MAX_LINES}
    assert not long, f"client sources over {MAX_LINES} lines (split them by concept): {long}"


def test_no_client_function_over_60_lines() -> None:
    long = {f"{p.relative_to(ROOT)}:{line}": n for p in sources()
            for line, n in long_functions(p.read_text(encoding="utf-8", errors="replace"), p.suffix).items()}
    assert not long, (f"client functions over {MAX_FUNCTION} lines (split them into named steps, or argue a "
                      f"'{EXCEPTION}' in the doc comment): {long}")


def _body(n: int) -> str:
    return "\n".join(f"    x{i}();" for i in range(n))


def test_the_rules_catch_a_long_function_in_each_language() -> None:
    body = _body(MAX_FUNCTION)
    assert long_functions(f"pub fn f() {{\n{body}\n}}\n", ".rs") == {1: MAX_FUNCTION + 2}
    assert long_functions(f"export async function f(a: string): Promise<void> {{\n{body}\n}}\n", ".ts") \
        == {1: MAX_FUNCTION + 2}
    assert long_functions(f"class C {{\n  private step(a: number): void {{\n{body}\n  }}\n}}\n", ".ts") \
        == {2: MAX_FUNCTION + 2}
    assert long_functions(f"const f = async (a) => {{\n{body}\n}};\n", ".mjs") == {1: MAX_FUNCTION + 2}
    assert long_functions(f"internal fun f(a: Int): Int {{\n{body}\n}}\n", ".kt") == {1: MAX_FUNCTION + 2}
    assert long_functions(f"fn f() {{\n{_body(MAX_FUNCTION - 2)}\n}}\n", ".rs") == {}  # exactly 60 lines


def test_the_rules_follow_braces_not_strings_and_honour_an_argued_exception() -> None:
    body = _body(MAX_FUNCTION)
    assert long_functions(f'fn f() {{\n    let s = "}}";\n{body}\n}}\n', ".rs") == {1: MAX_FUNCTION + 3}
    assert long_functions(f"/// Size exception: one exhaustive match.\nfn f() {{\n{body}\n}}\n", ".rs") == {}
    assert long_functions(f"fun f(a: Int): Boolean = a > 0\nval x = listOf(1)\n{body}\n", ".kt") == {}
    assert long_functions("trait T {\n    fn f(&self);\n}\n", ".rs") == {}
    assert long_functions(f"    if (x) {{\n{body}\n    }}\n", ".ts") == {}  # a block, not a method


def test_the_file_rule_sees_every_client_and_skips_build_output(tmp_path: Path) -> None:
    found = {p.relative_to(CLIENTS).parts[0] for p in sources()}
    assert {"rust", "typescript", "kotlin"} <= found
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.js").write_text("x\n" * (MAX_LINES + 1))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text("x\n" * (MAX_LINES + 1))
    assert [p.name for p in sources(tmp_path)] == ["lib.rs"]
