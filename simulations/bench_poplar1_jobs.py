"""Poplar1's aggregation jobs timed (issue 89, item 4): the crypto columns of the ``string_discovery`` section
(:func:`bench_string_discovery.crypto_costs` calls :func:`job_costs`).

**Per report, per aggregator, per level** (:func:`compare_levels`): one job of DAP-09 reports (sealed by
``ldp.prio.seal_report``, the leader's shares opened at its door by ``open_input_shares``) through both aggregators'
steps two ways: the per-report Python path the aggregators ran before the batch calls (a loop of the binding's
per-report calls: the helper's ``open_input_share``, ``check_input_share``, ``verify_init``,
``verifier_shares_to_message`` and ``verify_next``, its state's ``to_bytes`` and ``verify_state_from_bytes``; the
leader's ``verify_init``, two ``verify_next``, its round-1 message; both ``aggregate``), and the batch calls (one call
per step of the job: ``leader_init_batch``, ``helper_init_batch``, ``leader_continue_batch``, ``helper_finish_batch``,
``leader_finish_batch``; the GIL released) at 1 and 2 threads. Each side's seconds are its own calls' (wall, and the
process's CPU time while they run), divided by the job's reports; DAP's message encodings and the records are not in
either. Both ways must give the same aggregate shares (``same_shares``).

**A whole collection, measured** (:func:`whole_collection`): ``n`` reports through every level the walk asks, in
jobs of ``job_size``, with the batch calls at the binding's default threads (``n`` from a CPU budget: the budget over
the CPU seconds per report of a pilot collection of a few reports, run first); each side's CPU and wall seconds, and
the prefix counts checked exact at every level (``counts_exact``). ``parallel_control`` says whether a second thread
could run at all while it was measured (:func:`parallel_control`). The 10⁵-report figure is that
measurement scaled by 10⁵ / n (the cost per report does not depend on n: each job's reports are independent), and
labelled as an extrapolation.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

TASK_ID = bytes(range(32))
TIME = 1_800_000_000
Seconds = dict[str, float]


def _timer() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _add(into: dict[str, Seconds], side: str, start: tuple[float, float]) -> None:
    """The wall and CPU seconds since ``start`` added to ``side``'s."""
    wall, cpu = _timer()
    into[side]["wall"] += wall - start[0]
    into[side]["cpu"] += cpu - start[1]


def _zero() -> dict[str, Seconds]:
    return {"leader": {"wall": 0.0, "cpu": 0.0}, "helper": {"wall": 0.0, "cpu": 0.0}}


def make_reports(prio: Any, vdaf: Any, keys: tuple[Any, Any], values: Sequence[int]) -> list[tuple[Any, ...]]:
    """``(report_id, time, public_share, leader_ciphertext, helper_ciphertext, leader_share)`` per value: a device's
    DAP-09 report, the leader's share opened as its door opens a batch of uploads."""
    from ldp.prio.poplar1 import bits_of

    out = []
    for v in values:
        body = prio.seal_report(vdaf, bits_of(int(v), vdaf.bits), task_id=TASK_ID, time=TIME,
                                leader=keys[0].config, helper=keys[1].config)
        r = prio.DapReport.from_bytes(body)
        out.append((r.report_id, r.time, r.public_share, r.leader_ciphertext, r.helper_ciphertext))
    opened = prio.open_input_shares(keys[0], role="leader", task_id=TASK_ID, reports=[r[:4] for r in out])
    return [(*r, s) for r, s in zip(out, opened, strict=True)]


def batch_job(vdaf: Any, keys: tuple[Any, Any], key: bytes, param: Any, reports: list[tuple[Any, ...]],
              spent: dict[str, Seconds]) -> tuple[Any, Any]:
    """One job through the five batch calls (module docstring), each side's seconds added to ``spent``; both
    aggregate shares (every report must verify: a refusal is an ``AssertionError``)."""
    t = _timer()
    started = vdaf.leader_init_batch(keys[0], key, TASK_ID, param, [(r[0], r[1], r[2], r[3], r[5]) for r in reports])
    _add(spent, "leader", t)
    t = _timer()
    helped = vdaf.helper_init_batch(keys[1], key, TASK_ID, param, [
        (r[0], r[1], r[2], r[4], s[1]) for r, s in zip(reports, started, strict=True)])
    _add(spent, "helper", t)
    assert not any(isinstance(x, str) for x in started + helped), "a valid report refused"
    t = _timer()
    finals = vdaf.leader_continue_batch([s[0] for s in started], [h[1] for h in helped], [h[2] for h in helped])
    _add(spent, "leader", t)
    t = _timer()
    done, helper_share = vdaf.helper_finish_batch(param, [h[0] for h in helped], [f[1] for f in finals])
    _add(spent, "helper", t)
    t = _timer()
    finished, leader_share = vdaf.leader_finish_batch(param, [f[0] for f in finals], [f[1] for f in finals])
    _add(spent, "leader", t)
    assert all(done) and all(finished), "a valid report not finished"
    return leader_share, helper_share


