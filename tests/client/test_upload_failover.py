"""TelemetryClient.upload over a list of ingest service endpoints (issue 50): a part one replica cannot take goes to
the next at once, a full round of failures waits as one endpoint does, the endpoint that acknowledged keeps the
call, and 429 / 413 / other 4xx never switch. Against real HTTP servers (the fake ingest service of test_uploader)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings, strategies as st
from test_uploader import TOKEN, FakeCollector, Sleeps, make_client, pins, spec_doc

from ldp.client.uploader import UploadError, _endpoints
from ldp.spec import CollectionSpec

SPEC = {"interval": 0, "max_batch": 2}  # several parts per call, no upload interval between them


def fake() -> FakeCollector:
    return FakeCollector(CollectionSpec.from_dict(spec_doc(**SPEC)))


def client_with(tmp_path, n: int):
    return make_client(tmp_path, n, **SPEC)


@pytest.fixture
def pair():
    a, b = fake(), fake()
    yield a, b
    a.close()
    b.close()


def dead_url() -> str:
    """A URL nothing listens on."""
    gone = fake()
    gone.close()
    return gone.url


def test_a_list_of_one_is_the_single_url(tmp_path, pair):
    a, _ = pair
    a.script = [(500, {}, {"error": "oops"})] * 2
    sleeps = Sleeps()
    with client_with(tmp_path, 3) as client:
        result = client.upload([a.url], TOKEN, sleep=sleeps, max_delay=10)
    assert result.acknowledged == 3 and len(sleeps) == 2 and len(a.requests) == 4  # 2 failures, 2 parts


@pytest.mark.parametrize("failure", ["refused", "drop", 503, 500, 408])
def test_a_replica_that_cannot_take_it_hands_the_part_to_the_next_at_once(tmp_path, pair, failure, caplog):
    caplog.set_level(logging.INFO)
    a, b = pair
    first = dead_url() if failure == "refused" else a.url
    a.script = ["drop" if failure == "drop" else (failure, {"Retry-After": "30"}, {"error": "busy"})]
    sleeps = Sleeps()
    with client_with(tmp_path, 6) as client:  # three parts
        result = client.upload([first, b.url], TOKEN, sleep=sleeps, timeout=5)
        assert result.acknowledged == 6 and result.batches == 3 and client.pending() == []
    assert sleeps == []  # no wait: another endpoint was there
    assert len(a.requests) == (0 if failure == "refused" else 1) and a.stored == {}
    assert len(b.requests) == 3 and len(b.stored) == 3  # the later parts went straight to b (sticky)
    assert pins(tmp_path) == []
    assert any("failing over to" in r.getMessage() for r in caplog.records)
    assert not any(TOKEN in r.getMessage() for r in caplog.records)


def test_a_lost_answer_then_the_other_replica_keeps_the_batch_id(tmp_path, pair):
    """Stored by a, its answer lost: the part goes to b under the same id (the shuffler dedups it)."""
    a, b = pair
    a.script = ["store_drop"]
    with client_with(tmp_path, 3) as client:
        result = client.upload([a.url, b.url], TOKEN, sleep=Sleeps())
    assert result.acknowledged == 3
    assert len(a.stored) == 1 and set(a.stored) <= set(b.stored)  # the first part's id, stored on both
    assert a.lines == b.lines[:2]


def test_every_endpoint_failing_waits_once_per_round(tmp_path):
    fakes = [fake() for _ in range(3)]
    try:
        for one in fakes:
            one.script = [(502, {}, {"error": "bad_gateway"})] * 3
        sleeps = Sleeps()
        with client_with(tmp_path, 2) as client:
            with pytest.raises(UploadError, match="after 8 attempt") as info:
                client.upload([f.url for f in fakes], TOKEN, sleep=sleeps, max_delay=1000)
            assert info.value.status == 502 and len(client.pending()) == 2 and len(pins(tmp_path)) == 2
        # 8 requests: a b c | a b c | a b — a wait after each full round (2), none after the last attempt
        assert [len(f.requests) for f in fakes] == [3, 3, 2] and len(sleeps) == 2
        assert 0 <= sleeps[0] <= 1 and 0 <= sleeps[1] <= 2  # backoff exponent = rounds failed
    finally:
        for one in fakes:
            one.close()


def test_a_round_ending_on_503_honours_its_retry_after(tmp_path, pair):
    a, b = pair
    a.script = [(503, {"Retry-After": "3"}, {"error": "unavailable"})]
    b.script = [(503, {"Retry-After": "7"}, {"error": "unavailable"})]
    sleeps = Sleeps()
    with client_with(tmp_path, 3) as client:
        result = client.upload([a.url, b.url], TOKEN, sleep=sleeps)
    assert sleeps == [7.0] and result.acknowledged == 3
    assert [len(a.requests), len(b.requests)] == [3, 1]  # the next round starts after the last one tried; sticky


@pytest.mark.parametrize("status", [429, 413, 400])
def test_429_413_and_refusals_stay_on_the_endpoint(tmp_path, pair, status):
    a, b = pair
    if status == 413:
        a.max_lines = 2
    else:
        a.script = [(status, {"Retry-After": "1"}, {"error": "x"})]
    sleeps = Sleeps()
    with client_with(tmp_path, 3) as client:
        if status == 400:
            with pytest.raises(UploadError):
                client.upload([a.url, b.url], TOKEN, sleep=sleeps)
        else:
            assert client.upload([a.url, b.url], TOKEN, sleep=sleeps).acknowledged == 3
    assert b.requests == []
    assert sleeps == ([1.0] if status == 429 else [])


@pytest.mark.parametrize("bad", [[], ["ftp://x/v1"], ["http://a/v1", "http://a/v1"], [3], "", b"http://a/v1", None])
def test_bad_endpoint_lists_are_refused_before_anything_is_sent(tmp_path, pair, bad):
    a, _ = pair
    with client_with(tmp_path, 1) as client, pytest.raises(ValueError):
        client.upload(bad, TOKEN, sleep=Sleeps())
    assert a.requests == [] and pins(tmp_path) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), st.sampled_from(["http://h:1/v", "https://h/v", "http://g/v"])),
                max_size=4))
def test_endpoint_lists_are_refused_or_kept_in_order(urls):
    try:
        kept = _endpoints(urls)
    except ValueError:
        return
    assert kept == urls and len(set(urls)) == len(urls)
    assert all(u.startswith(("http://", "https://")) for u in urls)
