"""The two aggregators in-process (issue 71, items 3–6): exact results without noise, refusals counted with their
codes on both sides, replays refused, the helper's records alone uniform, kills at every step neither losing nor
double-counting, and the noise's standard error as its formula says."""

from __future__ import annotations

import math
import random
import secrets
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from two_aggregators import T0, WINDOW, forged, handmade_report, prio, world

from ldp.aggregators.codec import Interval
from ldp.aggregators.messages import (
    AggregateShareReq,
    AggregationJobInitReq,
    PrepareInit,
    ReportShare,
    initialize,
    xor_checksum,
)
from ldp.aggregators.task import Noise
from ldp.errors import AggregatorError
from ldp.privacy.cost import PrivacyCost


def _upload_all(w: Any, measurements: list[Any]) -> None:
    """As many devices at once (one chunk: :meth:`Leader.upload_many`)."""
    assert w.leader.upload_many(w.task.task_id, [w.report(m) for m in measurements]) == [None] * len(measurements)


@pytest.mark.parametrize("vdaf, params, draw", [
    ("Prio3Histogram", {"length": 16}, lambda r: r.randrange(16)),
    ("Prio3Count", {}, lambda r: r.randrange(2)),
    ("Prio3Sum", {"max_measurement": 100}, lambda r: r.randrange(101)),
    ("Prio3SumVec", {"length": 3, "max_measurement": 1}, lambda r: [r.randrange(2) for _ in range(3)]),
])
def test_without_noise_the_result_is_the_truth_exactly(tmp_path: Path, vdaf: str, params: dict[str, int],
                                                       draw: Any) -> None:
    w = world(tmp_path, vdaf=vdaf, params=params, job_size=64)
    rng = random.Random(3)
    measurements = [draw(rng) for _ in range(300)]
    _upload_all(w, measurements)
    c = w.collect()
    length = params.get("length", 1)
    truth = [0] * length
    for m in measurements:
        if vdaf == "Prio3Histogram":
            truth[m] += 1
        elif isinstance(m, list):
            truth = [a + b for a, b in zip(truth, m, strict=True)]
        else:
            truth[0] += m
    assert list(c.sums) == truth
    assert c.report_count == 300
    est = c.estimates()
    assert list(est.count) == truth and all(est.std_error == 0)


def test_thousands_of_devices_in_jobs_through_both_aggregators(tmp_path: Path) -> None:
    """(10⁴ devices over HTTP: test_loopback.py.)"""
    w = world(tmp_path, params={"length": 16}, min_batch_size=3000, job_size=700)
    rng = random.Random(8)
    measurements = [min(15, int(rng.expovariate(0.3))) for _ in range(3000)]
    _upload_all(w, measurements)
    c = w.collect()
    assert list(c.sums) == [measurements.count(v) for v in range(16)]
    assert c.report_count == 3000
    assert w.helper.status()["tasks"][0]["windows"][str(T0)] == {"valid": 3000, "refused": {}, "collected": True}


def test_invalid_measurements_are_refused_with_their_code_and_counted_on_both_sides(tmp_path: Path) -> None:
    p = prio()
    w = world(tmp_path, params={"length": 4}, min_batch_size=5)
    ctx = w.task.task_id
    _upload_all(w, [0, 1, 2, 3, 3, 2])
    two_hot = forged(w, p.Prio3SumVec(length=4, max_measurement=1, ctx=ctx), [1, 1, 0, 0])
    all_hot = forged(w, p.Prio3SumVec(length=4, max_measurement=1, ctx=ctx), [1, 1, 1, 1])
    big = forged(w, p.Prio3SumVec(length=4, max_measurement=3, ctx=ctx), [0, 3, 0, 0])
    for report in (two_hot, all_hot):
        w.leader.upload(w.task.task_id, report)  # the door cannot tell: only both aggregators together can
    with pytest.raises(AggregatorError) as exc:  # its leader share is no share of this VDAF (another length)
        w.leader.upload(w.task.task_id, big)
    assert exc.value.code == "invalid_message" and exc.value.status == 400
    c = w.collect()
    assert list(c.sums) == [1, 1, 2, 2]
    assert c.refused == {"vdaf_invalid": 2}
    # the two whose shares decode are refused by the two aggregators together, and counted by both; the third was
    # refused at the leader's door (issue 84): no job, and the helper never sees it
    assert w.leader.status()["tasks"][0]["refused"] == {"vdaf_invalid": 2}
    assert w.helper.status()["tasks"][0]["refused"] == {"vdaf_invalid": 2}
    assert w.leader.status()["tasks"][0]["windows"][str(T0)]["refused"] == {"vdaf_invalid": 2}
    assert w.leader.status()["tasks"][0]["refused_at_upload"] == {"invalid_message": 1}