def per_report_job(prio: Any, vdaf: Any, keys: tuple[Any, Any], key: bytes, param: Any,
                   reports: list[tuple[Any, ...]], spent: dict[str, Seconds]) -> tuple[Any, Any]:
    """The same job through the per-report Python path (module docstring); both aggregate shares."""
    from ldp.prio.poplar1 import verify_continue, verify_finish

    t = _timer()
    started = [vdaf.verify_init(key, 0, param, r[0], r[2], r[5]) for r in reports]
    _add(spent, "leader", t)
    t = _timer()
    helped = []
    for r, (_, theirs) in zip(reports, started, strict=True):
        share = prio.open_input_share(keys[1], role="helper", task_id=TASK_ID, report_id=r[0], time=r[1],
                                      public_share=r[2], ciphertext=r[4])
        vdaf.check_input_share(1, share)
        state0, mine = vdaf.verify_init(key, 1, param, r[0], r[2], share)
        msg0 = vdaf.verifier_shares_to_message(state0, [theirs, mine])
        state1, next_share = verify_continue(vdaf, state0, msg0)
        helped.append((state1.to_bytes(), msg0, next_share))
    _add(spent, "helper", t)
    t = _timer()
    outs, msgs = [], []
    for (state0, _), (_, msg0, theirs) in zip(started, helped, strict=True):
        state1, mine = verify_continue(vdaf, state0, msg0)
        msgs.append(vdaf.verifier_shares_to_message(state1, [mine, theirs]))
        outs.append(verify_finish(vdaf, state1, msgs[-1]))
    leader_share = vdaf.aggregate(param, outs)
    _add(spent, "leader", t)
    t = _timer()
    helper_share = vdaf.aggregate(param, [verify_finish(vdaf, vdaf.verify_state_from_bytes(1, param, h[0]), m)
                                          for h, m in zip(helped, msgs, strict=True)])
    _add(spent, "helper", t)
    return leader_share, helper_share


def _per_report_us(spent: dict[str, Seconds], n: int) -> dict[str, dict[str, float]]:
    return {side: {k: v / n * 1e6 for k, v in s.items()} for side, s in spent.items()}


def compare_levels(prio: Any, vdaf: Any, keys: tuple[Any, Any], key: bytes, reports: list[tuple[Any, ...]],
                   params: dict[int, Any], threads: Sequence[int] = (1, 2)) -> list[dict[str, Any]]:
    """Per level of ``params``: µs per report per aggregator (wall and CPU), the per-report path and the batch calls
    at each thread count, on the same job of ``reports`` (one untimed batch job first, as a warm-up)."""
    rows = []
    for level, param in sorted(params.items()):
        batch_job(vdaf, keys, key, param, reports[:8], _zero())
        spent = _zero()
        shares = per_report_job(prio, vdaf, keys, key, param, reports, spent)
        row: dict[str, Any] = {"level": level, "candidates": len(param), "reports": len(reports),
                               "per_report_path_us": _per_report_us(spent, len(reports))}
        same = True
        for n in threads:
            prio.set_batch_threads(n)
            try:
                spent = _zero()
                got = batch_job(vdaf, keys, key, param, reports, spent)
            finally:
                prio.set_batch_threads(None)
            row[f"batch_threads_{n}_us"] = _per_report_us(spent, len(reports))
            same &= all(a.to_bytes() == b.to_bytes() for a, b in zip(got, shares, strict=True))
        row["same_shares"] = same
        rows.append(row)
    return rows


