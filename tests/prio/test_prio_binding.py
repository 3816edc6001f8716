"""The Prio3 binding's face (:mod:`ldp.prio`): parameters, refusals as :class:`~ldp.errors.PrioError` naming the
VDAF and the operation, states used once and read back, aggregate shares merged, encoded and given as field elements
with noise added modulo the prime, pickling; the install without the binding (a clear error, client code
untouched); and ``LDP_REQUIRE_PRIO=1`` turning a missing binding into a failure."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from typing import Any

import pytest
from prio_support import REQUIRE, binding, missing, refused as _refused

import ldp.errors
from ldp.errors import LdpError, MissingExtraError, PrioError

CTX = b"ldp tests/prio binding"
KEY = bytes(range(32))
FIELD64 = 2**64 - 2**32 + 1
FIELD128 = 2**128 - 28 * 2**64 + 1


@pytest.fixture(scope="module")
def prio() -> Any:
    return binding()


def _report(vdaf: Any, m: Any) -> tuple[list[Any], list[Any]]:
    """One report verified by both aggregators: ``(states, output shares)``."""
    nonce, public, inputs = vdaf.shard(m)
    pairs = [vdaf.verify_init(KEY, i, nonce, public, s) for i, s in enumerate(inputs)]
    message = vdaf.verifier_shares_to_message([share for _, share in pairs])
    states = [state for state, _ in pairs]
    return states, [vdaf.verify_next(state, message) for state in states]


def test_parameters_and_properties(prio: Any) -> None:
    count = prio.Prio3Count(ctx=CTX)
    assert repr(count) == "Prio3Count(num_aggregators=2)" and count.num_aggregators == 2 and count.ctx == CTX
    assert count.modulus == FIELD64 and count.output_len == 1 and count.rand_size == 2 * 32
    assert count.verify_key_size == prio.VERIFY_KEY_SIZE == 32 and count.nonce_size == prio.NONCE_SIZE == 16
    total = prio.Prio3Sum(max_measurement=255, ctx=CTX, num_aggregators=3)
    assert (total.max_measurement, total.num_aggregators, total.modulus) == (255, 3, FIELD64)
    vec = prio.Prio3SumVec(length=3, max_measurement=32000, ctx=CTX)
    assert (vec.length, vec.max_measurement, vec.chunk_length, vec.output_len) == (3, 32000, 7, 3)
    assert vec.modulus == FIELD128
    assert vec.rand_size == 4 * 32  # a seed and a joint randomness blind per aggregator
    hist = prio.Prio3Histogram(length=5, chunk_length=2, ctx=CTX)
    assert repr(hist) == "Prio3Histogram(length=5, chunk_length=2, num_aggregators=2)"
    assert prio.Prio3Histogram(length=5, ctx=CTX) == hist and prio.Prio3Histogram(length=5, ctx=b"other") != hist
    assert hash(prio.Prio3Histogram(length=5, ctx=CTX)) == hash(hist)
    assert (prio.PRIO_VERSION, prio.VDAF_DRAFT) == ("0.18.1", 18)


@pytest.mark.parametrize(("make", "words"), [
    (lambda p: p.Prio3Histogram(length=0, ctx=CTX), ["Prio3Histogram(length=0", "length"]),
    (lambda p: p.Prio3Histogram(length=4, chunk_length=0, ctx=CTX), ["chunk_length"]),
    (lambda p: p.Prio3Sum(max_measurement=0, ctx=CTX), ["Prio3Sum(max_measurement=0"]),
    (lambda p: p.Prio3Sum(max_measurement=2**64 - 1, ctx=CTX), ["modulus"]),
    (lambda p: p.Prio3SumVec(length=0, max_measurement=3, ctx=CTX), ["len"]),
    (lambda p: p.Prio3Count(ctx=CTX, num_aggregators=1), ["num_aggregators"]),
    (lambda p: p.Prio3Count(ctx=CTX, num_aggregators=300), ["num_aggregators must be in [2, 255], got 300"]),
], ids=["histogram-0", "chunk-0", "sum-0", "sum-modulus", "sumvec-0", "one-aggregator", "300-aggregators"])
def test_bad_parameters_are_refused(prio: Any, make: Any, words: list[str]) -> None:
    _refused(lambda: make(prio), "parameters", *words)


def test_ctx_is_required_and_types_are_checked(prio: Any) -> None:
    with pytest.raises(TypeError, match="ctx"):
        prio.Prio3Count()
    vdaf = prio.Prio3SumVec(length=2, max_measurement=3, ctx=CTX)
    for bad in ("12", b"12", 3, [1, "2"], [1.0, 2]):
        with pytest.raises(TypeError):
            vdaf.shard(bad)
    with pytest.raises(TypeError):
        prio.Prio3Count(ctx=CTX).shard(0.5)


def test_prio_error_is_an_ldp_value_error_that_pickles() -> None:
    exc = PrioError("Prio3Count(num_aggregators=2).shard: no", "shard")
    assert isinstance(exc, LdpError) and isinstance(exc, ValueError) and ldp.errors.PrioError is PrioError
    again = pickle.loads(pickle.dumps(exc))
    assert (type(again), str(again), again.operation) == (PrioError, str(exc), "shard")


def test_sharding_draws_from_the_os_unless_given(prio: Any) -> None:
    vdaf = prio.Prio3Histogram(length=4, ctx=CTX)
    a, b = vdaf.shard(1), vdaf.shard(1)
    assert a[0] != b[0] and a[2] != b[2] and len(a[0]) == 16
    nonce, rand = bytes(16), bytes(range(vdaf.rand_size))
    assert vdaf.shard(1, nonce=nonce, rand=rand) == vdaf.shard(1, nonce=nonce, rand=rand)
    fixed_nonce = vdaf.shard(1, nonce=nonce)
    assert fixed_nonce[0] == nonce and fixed_nonce[2] != vdaf.shard(1, nonce=nonce)[2]
    _refused(lambda: vdaf.shard(1, nonce=bytes(15)), "shard", "the nonce must be 16 bytes, got 15")
    _refused(lambda: vdaf.shard(1, rand=bytes(5)), "shard", f"rand must be {vdaf.rand_size} bytes, got 5")
    _refused(lambda: vdaf.shard(4), "shard", "Prio3Histogram(length=4", "got 4")


def test_verify_init_refuses_what_it_cannot_read(prio: Any) -> None:
    vdaf = prio.Prio3SumVec(length=3, max_measurement=7, ctx=CTX)
    nonce, public, (leader, helper) = vdaf.shard([1, 2, 3])
    _refused(lambda: vdaf.verify_init(KEY[:31], 0, nonce, public, leader), "verify_init", "verify key must be 32")
    _refused(lambda: vdaf.verify_init(KEY, 0, nonce[:8], public, leader), "verify_init", "nonce must be 16")
    _refused(lambda: vdaf.verify_init(KEY, 2, nonce, public, leader), "verify_init", "agg_id must be in [0, 2), got 2")
    _refused(lambda: vdaf.verify_init(KEY, 0, nonce, public[:-1], leader), "verify_init", "public share")
    _refused(lambda: vdaf.verify_init(KEY, 0, nonce, public, leader + b"x"), "verify_init",
             "input share is no valid encoding for aggregator 0")
    _refused(lambda: vdaf.verify_init(KEY, 1, nonce, public, leader), "verify_init", "aggregator 1")  # a leader's
    with pytest.raises(TypeError):
        vdaf.verify_init(KEY, 0, nonce, public, "text")


def test_verifier_shares_to_message_refuses_a_bad_round(prio: Any) -> None:
    vdaf = prio.Prio3Histogram(length=3, ctx=CTX)
    nonce, public, inputs = vdaf.shard(2)
    shares = [vdaf.verify_init(KEY, i, nonce, public, s)[1] for i, s in enumerate(inputs)]
    _refused(lambda: vdaf.verifier_shares_to_message(shares[:1]), "verifier_shares_to_message", "count")
    _refused(lambda: vdaf.verifier_shares_to_message([shares[0], shares[1][:-1]]), "verifier_shares_to_message",
             "verifier share 1 is no valid encoding")
    other_key = [vdaf.verify_init(bytes(32), 1, nonce, public, inputs[1])[1]]  # the aggregators disagree on the key
    _refused(lambda: vdaf.verifier_shares_to_message([shares[0], *other_key]), "verifier_shares_to_message",
             "proof verifier check failed")
    with pytest.raises(TypeError, match="verifier share 0 must be bytes"):
        vdaf.verifier_shares_to_message(["a", "b"])


def test_a_state_is_used_once_read_back_and_kept_to_its_vdaf(prio: Any) -> None:
    vdaf = prio.Prio3Sum(max_measurement=10, ctx=CTX)
    nonce, public, inputs = vdaf.shard(7)
    pairs = [vdaf.verify_init(KEY, i, nonce, public, s) for i, s in enumerate(inputs)]
    message = vdaf.verifier_shares_to_message([share for _, share in pairs])
    leader = pairs[0][0]
    kept = vdaf.verify_state_from_bytes(0, leader.to_bytes())  # e.g. stored while the helper answers
    assert repr(kept) == "VerifyState(Prio3Sum(max_measurement=10, num_aggregators=2), agg_id=0)" and not kept.used
    first = vdaf.verify_next(leader, message)
    assert leader.used and "used" in repr(leader)
    _refused(lambda: vdaf.verify_next(leader, message), "verify_next", "already used")
    _refused(lambda: leader.to_bytes(), "decode", "already used")
    assert vdaf.verify_next(kept, message).to_bytes() == first.to_bytes()
    other = prio.Prio3Sum(max_measurement=11, ctx=CTX)
    _refused(lambda: other.verify_next(pairs[1][0], message), "verify_next", "max_measurement=10")
    _refused(lambda: vdaf.verify_state_from_bytes(1, b"\x00"), "decode", "aggregator 1")
    _refused(lambda: vdaf.verify_state_from_bytes(5, b""), "decode", "agg_id")


def test_a_wrong_verifier_message_is_refused_at_verify_next(prio: Any) -> None:
    vdaf = prio.Prio3Histogram(length=3, ctx=CTX)
    nonce, public, inputs = vdaf.shard(0)
    state, _ = vdaf.verify_init(KEY, 0, nonce, public, inputs[0])
    _refused(lambda: vdaf.verify_next(state, bytes(32)), "verify_next", "joint randomness")
    state, _ = vdaf.verify_init(KEY, 0, nonce, public, inputs[0])
    _refused(lambda: vdaf.verify_next(state, bytes(31)), "verify_next", "verifier message is no valid encoding")


def test_aggregate_shares_merge_encode_and_stay_with_their_vdaf(prio: Any) -> None:
    vdaf = prio.Prio3Histogram(length=4, ctx=CTX)
    outs = [_report(vdaf, m)[1] for m in (0, 1, 1, 3)]
    leader = vdaf.aggregate(o[0] for o in outs)
    helper = vdaf.aggregate_init()
    for o in outs:
        helper.accumulate(o[1])
    assert len(leader) == len(outs[0][0]) == 4 and repr(leader).startswith("AggregateShare(Prio3Histogram(length=4")
    assert vdaf.unshard([leader, helper], 4) == [1, 2, 0, 1]
    doubled = leader.copy()
    doubled.merge(doubled)  # merging a share with itself doubles it
    both = copy.copy(helper)
    both.merge(helper)
    assert vdaf.unshard([doubled, both], 8) == [2, 4, 0, 2]
    assert vdaf.unshard([leader, helper], 4) == [1, 2, 0, 1]  # the copies did not touch the originals
    count = prio.Prio3Count(ctx=CTX)
    sums = prio.Prio3Sum(max_measurement=1, ctx=CTX)
    c, s = count.aggregate_init(), sums.aggregate_init()
    _refused(lambda: c.merge(s), "aggregate", "Prio3Sum(max_measurement=1")  # same field, same length: refused
    _refused(lambda: c.accumulate(_report(sums, 1)[1][0]), "aggregate", "an output share of Prio3Sum")
    _refused(lambda: count.aggregate([_report(sums, 1)[1][0]]), "aggregate", "not of this VDAF")
    _refused(lambda: count.unshard([c, s], 0), "unshard", "Prio3Sum")
    _refused(lambda: count.unshard([c], 0), "unshard", "takes 2 aggregate shares, got 1")
    _refused(lambda: vdaf.aggregate_share_from_bytes(leader.to_bytes()[:-1]), "decode", "not an aggregate share")
    with pytest.raises(TypeError):
        vdaf.aggregate([b"not a share"])


@pytest.mark.parametrize(("make", "m", "noise", "centred", "modulus"), [
    (lambda p: p.Prio3Count(ctx=CTX), 1, [-3], [-2], FIELD64),
    (lambda p: p.Prio3SumVec(length=2, max_measurement=9, ctx=CTX), [4, 0], [-3, 5 * FIELD128 + 2], [1, 2], FIELD128),
], ids=["count", "sumvec"])
def test_noise_on_a_share_wraps_around_the_prime(prio: Any, make: Any, m: Any, noise: list[int], centred: list[int],
                                                 modulus: int) -> None:
    vdaf = make(prio)
    outs = _report(vdaf, m)[1]
    leader, helper = vdaf.aggregate([outs[0]]), vdaf.aggregate([outs[1]])
    assert leader.modulus == vdaf.modulus == modulus and all(0 <= x < modulus for x in leader.field_elements())
    leader.add_integers(noise)  # any size, either sign
    total = [(a + b) % modulus for a, b in zip(leader.field_elements(), helper.field_elements(), strict=True)]
    assert [x - modulus if x > modulus // 2 else x for x in total] == centred  # the truth plus the noise
    rebuilt = vdaf.aggregate_share_from_field_elements(leader.field_elements())
    assert rebuilt.to_bytes() == leader.to_bytes()
    n = len(noise)
    _refused(lambda: vdaf.aggregate_share_from_field_elements([modulus] * n), "decode", "field element 0")
    _refused(lambda: vdaf.aggregate_share_from_field_elements([-1] * n), "decode", "field element 0")
    _refused(lambda: vdaf.aggregate_share_from_field_elements([0] * (n + 1)), "decode", "field elements")
    _refused(lambda: leader.add_integers([0] * (n + 1)), "aggregate", f"add_integers takes {n} values")
    with pytest.raises(TypeError):
        leader.add_integers([0.5] * n)


def test_unshard_gives_the_fields_sum(prio: Any) -> None:
    count = prio.Prio3Count(ctx=CTX)
    share = count.aggregate_init()
    share.add_integers([-1])
    assert share.field_elements() == [FIELD64 - 1]
    assert count.unshard([share, count.aggregate_init()], 0) == FIELD64 - 1  # a noisy total is centred by its reader


def test_vdafs_pickle(prio: Any) -> None:
    for vdaf in (prio.Prio3Count(ctx=CTX, num_aggregators=3), prio.Prio3Sum(max_measurement=9, ctx=CTX),
                 prio.Prio3SumVec(length=2, max_measurement=9, chunk_length=3, ctx=CTX),
                 prio.Prio3Histogram(length=7, ctx=CTX)):
        again = pickle.loads(pickle.dumps(vdaf))
        assert type(again) is type(vdaf) and again == vdaf and repr(again) == repr(vdaf)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "error"})


def test_without_the_binding_the_names_say_how_to_build_it() -> None:
    """Runs whether or not the binding is built: its import is made to fail in a fresh interpreter."""
    done = _python(
        "import sys; sys.modules['ldp.prio._native'] = None\n"
        "import ldp.prio\n"
        "assert not ldp.prio.available()\n"
        "from ldp.errors import MissingExtraError\n"
        "for get in (lambda: ldp.prio.Prio3Count, ldp.prio.require):\n"
        "    try:\n"
        "        get()\n"
        "    except MissingExtraError as exc:\n"
        "        print(exc)\n"
        "    else:\n"
        "        raise SystemExit('no error')\n"
        "try:\n"
        "    ldp.prio.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert not isinstance(exc, MissingExtraError)\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    assert "bindings/prio" in lines[0] and "cargo" in lines[0] and "pip install" in lines[0]
    assert issubclass(MissingExtraError, ImportError)


def test_client_code_never_imports_the_binding() -> None:
    done = _python("import sys, ldp.client, ldp.encoders, ldp.spec, ldp.privacy\n"
                   "print(sorted(m for m in sys.modules if m.startswith('ldp.prio')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_require_prio_turns_a_skip_into_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="not built"):
        missing("the binding is not built")
    monkeypatch.setenv(REQUIRE, "1")  # CI: .ci/run sets it
    with pytest.raises(pytest.fail.Exception, match="LDP_REQUIRE_PRIO=1 but the binding is not built"):
        missing("the binding is not built")


def test_the_module_example_runs(prio: Any) -> None:
    """``ldp.prio``'s docstring shows one report from the client's shares to the result: it runs as shown."""
    doc = prio.__doc__ or ""
    block = doc.split("the verify key being a 32-byte secret the aggregators share::\n\n", 1)[1].split("\n\n", 1)[0]
    lines = [line[4:] for line in block.splitlines()]
    assert lines[0].startswith("vdaf = Prio3Histogram(") and lines[-1].startswith("vdaf.unshard(")
    lines[-1] = "result = " + lines[-1]
    namespace: dict[str, Any] = {"Prio3Histogram": prio.Prio3Histogram, "verify_key": os.urandom(32)}
    exec("\n".join(lines), namespace)
    assert namespace["result"] == [0, 0, 0, 1, 0]
