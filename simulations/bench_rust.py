"""Rust client section of ``simulations/benchmark.py`` (issue 46), registered by :func:`register`.

Per-report ``encode`` time of the native client (``clients/rust``) through its Rust API and through its C interface,
beside the Python client's, on the same parameters and values, each from its platform's generator (``getrandom``;
``os.urandom``), each report turned into its JSON text (the C path: the whole upload line). The Rust figures come
from ``examples/encode_bench.rs`` and the C figures from ``bench/encode_bench.c`` linked against the release static
library, both built here with ``cargo build --release`` and the system C compiler; without ``cargo`` or ``cc`` the
section says so and measures only the Python side. A native encoder slower than the Python one is a defect: the
targets are ``rust_us <= python_us`` and ``c_us <= python_us`` for every case.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from bench_kotlin import CASES, python_us

RUST = Path(__file__).resolve().parents[1] / "clients" / "rust"


def build(b: ModuleType, tmp: Path) -> tuple[Path, Path] | str:
    """The release example binary and the C benchmark binary, or why they could not be built."""
    cargo, cc = shutil.which("cargo"), shutil.which(os.environ.get("CC", "cc"))
    if cargo is None or cc is None:
        return "not built: the Rust section needs cargo and a C compiler"
    b.log("  rust: cargo build --release (library and example)")
    subprocess.run([cargo, "build", "--release", "--quiet", "--lib", "--example", "encode_bench"], cwd=RUST,
                   check=True, timeout=1200)
    release = RUST / "target" / "release"
    libs = subprocess.run([cargo, "rustc", "--release", "--quiet", "--lib", "--crate-type", "staticlib", "--",
                           "--print", "native-static-libs"], cwd=RUST, capture_output=True, text=True, check=True,
                          timeout=1200).stderr
    native = next((line.split("native-static-libs:", 1)[1].split() for line in libs.splitlines()
                   if "native-static-libs:" in line), ["-lpthread", "-ldl", "-lm"])
    c_bin = tmp / "encode_bench_c"
    subprocess.run([cc, "-O2", "-std=c99", "-I", str(RUST / "include"), str(RUST / "bench" / "encode_bench.c"),
                    str(release / "libldp_client.a"), *native, "-o", str(c_bin)], check=True, timeout=300)
    return release / "examples" / "encode_bench", c_bin


def c_case(c_bin: Path, tmp: Path, name: str, case: dict[str, Any], calls: int) -> dict[str, Any]:
    spec = {"spec_version": 1, "name": "bench", "budget": {"per_window": 1e9, "lifetime": 1e9},
            "metrics": {"m": {"protocol": case["protocol"], "params": case["params"], "budget": {"per_report": 1e6}}}}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(spec))
    done = subprocess.run([str(c_bin), str(path), "m", json.dumps(case["value"]), str(calls)],
                          capture_output=True, text=True, check=True, timeout=600)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def register(b: ModuleType) -> None:
    """Add the ``rust_client`` section to the benchmark module ``b``."""

    @b.benchmark("rust_client")
    def rust_client(ctx: Any) -> dict[str, Any]:
        s = ctx.sizes
        out: dict[str, Any] = {"cases": {}}
        calls = s.client_calls * 4
        with tempfile.TemporaryDirectory() as t:
            tmp = Path(t)
            built = build(b, tmp)
            rust: dict[str, Any] = {}
            if isinstance(built, str):
                out["rust"] = built
            else:
                example, c_bin = built
                b.log(f"  rust: {calls:,} calls per case")
                done = subprocess.run([str(example), json.dumps(CASES), str(calls)], capture_output=True, text=True,
                                      check=True, timeout=600)
                rust = json.loads(done.stdout.strip().splitlines()[-1])
            for name, case in CASES.items():
                b.log(f"  python {name}: {s.client_calls:,} calls")
                row: dict[str, Any] = {"protocol": case["protocol"], "params": case["params"],
                                       "python": python_us(b, case, s.client_calls, s.client_batch)}
                if name in rust:
                    row["rust"] = rust[name]
                    row["c"] = c_case(c_bin, tmp, name, case, calls)
                    for side in ("rust", "c"):
                        row[f"speedup_{side}_over_python"] = row["python"]["us_mean"] / row[side]["us_mean"]
                        row.update(ctx.judge(f"{name}.{side}_us_mean", row[side]["us_mean"], "<=",
                                             row["python"]["us_mean"], "µs/report (the Python client's)"))
                out["cases"][name] = row
        return out