def whole_collection(prio: Any, vdaf: Any, keys: tuple[Any, Any], key: bytes, values: np.ndarray,
                     params: dict[int, Any], job_size: int, counts_of: Callable[[int], list[int]],
                     extrapolate_to: int) -> dict[str, Any]:
    """Every level of ``params`` on the reports of ``values`` (module docstring), measured; ``counts_of(level)``
    gives the exact counts of the level's prefixes, which its two aggregate shares must add up to."""
    from ldp.prio.poplar1 import signed_counts

    start = time.perf_counter()
    reports = make_reports(prio, vdaf, keys, values.tolist())
    seal_s = time.perf_counter() - start
    spent, exact = _zero(), True
    for level, param in sorted(params.items()):
        shares = [vdaf.aggregate_init(param), vdaf.aggregate_init(param)]
        for at in range(0, len(reports), job_size):
            got = batch_job(vdaf, keys, key, param, reports[at:at + job_size], spent)
            for total, share in zip(shares, got, strict=True):
                total.merge(share)
        exact &= signed_counts(shares) == counts_of(level)
    n = len(reports)
    scale = extrapolate_to / n
    return {"reports": n, "levels": len(params), "job_size": job_size, "threads": prio.batch_threads(),
            "seal_and_door_open_s": seal_s, "counts_exact": exact,
            "measured_s": spent,
            "measured_ms_per_report": {side: {k: v / n * 1e3 for k, v in s.items()} for side, s in spent.items()},
            f"extrapolated_to_{extrapolate_to}_reports_s": {side: {k: v * scale for k, v in s.items()}
                                                             for side, s in spent.items()},
            "note": f"measured on {n} reports through every level (batch calls, one process for both aggregators); "
                    f"the {extrapolate_to:,}-report figure is an extrapolation: measured × {extrapolate_to:,} / {n}"}


def parallel_control(rounds: int = 200) -> dict[str, float]:
    """The wall seconds of SHA-256 over 1 MB ``rounds`` times (``hashlib`` releases the GIL on large buffers) in one
    thread and in each of two at once: ``ratio`` near 1 when two cores are free for this process, near 2 when one is
    (then no batch call can gain from a second thread, and the thread columns say nothing about scaling)."""
    import hashlib
    import threading

    data = bytes(1 << 20)

    def burn() -> None:
        for _ in range(rounds):
            hashlib.sha256(data).digest()

    out = {}
    for n in (1, 2):
        threads = [threading.Thread(target=burn) for _ in range(n)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out[f"threads_{n}_s"] = time.perf_counter() - start
    return {**out, "ratio": out["threads_2_s"] / out["threads_1_s"]}


def job_costs(vdaf: Any, data: dict[str, Any], cands: dict[int, list[int]], *, levels: Sequence[int],
              compare_reports: int, pilot_reports: int, cpu_budget_s: float, job_size: int, seed: int,
              extrapolate_to: int = 100_000) -> dict[str, Any]:
    """:func:`compare_levels` at ``levels`` on ``compare_reports`` reports, then :func:`whole_collection` of reports
    drawn from ``data``'s Zipf population: a pilot of ``pilot_reports``, then (when the budget holds more) as many as
    ``cpu_budget_s`` of both aggregators' CPU allow at the pilot's CPU seconds per report."""
    from ldp import prio
    from ldp.prio.poplar1 import agg_param
    from ldp.simulation.poplar1 import PrefixCounts, words_as_ints

    keys = (prio.HpkeKeypair.generate(1), prio.HpkeKeypair.generate(2))
    key = bytes(range(1, 33))
    rng = np.random.default_rng(seed)
    words, counts = words_as_ints(data["words"], vdaf.bits), data["counts_for"](0)

    def draw(n: int) -> np.ndarray:
        return np.asarray(rng.choice(words, n, p=counts / counts.sum()))

    params = {level: agg_param(level, c) for level, c in cands.items()}
    sample = make_reports(prio, vdaf, keys, draw(compare_reports).tolist())
    out: dict[str, Any] = {"load_average_before": list(os.getloadavg()), "cpu_budget_s": cpu_budget_s,
                           "parallel_control": parallel_control()}
    out["per_report_vs_batch"] = compare_levels(prio, vdaf, keys, key, sample,
                                                {lv: params[lv] for lv in levels if lv in params})

    def collection(n: int) -> dict[str, Any]:
        values = draw(n)
        uniq, mult = np.unique(values, return_counts=True)
        exact = PrefixCounts(uniq, mult, vdaf.bits)
        return whole_collection(prio, vdaf, keys, key, values, params, min(job_size, n),
                                lambda level: exact.counts_at(level, cands[level]).tolist(), extrapolate_to)

    pilot = out["whole_collection"] = collection(pilot_reports)
    per_report = sum(s["cpu"] for s in pilot["measured_s"].values()) / pilot_reports
    n = int(min(cpu_budget_s / per_report, extrapolate_to))
    if n >= 2 * pilot_reports:
        out["pilot"], out["whole_collection"] = pilot, collection(n)
    out["load_average_after"] = list(os.getloadavg())
    return out
