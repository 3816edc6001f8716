"""What the shuffler checks of every line it mixes: its bytes are the clients' canonical ones, and its metric.

**Canonical bytes** (issue 57). A line's formatting survives the shuffle: one in another serialization stands out in
its segment and links its sender's reports across windows. The ingest service stores every accepted line canonical
(:mod:`ldp.ingest.canonical`), but chunks written before it did (older replicas) may hold others, so the shuffler
checks every line again and writes any that is not canonical anew (:meth:`LineRules.canonical`):

* a line of a spec it was given (``ldp shuffle --spec``) must be byte for byte the envelope the clients write for it,
  payload fields in the metric's schema order (the ingest service's templates, :func:`ldp.jobs.jsonl.templates_for`,
  as one regular expression); one that is not becomes :func:`~ldp.ingest.canonical.canonical_line` of it;
* a line of a spec it was not given can only be checked for the envelope's shape (keys in order, no spaces, decimal
  integers, bit strings): one in another shape is written again in that shape with its payload fields in the order
  they came (:meth:`~ldp.spec.Envelope.to_json`), and every such line is counted ``unverified`` — pass its spec;
* a line that is no envelope at all, or not a report of its spec (a replica before issue 70 kept rejected lines in
  its chunks), is **dropped**, counted ``rejected``: a rejected line may hold anything a client (or a person typing
  at the endpoint) sent — an e-mail address, a name — and stays where it was rejected, in the replica's data
  folder, never in a segment or any prefix the analysts read.

A batch of canonical lines — every batch our clients sent — is checked by one match of the compiled expression over
its bytes (no Python step per line); only a batch that fails is taken line by line.

**Metrics.** A canonical line begins ``{"spec":"<fp>","metric":"<m>",``: :meth:`LineRules.metrics` counts the lines
per ``<fp>/<m>`` with one ``findall``, and :meth:`LineRules.drop` removes the lines of given metrics (the shuffler's
per-metric threshold) with one substitution.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ldp.spec import CollectionSpec, EnvelopeError, parse_envelope

__all__ = ["LineRules", "LineCounts", "UNPARSED"]

UNPARSED = "(unparsed)"
"""The metric key of a line that is no canonical envelope."""

_UINT = rb"(?:0|[1-9][0-9]{0,19})"
_FIELD = rb'"[a-z][a-z0-9_]{0,31}":(?:' + _UINT + rb'|"[01]+")'
_HEAD = rb'\{"spec":"[0-9a-f]{16}","metric":"[a-z][a-z0-9_]{0,31}","window":' + _UINT
_SHAPE = (_HEAD + rb',"report":\{"v":1,"protocol":"[a-z][a-z0-9_-]{0,31}","params":"[0-9a-f]{16}","payload":\{(?:'
          + _FIELD + rb"(?:," + _FIELD + rb")*)?\}\}\}\n")
_KEY = re.compile(rb'^\{"spec":"([0-9a-f]{16})","metric":"([a-z][a-z0-9_]{0,31})",', re.M)


@dataclass
class LineCounts:
    """What :meth:`LineRules.canonical` found: lines written anew, lines of a spec not given (their payload order
    not checked), lines that are no report (dropped), blank lines dropped."""

    rewritten: int = 0
    unverified: int = 0
    rejected: int = 0
    blank: int = 0

    def add(self, other: LineCounts) -> None:
        self.rewritten += other.rewritten
        self.unverified += other.unverified
        self.rejected += other.rejected
        self.blank += other.blank

    def to_dict(self) -> dict[str, int]:
        return {k: v for k, v in vars(self).items() if v}


class LineRules:
    """The canonical-bytes rule of the shuffler for ``specs`` (``{fingerprint: CollectionSpec}``; may be empty)."""

    def __init__(self, specs: Mapping[str, CollectionSpec] | None = None) -> None:
        from ldp.jobs.jsonl import templates_for

        self.specs = dict(specs or {})
        exact = [_template_re(t) for t in templates_for(self.specs)] if self.specs else []
        known = b"|".join(re.escape(fp.encode()) for fp in sorted(self.specs))
        other = (rb'(?!\{"spec":"(?:' + known + rb')")' if known else b"") + _SHAPE
        self._line = re.compile(b"(?:" + b"|".join([*exact, other]) + b")")
        self._lines = re.compile(b"(?:" + self._line.pattern + b")*")
        self._unknown = re.compile(rb'^\{"spec":"(?!(?:' + known + rb')")', re.M) if known else None

    def canonical(self, lines: bytes) -> tuple[bytes, LineCounts]:
        """``lines`` (whole lines, each ending in ``\\n``) with every line canonical (module docstring), and what
        was found. The same bytes for the same input (the shuffler's engines read a chunk more than once)."""
        counts = LineCounts()
        if self._lines.fullmatch(lines):
            counts.unverified = self._unverified(lines)
            return lines, counts
        out: list[bytes] = []
        for raw in lines.split(b"\n")[:-1]:
            line = raw + b"\n"
            if self._line.fullmatch(line):
                out.append(line)
                counts.unverified += self._unverified(line)
                continue
            text = raw[:-1] if raw.endswith(b"\r") else raw
            if not text.strip():
                counts.blank += 1
                continue
            if (fixed := self._rewrite(text, raw, counts)) is not None:
                out.append(fixed + b"\n")
        return b"".join(out), counts

    def _unverified(self, lines: bytes) -> int:
        """The lines (canonical envelopes all) of a spec not given."""
        return lines.count(b"\n") if self._unknown is None else len(self._unknown.findall(lines))

    def _rewrite(self, text: bytes, raw: bytes, counts: LineCounts) -> bytes | None:
        """The canonical form of one line that is not, or ``None`` (counted ``rejected``) for a line that is no
        report: dropped, never mixed."""
        from ldp.pipeline.canonical import canonical_line

        try:
            env = parse_envelope(text)
        except EnvelopeError:
            counts.rejected += 1
            return None
        if env.spec in self.specs:
            try:
                fixed = canonical_line(text, self.specs)
            except EnvelopeError:  # not a report of its spec
                counts.rejected += 1
                return None
        else:
            fixed = env.to_json().encode("ascii")
            counts.unverified += 1
        counts.rewritten += fixed != raw
        return fixed

    @staticmethod
    def metrics(lines: bytes) -> Counter[str]:
        """Lines per ``<spec fingerprint>/<metric>`` (``(unparsed)`` for a line that is not a canonical envelope)."""
        found = Counter(f"{s.decode()}/{m.decode()}" for s, m in _KEY.findall(lines))
        if (rest := lines.count(b"\n") - sum(found.values())) > 0:
            found[UNPARSED] += rest
        return found

    @staticmethod
    def drop(lines: bytes, metrics: Iterable[str]) -> bytes:
        """``lines`` without those of the given ``<fp>/<m>`` keys."""
        keys = sorted(k for k in metrics if k != UNPARSED)
        if not keys or not lines:
            return lines
        alts = b"|".join(re.escape(f'{{"spec":"{fp}","metric":"{m}",'.encode()) for fp, _, m in
                         (k.partition("/") for k in keys))
        return re.sub(b"^(?:" + alts + b")[^\n]*\n", b"", lines, flags=re.M)

    @staticmethod
    def split(lines: bytes) -> dict[str, bytes]:
        """``lines`` by metric key (the lines of each, in order)."""
        keys = _KEY.findall(lines)
        if keys and len(keys) == lines.count(b"\n") and len(set(keys)) == 1:
            return {f"{keys[0][0].decode()}/{keys[0][1].decode()}": lines}
        out: dict[str, list[bytes]] = {}
        for raw in lines.split(b"\n")[:-1]:
            m = _KEY.match(raw)
            out.setdefault(f"{m.group(1).decode()}/{m.group(2).decode()}" if m else UNPARSED, []).append(raw + b"\n")
        return {k: b"".join(v) for k, v in out.items()}


def _template_re(t: object) -> bytes:
    """The regular expression of one ingest service template: its literal pieces, a window and each field's value."""
    prefix, pieces, fields = t.prefix, t.pieces, t.fields  # type: ignore[attr-defined]
    out = re.escape(prefix) + _UINT
    for piece, f in zip(pieces, fields, strict=False):
        out += re.escape(piece) + (_UINT if f.kind == "uint" else b"[01]{%d}" % f.size)
    return out + re.escape(pieces[-1]) + b"\n"
