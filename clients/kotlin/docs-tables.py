"""Writes the protocol rows of docs/kotlin-client.md and the clients table of docs/conformance.md from the Kotlin
registry (its Protocols.kt) and the TypeScript one; `mvn test` (DocsTest) checks them. Run from the repository root:
python clients/kotlin/docs-tables.py"""
import re
from pathlib import Path

root = Path(__file__).resolve().parents[2]
kt = (root / "clients/kotlin/src/main/kotlin/io/github/ldptelemetry/client/protocols/Protocols.kt").read_text()
vectors = sorted(p.stem for p in (root / "conformance/vectors").glob("*.json") if p.stem != "primitives")
not_yet = sorted(re.findall(r'"([a-z-]+)"', kt.split("val NOT_YET")[1].split(")")[0]))
kotlin = [p for p in vectors if p not in not_yet]
ts_index = (root / "clients/typescript/src/protocols/index.ts").read_text()
ts = set(re.search(r"\(\[([^\]]+)\] as ProtocolEntry", ts_index).group(1).replace(" ", "").split(","))
table = ["| protocol | Python | TypeScript | Kotlin |", "|---|---|---|---|"]
table += [f"| `{p}` | yes | {'yes' if p in ts else 'not yet'} | {'yes' if p in kotlin else 'not yet'} |"
          for p in vectors]
conf = root / "docs/conformance.md"
text = conf.read_text()
head, _, _ = text.partition("| protocol | Python | TypeScript | Kotlin |")
if "CLIENTS_TABLE" in text:
    text = text.replace("CLIENTS_TABLE", "\n".join(table))
else:
    rest = text.split("| protocol | Python | TypeScript | Kotlin |", 1)[1].split("\n")[1:]
    while rest and rest[0].startswith("|"):
        rest.pop(0)
    text = head + "\n".join(table) + "\n" + "\n".join(rest)
conf.write_text(text)
page = root / "docs/kotlin-client.md"
lines = page.read_text().split("\n")


def fmt(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


for i, line in enumerate(lines):
    if line.startswith("| protocols |"):
        lines[i] = f"| protocols | {fmt(kotlin)} |"
    if line.startswith("| not yet |"):
        lines[i] = f"| not yet | {fmt(not_yet)} |"
page.write_text("\n".join(lines))
print(len(kotlin), "Kotlin protocols;", "not yet:", not_yet)
