"""``python -m ldp.conformance generate DIR`` writes the vector files; ``check DIR`` exits 1 naming each file
that differs from what this version generates."""

from __future__ import annotations

import argparse
import sys

from ldp.conformance.vectors import check, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ldp.conformance", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("generate", "write the vector files into DIR"), ("check", "compare DIR with a fresh run")):
        sub.add_parser(name, help=text).add_argument("directory", metavar="DIR")
    args = parser.parse_args(argv)
    if args.command == "generate":
        paths = write(args.directory)
        print(f"wrote {len(paths)} vector files to {args.directory}")
        return 0
    problems = check(args.directory)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"write them with: python -m ldp.conformance generate {args.directory}", file=sys.stderr)
    if not problems:
        print(f"{args.directory}: every vector file is what this version generates")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
