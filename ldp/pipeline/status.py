"""The shuffler's status where the analysts' readers see it: ``apps/<app>/segments/status/shuffler.json``, beside the
segments and never among them (readers fold ``segments/closed/``). The shuffler writes it (:mod:`ldp.shuffler.stage`)
when a run is set aside or put back; an ingest service's fold (:mod:`ldp.ingest.watch`) reads it and its dashboard says
so. It names each run set aside, since when, its attempts, the class of its last error and the windows it holds
(UTC starts): nothing of a chunk, a replica, a batch or an arrival time finer than the window.

    {"format": "ldp-shuffler-status/1", "checked_at": <Unix s>,
     "set_aside": [{"run": "<id>", "since": <Unix s>, "attempts": 4, "error": "RuntimeError",
                    "windows": ["1728000000"]}]}
"""

from __future__ import annotations

import json
import time
from typing import Any

from ldp.storage.roles import segments_prefix

__all__ = ["STATUS_FORMAT", "status_key", "status_warnings"]

STATUS_FORMAT = "ldp-shuffler-status/1"


def status_key(app: str) -> str:
    """``apps/<app>/segments/status/shuffler.json``."""
    return f"{segments_prefix(app)}status/shuffler.json"


def status_warnings(data: bytes) -> list[str]:
    """The dashboard's warnings from a status object's bytes: one per run set aside (a damaged or foreign object:
    one warning saying so, never an exception)."""
    try:
        doc: Any = json.loads(data)
        if not isinstance(doc, dict) or doc.get("format") != STATUS_FORMAT:
            raise ValueError(f"not an {STATUS_FORMAT} object")
        out = []
        for run in doc["set_aside"]:
            since = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(run["since"])))
            windows = ", ".join(time.strftime("%Y-%m-%d", time.gmtime(int(w))) for w in run["windows"][:5])
            out.append(f"the shuffler set aside run {run['run']} on {since} after {run['attempts']} attempts "
                       f"({run['error']}): its reports" + (f" (windows from {windows})" if windows else "")
                       + " are in no segment until the operator fixes the cause and runs ldp shuffle --retry "
                       f"{run['run']}")
        return out
    except (ValueError, KeyError, TypeError) as exc:
        return [f"the shuffler's status object is not readable ({exc})"]
