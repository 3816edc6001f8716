"""Writes the generated parts of docs/conformance.md and the protocol rows of each other-language client's page:

* from the built-in protocols' own modules (ldp.conformance.docs): the table of k sequences (each params class's
  draw_rule), the table of float fields, and a draw-order section for each protocol the page does not describe in
  prose; tests/docs/test_conformance_doc.py checks them;
* from the clients' own "not yet" lists, TypeScript (src/protocols/index.ts: NOT_YET), Kotlin (Protocols.kt:
  NOT_YET) and Rust (src/protocols/mod.rs: NOT_YET): the clients table of docs/conformance.md and each client's page.
  Each client's test suite checks its rows (TypeScript: test/docs.test.mjs; Kotlin: DocsTest; Rust: tests/docs.rs).

* from the protocols' params classes (ldp.conformance.param_tables): each client's parameter table (TypeScript
  src/params/tables.ts, Kotlin protocols/ParamTables.kt, Rust src/protocols/tables.rs): every parameter's name, type,
  default, meaning, range checks and choices; tests/conformance/test_param_tables.py checks they are fresh.

Run from anywhere: python conformance/docs_tables.py"""
import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(root))  # this checkout's ldp, whatever the environment has installed
from ldp.conformance.docs import render_page  # noqa: E402  # after the path is set
from ldp.conformance.param_tables import render as render_param_tables  # noqa: E402

vectors = sorted(p.stem for p in (root / "conformance/vectors").glob("*.json") if p.stem != "primitives")


def not_yet_of(path: str, marker: str, end: str) -> list[str]:
    text = (root / path).read_text()
    return sorted(re.findall(r'"([a-z-]+)"', text.split(marker, 1)[1].split(end, 1)[0]))


kotlin_not_yet = not_yet_of("clients/kotlin/src/main/kotlin/io/github/ldptelemetry/client/protocols/Protocols.kt",
                            "val NOT_YET", ")")
rust_not_yet = not_yet_of("clients/rust/src/protocols/mod.rs", "pub const NOT_YET", "];")
kotlin = [p for p in vectors if p not in kotlin_not_yet]
rust = [p for p in vectors if p not in rust_not_yet]
ts_not_yet = not_yet_of("clients/typescript/src/protocols/index.ts", "export const NOT_YET", "]);")
ts = [p for p in vectors if p not in ts_not_yet]


def yes(flag: bool) -> str:
    return "yes" if flag else "not yet"


HEAD = "| protocol | Python | TypeScript | Kotlin | Rust / C |"
table = [HEAD, "|---|---|---|---|---|"]
table += [f"| `{p}` | yes | {yes(p in ts)} | {yes(p in kotlin)} | {yes(p in rust)} |" for p in vectors]
conf = root / "docs/conformance.md"
lines = render_page(conf.read_text()).split("\n")
start = next(i for i, line in enumerate(lines) if line.startswith("| protocol | Python | TypeScript | Kotlin |"))
end = start
while end < len(lines) and lines[end].startswith("|"):
    end += 1
conf.write_text("\n".join(lines[:start] + table + lines[end:]))


def fmt(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


pages = (("typescript-client.md", ts, ts_not_yet), ("kotlin-client.md", kotlin, kotlin_not_yet),
         ("native-client.md", rust, rust_not_yet))
for page, implemented, not_yet in pages:
    path = root / "docs" / page
    if not path.exists():
        continue
    out = path.read_text().split("\n")
    for i, line in enumerate(out):
        if line.startswith("| protocols |"):
            out[i] = f"| protocols | {fmt(implemented)} |"
        if line.startswith("| not yet |"):
            out[i] = f"| not yet | {fmt(not_yet)} |"
    path.write_text("\n".join(out))
print(len(ts), "TypeScript protocols, not yet:", ts_not_yet)
print(len(kotlin), "Kotlin protocols, not yet:", kotlin_not_yet)
print(len(rust), "Rust protocols, not yet:", rust_not_yet)
for relative, text in render_param_tables().items():
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
print(len(render_param_tables()), "parameter tables written:", ", ".join(render_param_tables()))