def test_a_count_out_of_range_is_refused(tmp_path: Path) -> None:
    """A Prio3Sum share of 5 sent to a Count task: its leader share has another length, refused at the door."""
    p = prio()
    w = world(tmp_path, vdaf="Prio3Count", params={}, min_batch_size=2)
    _upload_all(w, [1, 0, 1])
    with pytest.raises(AggregatorError, match="no share of the task's VDAF") as exc:
        w.leader.upload(w.task.task_id, forged(w, p.Prio3Sum(max_measurement=7, ctx=w.task.task_id), 5))
    assert exc.value.code == "invalid_message"
    c = w.collect()
    assert c.sums == (2,) and c.refused == {}


def test_a_forged_joint_randomness_part_is_refused_by_both(tmp_path: Path) -> None:
    """A device that forges the helper's joint randomness part in the public share would fail only the leader's
    check: the helper refuses it too, so both count the same reports and the window is released."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=3)
    _upload_all(w, [0, 1, 2])
    vdaf = w.task.prio3()
    rid = secrets.token_bytes(16)
    _, public, (leader, helper) = vdaf.shard(1, nonce=rid)
    bad_public = public[:32] + bytes(32)
    w.leader.upload(w.task.task_id, handmade_report(w, bad_public, leader, helper, rid))
    c = w.collect()
    assert list(c.sums) == [1, 1, 1, 0] and c.refused == {"vdaf_invalid": 1}


def test_the_handmade_dap_encoding_is_the_bindings(tmp_path: Path) -> None:
    """The report builder and an independent encoding of DAP-09 agree: a handmade report of valid shares counts."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    rid = secrets.token_bytes(16)
    _, public, (leader, helper) = w.task.prio3().shard(2, nonce=rid)
    w.leader.upload(w.task.task_id, handmade_report(w, public, leader, helper, rid))
    assert list(w.collect().sums) == [0, 0, 1, 0]


