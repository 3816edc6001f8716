"""The conformance battery's statistical power, per protocol (issue 48): for every example of every registered
protocol (or those named), the collections its statistics check ran, the pooled variance test's measured spread and
critical value, and the probability that a variance formula 10 % off (either way) would fail it. Prints one JSON
document; exits 1 if an example fails.

    python simulations/battery_power.py [PROTOCOL ...]
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import warnings

from ldp.protocols import get_protocol, protocols
from ldp.protocols.check_statistics import POOLED_ALPHA, POWER, VARIANCE_ERROR, statistics_power


def main(argv: list[str]) -> int:
    warnings.simplefilter("ignore")
    names = argv or list(protocols())
    out: dict[str, object] = {"variance_error": VARIANCE_ERROR, "target_power": POWER,
                              "pooled_false_alarm_per_protocol": POOLED_ALPHA, "protocols": {}}
    failed = False
    for name in names:
        start = time.perf_counter()
        rows = statistics_power(get_protocol(name))
        failed |= any(r.failures for r in rows)
        out["protocols"][name] = {  # type: ignore[index]
            "seconds": round(time.perf_counter() - start, 2), "min_power": min(r.power for r in rows),
            "examples": [dataclasses.asdict(r) for r in rows]}
        print(f"{name}: power {min(r.power for r in rows):.4f}", file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
