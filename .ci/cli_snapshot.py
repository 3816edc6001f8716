"""Record what the ``ldp`` command prints for every protocol at fixed seeds, to prove a refactoring changes no
behaviour (issue 29): ``python .ci/cli_snapshot.py record DIR`` before the move, ``compare DIR`` after.

Covers ``ldp demo --json``, ``privacy``, ``plan`` (one protocol, ``--recommend``), ``simulate`` (both methods) and
``decode`` of a simulated aggregate, each in text and JSON, for every registered protocol, named positionally
(``ldp simulate grr``; ``--protocol grr`` is the same command, issue 48). Stdout, stderr and the exit status are
compared byte for byte. The subprocesses import ``ldp`` from ``PYTHONPATH`` when it is set (the checkout under test).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

EPSILON, D, N = "1", "8", "3000"
MEAN = {"duchi", "piecewise", "hybrid", "memo-mean"}
MULTI_ATTRS = json.dumps([{"name": "a", "protocol": "grr", "params": {"domain_size": 4}},
                          {"name": "b", "protocol": "piecewise", "params": {"low": 0, "high": 10}}])


def _protocols() -> list[str]:
    from ldp.protocols import protocols

    return list(protocols())


def _d(protocol: str) -> int | None:
    """The ``--d`` given: none for the mean mechanisms and ``multi`` (their domains come from their params)."""
    if protocol in MEAN or protocol == "multi":
        return None
    return 2 if protocol == "rr" else int(D)


def _extra(protocol: str) -> list[str]:
    if protocol == "multi":
        return ["--param", f"attributes={MULTI_ATTRS}", "--param", "mode=split"]
    if protocol in MEAN:
        return ["--param", "low=0", "--param", "high=10"]
    return []


def _decode_inputs(folder: Path) -> list[tuple[str, list[str]]]:
    """A spec with one metric per protocol and an aggregate file of each, made through the public API."""
    import numpy as np

    from ldp.plan.frequency import default_params
    from ldp.simulation.collect import default_candidates, simulate

    metrics, commands = {}, []
    for protocol in _protocols():
        if protocol in MEAN or protocol == "multi":
            continue
        params = default_params(protocol, 1.0, _d(protocol) or 0)
        counts = np.array([900, 500, 300, 200, 100, 60, 30, 10])
        metric: dict = {"protocol": protocol, "params": params.to_dict(), "description": protocol,
                          "budget": {"per_report": 100.0, "per_window": 100.0, "lifetime": 1000.0}}
        rng = np.random.default_rng(7)
        if params.domain_size is None:
            cands = default_candidates(params, 8)
            (folder / f"{protocol}.txt").write_text("\n".join(cands) + "\n")
            metric["candidates"] = f"{protocol}.txt"
            agg = simulate(params, dict(zip(cands, counts.tolist(), strict=True)), rng=rng)
        else:
            agg = simulate(params, counts[:params.domain_size] if params.domain_size <= 8
                           else np.resize(counts, params.domain_size), rng=rng)
        name = "m_" + protocol.replace("-", "_")
        metrics[name] = metric
        (folder / f"{name}.agg").write_bytes(agg.to_bytes())
        for fmt in ([], ["--json"]):
            commands.append((f"decode-{protocol}{''.join(fmt)}",
                             ["decode", str(folder / f"{name}.agg"), "--spec", str(folder / "spec.json"),
                              "--metric", name, *fmt]))
    spec = {"spec_version": 1, "name": "snap", "window_seconds": 86400,
            "budget": {"per_window": 1000.0, "lifetime": 100000.0}, "metrics": metrics}
    (folder / "spec.json").write_text(json.dumps(spec, indent=1))
    return commands


def commands(folder: Path) -> list[tuple[str, list[str]]]:
    out = [("demo-json", ["demo", "--quick", "--json", "--seed", "3"]),
           ("demo-text", ["demo", "--quick", "--seed", "3"]),
           ("recommend", ["plan", "--recommend", "--epsilon", "2", "--d", "16"]),
           ("recommend-json", ["plan", "--recommend", "--epsilon", "2", "--d", "16", "--json"]),
           ("recommend-mean", ["plan", "--recommend", "--mean", "--epsilon", "2", "--param", "low=0",
                               "--param", "high=5"])]
    for p in _protocols():
        d = _d(p)
        ex = _extra(p) + ([] if d is None else ["--d", str(d)])
        for fmt in ([], ["--json"]):
            j = "".join(fmt)
            out.append((f"privacy-{p}{j}", ["privacy", p, "--epsilon", EPSILON, *ex, *fmt]))
            plan_ex = [a for a in ex if a != "mode=split"]
            plan_ex = plan_ex[:-1] if plan_ex[-1:] == ["--param"] else plan_ex
            out.append((f"plan-{p}{j}", ["plan", p, "--epsilon", EPSILON, "--n", "100000", *plan_ex, *fmt]))
            for method in ("aggregate", "per_report"):
                out.append((f"simulate-{p}-{method}{j}",
                            ["simulate", p, "--epsilon", EPSILON, "--n", N, "--trials", "2",
                             "--method", method, "--seed", "5", *ex, *fmt]))
    return out + _decode_inputs(folder)


def _run(argv: list[str], cwd: Path) -> str:
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "COLUMNS": "120", "PYTHONHASHSEED": "0"}
    if os.environ.get("PYTHONPATH"):  # the checkout under test, not whichever ldp the interpreter has installed
        env["PYTHONPATH"] = os.pathsep.join(str(Path(e).resolve()) for e in os.environ["PYTHONPATH"].split(os.pathsep))
    done = subprocess.run([sys.executable, "-m", "ldp", *argv], capture_output=True, text=True, cwd=cwd, env=env)
    text = f"$ ldp {' '.join(argv)}\n[exit {done.returncode}]\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    text = text.replace(str(cwd), "<TMP>")
    if argv[0] == "demo":  # its timings vary from run to run
        text = re.sub(r"\((\d+(\.\d+)?) (s|ms)\)", "(<time>)", text)
        text = re.sub(r'("seconds": \{[^}]*\})', '"seconds": <times>', text)
    return text


def collect() -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cmds = commands(folder)
        with ThreadPoolExecutor(max_workers=4) as pool:
            texts = list(pool.map(lambda c: _run(c[1], folder), cmds))
        return {name: text for (name, _), text in zip(cmds, texts, strict=True)}


def main() -> int:
    mode, target = sys.argv[1], Path(sys.argv[2])
    got = collect()
    if mode == "record":
        target.mkdir(parents=True, exist_ok=True)
        for name, text in got.items():
            (target / f"{name}.txt").write_text(text)
        print(f"recorded {len(got)} outputs in {target}")
        return 0
    want = {p.stem: p.read_text() for p in target.glob("*.txt")}
    bad = sorted(set(want) ^ set(got)) + sorted(k for k in set(want) & set(got) if want[k] != got[k])
    for name in bad:
        print(f"== {name} differs")
        sys.stdout.writelines(difflib.unified_diff(want.get(name, "").splitlines(True),
                                                   got.get(name, "").splitlines(True), n=1))
    print(f"{len(got) - len(bad)}/{len(got)} identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