def test_a_replayed_report_is_refused_at_the_door_and_by_the_helper(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    report = w.report(2)
    w.leader.upload(w.task.task_id, report)
    with pytest.raises(AggregatorError) as exc:
        w.leader.upload(w.task.task_id, report)
    assert exc.value.code == "report_replayed" and exc.value.status == 409
    w.leader.run_aggregation_jobs()
    with pytest.raises(AggregatorError, match="already uploaded"):  # after its job too
        w.leader.upload(w.task.task_id, report)
    assert w.leader.status()["tasks"][0]["refused_at_upload"] == {"report_replayed": 2}
    # a leader replaying a prepared report to the helper in a new job: refused there
    p = prio()
    rep = p.DapReport.from_bytes(report)
    job = AggregationJobInitReq((PrepareInit(ReportShare(rep.report_id, rep.time, rep.public_share,
                                                     rep.helper_ciphertext), initialize(b"\x00" * 8)),))
    from ldp.aggregators.messages import AggregationJobResp

    resp = AggregationJobResp.from_bytes(w.helper.aggregation_job(w.task.task_id, "replay-job-0000001", job.to_bytes()))
    assert resp.prepare_resps[0].error is not None and resp.prepare_resps[0].error.code == "report_replayed"
    assert list(w.collect().sums) == [0, 0, 1, 0]


def test_door_refusals(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    tid = w.task.task_id
    cases = {
        "invalid_message": b"not a report",
        "report_too_early": w.report(1, time=T0 + 10 + 3600 * 24),
    }
    good = bytearray(w.report(1))
    # the leader's ciphertext starts right after report id, time and the public share (length-prefixed): its
    # config ID (1 byte), enc (2-byte length), then its payload (4-byte length)
    at = 28 + int.from_bytes(good[24:28], "big")
    payload_end = at + 3 + int.from_bytes(good[at + 1:at + 3], "big") + 4 + int.from_bytes(
        good[at + 3 + int.from_bytes(good[at + 1:at + 3], "big"):][:4], "big")
    tampered = bytearray(good)
    tampered[payload_end - 1] ^= 1
    cases["hpke_decrypt_error"] = bytes(tampered)
    good[at] ^= 0xFF  # its config ID
    cases["hpke_unknown_config_id"] = bytes(good)
    w.leader.report_expiry = 7 * 86400
    cases["report_too_late"] = w.report(1, time=T0 + 10 - 8 * 86400)
    for code, body in cases.items():
        with pytest.raises(AggregatorError) as exc:
            w.leader.upload(tid, body)
        assert exc.value.code == code, (code, exc.value)
    with pytest.raises(AggregatorError) as exc:
        w.leader.upload(secrets.token_bytes(32), w.report(1))
    assert exc.value.code == "unrecognized_task" and exc.value.status == 404
    w.leader.upload(tid, w.report(3))
    with pytest.raises(AggregatorError) as exc:
        w.leader.collect(tid, T0)
    assert exc.value.code == "window_open"  # collected once, after its end
    w.collect()
    w.now = T0 + 100  # a device still in the window (its clock behind)
    with pytest.raises(AggregatorError) as exc:
        w.leader.upload(tid, w.report(1))
    assert exc.value.code == "batch_collected"


def test_a_window_is_released_once_below_the_threshold_never(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, noise=Noise("laplace", 1.0), min_batch_size=5, seed=4)
    _upload_all(w, [0, 1, 2, 3])
    with pytest.raises(AggregatorError) as exc:
        w.collect()
    assert exc.value.code == "batch_too_small"
    with pytest.raises(AggregatorError, match="fewer than"):  # the helper refuses too, whatever the leader says
        w.helper.aggregate_share(w.task.task_id, AggregateShareReq(Interval(T0, WINDOW), 4, w.helper.records[
            w.task.task_id].window(T0).checksum).to_bytes())
    _upload_all(w, [1])
    first = w.collect()
    again = w.collect()
    assert first.sums == again.sums  # the same release: no fresh noise to average away
    assert w.leader.status()["tasks"][0]["releases"][0]["epsilon"] == {"epsilon": 1.0, "delta": 0.0}


def test_the_helper_refuses_a_leader_that_states_another_batch(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    _upload_all(w, [0, 1, 2])
    w.leader.run_aggregation_jobs()
    w.now = T0 + WINDOW + 1
    agg = w.helper.records[w.task.task_id].window(T0)
    for count, checksum in ((2, agg.checksum), (3, xor_checksum([b"x" * 16]))):
        with pytest.raises(AggregatorError) as exc:
            w.helper.aggregate_share(w.task.task_id, AggregateShareReq(Interval(T0, WINDOW), count,
                                                                         checksum).to_bytes())
        assert exc.value.code == "batch_mismatch"


def test_the_central_target_over_releases(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 2}, noise=Noise("laplace", 0.5), min_batch_size=1,
              central=PrivacyCost(1.2, 1e-9), seed=1)
    w.now = T0 + 3 * WINDOW - 100
    for k in range(3):
        w.leader.upload(w.task.task_id, w.report(1, time=T0 + k * WINDOW + 1))
    first, second = w.collect(T0), w.collect(T0 + WINDOW)
    assert first.release_epsilon == {"epsilon": 0.5, "delta": 0.0}
    assert second.cumulative_epsilon == {"epsilon": 1.0, "delta": 0.0}
    with pytest.raises(AggregatorError) as exc:
        w.collect(T0 + 2 * WINDOW)
    assert exc.value.code == "budget_exhausted"


class _Crash(Exception):
    pass


class _CrashingHelper:
    """The helper, killed at ``when``: before it records the job, or after (before its answer leaves)."""

    def __init__(self, helper: Any, when: str) -> None:
        self.helper, self.when = helper, when

    def aggregation_job(self, task_id: bytes, job_id: str, body: bytes) -> bytes:
        if self.when == "before-record":
            raise _Crash
        self.helper.aggregation_job(task_id, job_id, body)
        raise _Crash

    def aggregate_share(self, task_id: bytes, body: bytes) -> bytes:
        return bytes(self.helper.aggregate_share(task_id, body))


@pytest.mark.parametrize("when", ["before-record", "after-record"])
def test_a_helper_killed_mid_job_loses_and_double_counts_nothing(tmp_path: Path, when: str) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=7)
    rng = random.Random(1)
    measurements = [rng.randrange(4) for _ in range(40)]
    _upload_all(w, measurements)
    w.leader.helper = _CrashingHelper(w.helper, when)
    with pytest.raises(_Crash):
        w.leader.run_aggregation_jobs()
    w.restart_helper()              # a new process over the same store
    w.restart_leader()              # and the leader too: its plan is redone with the same job ID
    w.leader.run_aggregation_jobs()
    records = w.helper.records[w.task.task_id]
    counted = [r for key in w.helper.store.list(records.prefix + "jobs/") for r in records.read(key)["accepted"]]
    assert len(counted) == len(set(counted)) == 40  # each report in exactly one of the helper's job records
    c = w.collect()
    assert list(c.sums) == [measurements.count(v) for v in range(4)]


def test_a_leader_killed_after_the_helper_answered_redoes_the_same_job(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=5)
    _upload_all(w, [0, 1, 2, 3, 3])
    records = w.leader.records[w.task.task_id]
    original = records.finish_job

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise _Crash

    records.finish_job = killed  # type: ignore[method-assign]
    with pytest.raises(_Crash):
        w.leader.run_aggregation_jobs()
    records.finish_job = original  # type: ignore[method-assign]
    w.restart_leader()
    assert list(w.collect().sums) == [1, 1, 1, 2]


def test_the_helpers_records_alone_are_uniform_and_say_nothing(tmp_path: Path) -> None:
    """One report per job: the helper's stored aggregate share of each is one output share. Alone, its field
    elements are uniform (chi-square over 16 bins of the top bits) and independent of the measurement; summed they
    are no count."""
    from scipy import stats

    w = world(tmp_path, params={"length": 4}, min_batch_size=1, job_size=1)
    rng = random.Random(2)
    truth = {secrets.token_bytes(16): rng.choice([0, 3]) for _ in range(600)}
    w.leader.upload_many(w.task.task_id, [w.report(m, report_id=rid) for rid, m in truth.items()])
    w.leader.run_aggregation_jobs()
    records = w.helper.records[w.task.task_id]
    p = records.modulus
    by_value: dict[int, list[int]] = {0: [], 3: []}
    shares = []
    for key in w.helper.store.list(records.prefix + "jobs/"):
        rec = records.read(key)
        share = records.sealer.open(rec["job"], rec["window"], rec["sealed_share"])  # with the helper's own key
        shares.append(share)
        # which measurement this was: the test knows, the helper does not
        rid = bytes.fromhex(rec["accepted"][0])
        by_value[truth[rid]].append(share[3])
    top = [(x * 16) // p for s in shares for x in s]
    assert stats.chisquare(np.bincount(top, minlength=16)).pvalue > 1e-4
    binned = [np.bincount([(x * 8) // p for x in by_value[v]], minlength=8) for v in (0, 3)]
    assert stats.chi2_contingency(np.vstack(binned)).pvalue > 1e-4
    helper_alone = [sum(s[i] for s in shares) % p for i in range(4)]
    assert all(min(x, p - x) > 10 ** 6 for x in helper_alone)  # nowhere near a count of 600 reports
    keys = {"format", "job", "window", "accepted", "rejected", "sealed_share", "request_sha256", "response"}
    assert all(set(records.read(k)) == keys for k in w.helper.store.list(records.prefix + "jobs/"))


def test_noise_standard_error_matches_its_formula(tmp_path: Path) -> None:
    """200 releases with discrete Laplace on each share (ε = 1, Δ₁ = 2): the empirical standard error of a
    count within 10 % of √(2·Var Z)."""
    w = world(tmp_path, params={"length": 4}, noise=Noise("laplace", 1.0), min_batch_size=1, seed=9)
    releases = 200
    w.now = T0 + releases * WINDOW - 100
    w.leader.upload_many(w.task.task_id, [w.report(k % 4, time=T0 + k * WINDOW + 1) for k in range(releases)])
    errors = []
    for k in range(releases):
        c = w.collect(T0 + k * WINDOW)
        truth = [1 if v == k % 4 else 0 for v in range(4)]
        errors += [s - t for s, t in zip(c.sums, truth, strict=True)]
    noise = w.task.share_noise()
    assert noise is not None
    formula = math.sqrt(2 * noise.count_variance)
    empirical = float(np.std(errors, ddof=0))
    assert abs(np.mean(errors)) < 4 * formula / math.sqrt(len(errors))
    assert abs(empirical / formula - 1) < 0.10, (empirical, formula)
    assert c.estimates().std_error[0] == pytest.approx(formula)



@pytest.mark.parametrize("draft", [18, 8])
def test_local_noise_inside_is_debiased_with_both_guarantees(tmp_path: Path, draft: int) -> None:
    """``two-aggregator+local``: each device randomizes with GRR (ε_L = 2) before sharing; the collector debiases the
    noised sums with GRR's own estimator, its standard errors the local variance plus the central noise's. Under
    either VDAF draft (issue 85, item 1: VDAF-08's shares carry the same sums, its noise is the same)."""
    from ldp.encoders.randomized_response import GRRParams
    from ldp.protocols.registry import client_protocols

    params = GRRParams(2.0, 4)
    local = {"protocol": "grr", "params": params.to_dict()}
    w = world(tmp_path, params={"length": 4}, noise=Noise("laplace", 1.0), min_batch_size=100, local=local, seed=5,
              draft=draft)
    assert w.task.prio3().draft == draft
    encoder = client_protocols()["grr"][1](params, rng=7, simulation=True)
    fit = params.prio3_fit()
    assert fit is not None
    rng = random.Random(6)
    values = [rng.choice([0, 0, 0, 1, 2, 3]) for _ in range(3000)]
    reports = [w.report(fit.measurement(encoder.encode(v).payload)) for v in values]
    assert set(w.leader.upload_many(w.task.task_id, reports)) == {None}
    c = w.collect()
    est = c.estimates()
    truth = [values.count(v) for v in range(4)]
    z = [(e - t) / s for e, t, s in zip(est.count, truth, est.std_error, strict=True)]
    assert all(abs(x) < 4.5 for x in z), z
    plain = w.task.local_params()
    from ldp.decoders.randomized_response import GRRAggregate

    exact_local = GRRAggregate.from_sums(plain, list(c.sums), 3000, noisy=True)
    assert all(est.std_error > exact_local.estimate().std_error)  # the central noise is in them
    doc = c.to_dict()
    assert doc["local"]["epsilon"] == pytest.approx(2.0) and doc["trust"] == "two-aggregator+local"
    assert doc["central"]["release"] == {"epsilon": 1.0, "delta": 0.0}


def test_a_report_time_not_rounded_to_the_precision_is_refused(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1, time_precision=60)
    with pytest.raises(AggregatorError, match="time precision") as exc:
        w.leader.upload(w.task.task_id, w.report(1, time=T0 + 61))
    assert exc.value.code == "invalid_message"
    w.leader.upload(w.task.task_id, w.report(1, time=T0 + 61, time_precision=60))
    rep = prio().DapReport.from_bytes(w.report(2, time=T0 + 119, time_precision=60))
    assert rep.time == T0 + 60
    assert list(w.collect().sums) == [0, 1, 0, 0]


def test_upload_many_refuses_each_with_its_code_and_stores_the_others_once(tmp_path: Path) -> None:
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    a, b = w.report(1), w.report(2)
    out = w.leader.upload_many(w.task.task_id, [a, b"junk", a, b])
    assert out[0] is None and out[3] is None
    assert out[1] is not None and out[1].code == "invalid_message"
    assert out[2] is not None and out[2].code == "report_replayed"
    assert w.leader.status()["tasks"][0]["refused_at_upload"] == {"invalid_message": 1, "report_replayed": 1}
    w.restart_leader()  # the chunk read back: its reports pending, their IDs taken
    with pytest.raises(AggregatorError, match="already uploaded"):
        w.leader.upload(w.task.task_id, b)
    assert list(w.collect().sums) == [0, 1, 1, 0]
    assert w.leader.store.list(w.leader.records[w.task.task_id].prefix + "reports/") == []  # consumed: deleted


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(copies=st.lists(st.integers(0, 3), min_size=1, max_size=12))
def test_upload_many_takes_the_first_copy_of_each_report_and_refuses_every_other(tmp_path: Path,
                                                                                 copies: list[int]) -> None:
    """Any batch of copies of four reports (a report up to twelve times; the HTTP front's batch of uploads racing
    in): each report's first copy is taken, every later one is ``report_replayed``, the door counts each refusal, and
    the reports are stored once each. (A report three times in one batch was once answered 201 twice.)"""
    import shutil

    shutil.rmtree(tmp_path / "w", ignore_errors=True)
    w = world(tmp_path / "w", params={"length": 4}, min_batch_size=1)
    reports = [w.report(v) for v in range(4)]
    out = w.leader.upload_many(w.task.task_id, [reports[i] for i in copies])
    first = {i: copies.index(i) for i in set(copies)}
    assert [None if e is None else e.code for e in out] == [
        None if first[i] == pos else "report_replayed" for pos, i in enumerate(copies)]
    refused = len(copies) - len(first)
    assert w.leader.status()["tasks"][0]["refused_at_upload"] == ({"report_replayed": refused} if refused else {})
    assert list(w.collect().sums) == [int(v in first) for v in range(4)]


def test_concurrent_uploads_are_written_together_each_once(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    reports = [w.report(i % 4) for i in range(200)]

    def up(body: bytes) -> str:
        try:
            w.leader.upload(w.task.task_id, body)
            return "ok"
        except AggregatorError as exc:
            return exc.code

    with ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(up, reports + reports[:50]))
    assert codes.count("ok") == 200 and codes.count("report_replayed") == 50
    chunks = w.leader.store.list(w.leader.records[w.task.task_id].prefix + "reports/")
    assert 1 <= len(chunks) <= 200
    assert list(w.collect().sums) == [50, 50, 50, 50]
