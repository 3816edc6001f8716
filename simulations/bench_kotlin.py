"""Kotlin client section of ``simulations/benchmark.py`` (issue 45), registered by :func:`register`.

Per-report ``encode`` time of the Kotlin client (``clients/kotlin``) beside the Python client's, on the same
parameters and values, each from its platform's CSPRNG (``SecureRandom``; ``os.urandom``), each report turned into
its JSON text. The Kotlin figures come from ``io.github.ldptelemetry.client.bench.EncodeBenchmark`` run in a JVM
(the build of ``clients/kotlin``: ``mvn -B test`` and ``mvn -B dependency:build-classpath
-Dmdep.outputFile=target/classpath.txt``); without that build, or without ``java``, the section says so and
measures only the Python side. A JVM encoder slower than the Python one is a defect: the target is
``kotlin_us <= python_us`` for every case.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

KOTLIN = Path(__file__).resolve().parents[1] / "clients" / "kotlin"
MAIN = "io.github.ldptelemetry.client.bench.EncodeBenchmark"
CASES: dict[str, dict[str, Any]] = {
    "grr_eps1_d1024": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 1024}, "value": 5},
    "olh_eps1_d1024": {"protocol": "olh", "params": {"epsilon": 1.0, "domain_size": 1024}, "value": 5},
    "rappor_k128_h2_m64": {"protocol": "rappor", "params": {"num_bloombits": 128, "num_hashes": 2,
                                                            "num_cohorts": 64, "p": 0.25, "q": 0.75, "f": 0.5},
                           "value": "https://site1.example/"},
    "pgr_eps2_d1024": {"protocol": "pgr", "params": {"epsilon": 2.0, "domain_size": 1024}, "value": 5},
    "hpg_eps8_d65536": {"protocol": "hpg", "params": {"epsilon": 8.0, "domain_size": 65536}, "value": 5},
}


def kotlin_classpath() -> str | None:
    """The built client's classpath, or None when it is not built."""
    deps = KOTLIN / "target" / "classpath.txt"
    if not (deps.exists() and (KOTLIN / "target" / "test-classes").exists()):
        return None
    return os.pathsep.join([str(KOTLIN / "target" / "classes"), str(KOTLIN / "target" / "test-classes"),
                            deps.read_text().strip()])


def python_us(b: ModuleType, case: dict[str, Any], calls: int, batch: int) -> dict[str, Any]:
    """The Python client's ``encode(value).to_json()`` on the case, µs per report."""
    from ldp.protocols import client_protocols

    params_type, encoder_type = client_protocols()[case["protocol"]]
    params = params_type.from_dict(case["params"])
    kw: dict[str, Any] = {}
    if getattr(encoder_type, "needs_secret", False):
        kw["secret"] = bytes(range(32))
    if params_type.__name__ == "RapporParams":
        kw["cohort"] = 0
    encoder = encoder_type(params, **kw)

    class ToJson:  # the Kotlin side turns each report into its JSON text: so does this one
        def __init__(self) -> None:
            self.encode = lambda v: encoder.encode(v).to_json()

    return dict(b.client_path_timing(ToJson(), case["value"], calls, batch))


def register(b: ModuleType) -> None:
    """Add the ``kotlin_client`` section to the benchmark module ``b``."""

    @b.benchmark("kotlin_client")
    def kotlin_client(ctx: Any) -> dict[str, Any]:
        s = ctx.sizes
        out: dict[str, Any] = {"cases": {}}
        kotlin: dict[str, Any] = {}
        cp, java = kotlin_classpath(), shutil.which("java")
        if cp is None or java is None:
            out["kotlin"] = ("not built: cd clients/kotlin && mvn -B test && mvn -B dependency:build-classpath "
                             "-Dmdep.outputFile=target/classpath.txt")
        else:
            b.log(f"  kotlin: {s.client_calls * 4:,} calls per case in a JVM")
            done = subprocess.run([java, "-cp", cp, MAIN, json.dumps(CASES), str(s.client_calls * 4)],
                                  capture_output=True, text=True, check=True, timeout=600)
            kotlin = json.loads(done.stdout.strip().splitlines()[-1])
            out["jvm"] = kotlin.pop("jvm", None)
        for name, case in CASES.items():
            b.log(f"  python {name}: {s.client_calls:,} calls")
            row: dict[str, Any] = {"protocol": case["protocol"], "params": case["params"],
                                   "python": python_us(b, case, s.client_calls, s.client_batch)}
            if name in kotlin:
                row["kotlin"] = kotlin[name]
                row["speedup_kotlin_over_python"] = row["python"]["us_mean"] / kotlin[name]["us_mean"]
                row.update(ctx.judge(f"{name}.kotlin_us_mean", kotlin[name]["us_mean"], "<=",
                                     row["python"]["us_mean"], "µs/report (the Python client's)"))
            out["cases"][name] = row
        return out
