"""The ingest service's answer to one uploaded batch part: :func:`check_answer` says whether a 2xx is sane.

Standard library only. Used by :mod:`ldp.client.uploader`; the TypeScript, Kotlin and Rust clients check the same
rules (their uploader tests replay the same bad answers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ldp.spec.schema import MAX_BATCH

__all__ = ["check_answer"]


def _show(value: object) -> str:
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return "".join(c if c.isprintable() else "?" for c in text)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"the answer repeats key {_show(next(k for k in keys if keys.count(k) > 1))}")
    return dict(pairs)


def _not_a_number(name: str) -> None:
    raise ValueError(f"the answer holds {name}")


def _count(answer: Mapping[str, Any], key: str) -> int:
    value = answer[key]
    if type(value) is not int or value < 0:
        raise ValueError(f"{key} is {_show(value)}, not an integer >= 0")
    return value


def check_answer(body: bytes, batch: str, sent: int) -> dict[str, Any]:
    """The ingest service's 2xx answer to part ``batch`` of ``sent`` lines, if it is sane, else ``ValueError`` saying
    what is wrong. Sane: one JSON object (no repeated key) with ``batch_id`` equal to ``batch``; ``accepted``,
    ``lines`` and each count of ``rejected`` (an object of reason names) integers >= 0, not booleans;
    ``accepted + sum(rejected) == lines``; ``lines == sent``, or, for ``"duplicate": true`` (the counts of the
    first delivery, whose part may have held items since acknowledged by other means), ``sent <= lines <=
    MAX_BATCH``, and ``accepted`` and ``rejected`` may both be absent (the ingest service keeps only the line count of
    a batch whose segment it shuffled); ``duplicate``, if given, a boolean. Other keys are ignored."""
    try:
        answer = json.loads(body.decode("utf-8"), object_pairs_hook=_no_duplicate_keys,
                            parse_constant=_not_a_number)
    except UnicodeDecodeError:
        raise ValueError("the answer is not UTF-8") from None
    except RecursionError:
        raise ValueError("the answer is nested too deeply") from None
    except ValueError as exc:
        if str(exc).startswith("the answer"):
            raise
        raise ValueError(f"the answer is not JSON ({str(exc)[:80]})") from None
    if not isinstance(answer, dict):
        raise ValueError(f"the answer is {type(answer).__name__}, not a JSON object")
    if "batch_id" in answer and answer["batch_id"] != batch:
        raise ValueError(f"the answer names batch {_show(answer['batch_id'])}, not {batch}")
    duplicate = answer.get("duplicate", False)
    if not isinstance(duplicate, bool):
        raise ValueError(f"duplicate is {_show(duplicate)}, not a boolean")
    counted = not (duplicate and "accepted" not in answer and "rejected" not in answer)
    needed = ("batch_id", "accepted", "rejected", "lines") if counted else ("batch_id", "lines")
    if missing := [k for k in needed if k not in answer]:
        raise ValueError(f"the answer lacks {', '.join(missing)}")
    lines = _count(answer, "lines")
    if counted:
        accepted, rejected = _count(answer, "accepted"), answer["rejected"]
        if not isinstance(rejected, dict):
            raise ValueError(f"rejected is {_show(rejected)}, not an object of counts by reason")
        for reason in rejected:
            if not (0 < len(reason) <= 100 and reason.isprintable()):
                raise ValueError(f"rejected names reason {_show(reason)}")
            _count(rejected, reason)
        if accepted + sum(rejected.values()) != lines:
            raise ValueError(f"accepted ({accepted}) + rejected ({sum(rejected.values())}) != lines ({lines})")
    if not (sent <= lines <= MAX_BATCH if duplicate else lines == sent):
        raise ValueError(f"the answer counts {lines} line(s); {sent} were sent")
    return answer
