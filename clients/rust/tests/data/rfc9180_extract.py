"""Writes rfc9180_base.json: the base-mode (mode 0) test vectors of RFC 9180, Appendix A, for the suites the client
seals with (every appendix suite but A.7, whose AEAD is export-only), from the RFC's source text.

The source is draft-irtf-cfrg-hpke.md at https://github.com/cfrg/draft-irtf-cfrg-hpke, commit
b1f7cb0cdeab6906c61b3d6574e8bdfdbe1cd3fb (2022-02-15: the text as published as RFC 9180; its appendix is the
rendering of the test-vectors.json the RFC cites, commit 5f503c5). Run it as
``python rfc9180_extract.py draft-irtf-cfrg-hpke.md > rfc9180_base.json``; the values are copied, never computed.
"""

import json
import re
import sys

SOURCE = ("RFC 9180 (HPKE), Appendix A, base mode: the 'Base Setup Information' and 'Encryptions' of A.1 to A.6, "
          "copied from the RFC's source draft-irtf-cfrg-hpke.md at github.com/cfrg/draft-irtf-cfrg-hpke commit "
          "b1f7cb0cdeab6906c61b3d6574e8bdfdbe1cd3fb by rfc9180_extract.py")
KEEP = ("mode", "kem_id", "kdf_id", "aead_id", "info", "ikmE", "pkEm", "skEm", "ikmR", "pkRm", "skRm", "enc")


def blocks(text: str) -> list[tuple[str, str, list[str]]]:
    """(suite heading, subsection heading, lines) of every ~~~ block of the test vector appendix."""
    out, suite, section, inside, lines = [], "", "", False, []
    for line in text[text.index("# Test Vectors"):].splitlines():
        if line.startswith("~~~"):
            if inside:
                out.append((suite, section, lines))
            inside, lines = not inside, []
        elif inside:
            lines.append(line.strip())
        elif line.startswith("## "):
            suite = line[3:].strip()
        elif line.startswith("### ") or line.startswith("#### "):
            section = line.lstrip("#").strip()
    return out


def fields(lines: list[str]) -> list[tuple[str, str]]:
    """``name: value`` pairs, a value continued on the following lines of hex digits."""
    out: list[tuple[str, str]] = []
    for line in lines:
        m = re.fullmatch(r"([A-Za-z_ ]+):\s*([0-9a-f]*)", line)
        if m:
            out.append((m.group(1), m.group(2)))
        elif re.fullmatch(r"[0-9a-f]+", line) and out:
            out[-1] = (out[-1][0], out[-1][1] + line)
    return out


def main() -> None:
    vectors, current = [], None
    for suite, section, lines in blocks(open(sys.argv[1]).read()):
        if section == "Base Setup Information":
            setup = dict(fields(lines))
            current = {"suite": suite, **{k: (int(setup[k]) if k.endswith("_id") or k == "mode" else setup[k])
                                          for k in KEEP}}
        elif section == "Encryptions" and current is not None:
            encs, enc = [], None
            for name, value in fields(lines):
                if name == "sequence number":
                    enc = {"sequence_number": int(value)}
                    encs.append(enc)
                elif enc is not None:
                    enc[name] = value
            current["encryptions"] = encs
            if current["aead_id"] != 0xFFFF:
                vectors.append(current)
            current = None
        else:
            current = None if section != "Exported Values" else current
    json.dump({"source": SOURCE, "vectors": vectors}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
