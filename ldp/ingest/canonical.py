"""Canonical bytes at the door: every accepted upload line is stored in the one serialization the clients write.

The line bytes survive the shuffle: a shuffled segment mixes the lines of many devices, but a line whose keys come
in another order, with ``", "`` or ``": "`` separators, spaces, ``\\u`` escapes or a CRLF ending stands out among
them, and links every report of its client across windows (an anonymity set of one). So the ingest service (a replica
too) stores each line it accepts as the bytes every client of this project writes for that report, the upload
envelope of ``docs/conformance.md`` and ``Envelope.to_json``::

    {"spec":"<fp>","metric":"<m>","window":<int>,"report":{"v":1,"protocol":"<p>","params":"<fp>","payload":{...}}}

keys in that order, the payload's fields in the order of the metric's schema (``params.schema``), no spaces,
integers in decimal (no sign, no leading zero: ``-0`` is ``0``), strings unescaped (every string an envelope
accepts is ASCII letters, digits, ``_`` and ``-``), then ``\\n``. There are no floats (a ``uint`` or a window
that is not an integer is rejected) and nothing to drop: the parser rejects any key beyond these
(``unknown_key``) and any payload field the schema does not have (``payload_mismatch``), so no client library
name or version can ride along. Blank lines are dropped (they are not reports, and a client's habit of writing
them would mark its batches). Rejected lines are stored as they came, as before (:mod:`ldp.ingest.rejects`):
``ldp fold`` rejects them again and shows them in its rejects file.

:func:`~ldp.pipeline.canonical.canonical_line` is the rule (parse, route, write the envelope again: in
:mod:`ldp.pipeline`, as the shuffler checks lines by it too), :func:`canonical_lines` applies it to a body line by
line: the reference. :func:`canonical_body` is what the upload path runs: the template path of the
validator (:func:`ldp.jobs.jsonl.match_lines`) accepts only lines whose bytes are the clients' exact form (every
byte fixed but the decimal digits and the bits, no leading zeros), so a line it took is canonical already, but for
a ``\\r`` before its newline (dropped, vectorized). Only the lines the full parser accepted (one Python parse each
in the validator already) are written again, and blank lines dropped; a body of our clients' lines is stored as
it came, after one ``memchr`` for ``\\r``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from ldp.ingest.rejects import RejectSpan, SpanFolder
from ldp.pipeline.canonical import canonical_line
from ldp.spec import CollectionSpec, EnvelopeError

__all__ = ["canonical_line", "canonical_lines", "canonical_body"]


def _rewrite(line: bytes, specs: Mapping[str, CollectionSpec]) -> bytes:
    """:func:`canonical_line` of a line the validator accepted, without checking it again (which would double
    the cost of the full parser's lines): its values, read by ``json.loads``, written in the clients' order. The
    same bytes, for such a line (tested against :func:`canonical_line`)."""
    obj = json.loads(line)
    report, spec, metric = obj["report"], obj["spec"], obj["metric"]
    payload = report["payload"]
    schema = specs[spec].metrics[metric].params.schema
    return json.dumps({"spec": spec, "metric": metric, "window": obj["window"],
                       "report": {"v": report["v"], "protocol": report["protocol"], "params": report["params"],
                                  "payload": {f.name: payload[f.name] for f in schema}}},
                      separators=(",", ":")).encode("ascii")


def canonical_lines(body: bytes, specs: Mapping[str, CollectionSpec]) -> bytes:
    """The body as stored, line by line (the reference for :func:`canonical_body`): ``body`` is whole lines, each
    ending in ``\\n``; a blank line is dropped, an accepted one becomes :func:`canonical_line` and ``\\n``, a
    rejected one is kept as it came. Lines are cut at ``\\n`` only and parsed without one ``\\r`` before it, as
    the ingest service's parser does (:func:`ldp.jobs.jsonl.line_bounds`)."""
    out: list[bytes] = []
    for raw in body.split(b"\n")[:-1]:
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line.strip():
            continue
        try:
            out.append(canonical_line(line, specs) + b"\n")
        except EnvelopeError:
            out.append(raw + b"\n")
    return b"".join(out)


def canonical_body(body: bytes, specs: Mapping[str, CollectionSpec], folder: SpanFolder,
                   spans: list[RejectSpan]) -> tuple[bytes, list[RejectSpan]]:
    """``body`` as stored, from what the validator learnt of it (:func:`ldp.ingest.rejects.find_rejects`: the
    ``folder`` and the rejected lines' ``spans``), and those spans moved to where their lines are in it.

    The same bytes as :func:`canonical_lines` (tested against it): a line the template path took is canonical
    already, a ``\\r`` before its newline dropped (a numpy mask, no Python per line); a line the full parser
    accepted (``folder.parsed_rows()``) is written again (:func:`_rewrite`, once per distinct line) and a blank
    line left out, one Python step each, as each already cost one in the validator; rejected lines stay, byte for
    byte. A body without any of these (our clients' uploads) is returned as it is, without a copy."""
    parsed, blank = folder.parsed_rows(), folder.blank_rows()
    if not parsed.size and not blank.size and b"\r" not in body:
        return body, spans
    starts, ends = folder.bounds
    n = len(body)
    after = np.append(starts[1:], n)  # line i is body[starts[i]:after[i]], its newline included
    rejected_at = np.array([s.start for s in spans], dtype=np.int64)
    kind = np.zeros(len(starts), dtype=np.int8)  # 0: taken by the template path, 1: rejected, 2: replaced whole
    kind[np.searchsorted(starts, rejected_at)] = 1
    kind[parsed] = 2
    kind[blank] = 2
    cr = ends[(kind == 0) & (after - ends == 2)]  # the '\r' of a template line's CRLF (sorted)
    whole = np.flatnonzero(kind == 2)
    keep = np.ones(n, dtype=bool)
    keep[cr] = False
    for s, e in zip(starts[whole].tolist(), after[whole].tolist(), strict=True):
        keep[s:e] = False
    kept = np.frombuffer(body, dtype=np.uint8)[keep]
    whole_bytes = np.concatenate(([0], np.cumsum(after[whole] - starts[whole])))

    def dropped_before(offsets: np.ndarray) -> np.ndarray:
        """Bytes of ``body`` left out before each offset (a line's start, that of a line not left out)."""
        return np.searchsorted(cr, offsets) + whole_bytes[np.searchsorted(starts[whole], offsets)]

    texts: dict[bytes, bytes] = {}  # a batch may repeat a line: written once
    parts: list[bytes] = []
    at = 0
    inserted = [0]
    parsed_starts = starts[parsed]
    for s, e, pos in zip(parsed_starts.tolist(), ends[parsed].tolist(), dropped_before(parsed_starts).tolist(),
                         strict=True):
        line = body[s:e]
        text = texts.get(line)
        if text is None:
            text = texts[line] = _rewrite(line, specs) + b"\n"
        parts += [kept[at:s - pos].tobytes(), text]
        at = s - pos
        inserted.append(inserted[-1] + len(text))
    parts.append(kept[at:].tobytes())
    if spans:
        shift = np.array(inserted, dtype=np.int64)[np.searchsorted(parsed_starts, rejected_at)] \
            - dropped_before(rejected_at)
        spans = [RejectSpan(r.start + d, r.end + d, r.reason) for r, d in zip(spans, shift.tolist(), strict=True)]
    return b"".join(parts), spans
