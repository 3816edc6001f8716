"""simulations/scale_out.py, smaller: an S3-compatible server, three replicas, devices uploading through the real
uploader with an endpoint list, one replica SIGKILLed under load and restarted, a second process under each replica's
name refused, three ``ldp shuffle`` at once (one mixes) and ``ldp fold --engine dask`` over the store:
nothing lost, nothing twice, the Dask count equal to what was acknowledged."""

from __future__ import annotations

import pytest
from support.scripts import load_script

pytest.importorskip("moto")
pytest.importorskip("distributed")
pytest.importorskip("s3fs")


@pytest.mark.heavy  # handed out first under xdist (tests/conftest.py)
def test_three_replicas_one_killed_lose_nothing_and_count_once(tmp_path) -> None:
    script = load_script("scale_out")
    out = script.run(replicas=3, devices=24, rounds=3, per_round=4, window_seconds=4, kill_at=0.3, threads=6,
                     work=tmp_path, stale_dask=False)  # the Dask cases run in tests/shuffler/test_stale_writes.py
    assert out["killed"] == 1 and out["upload_errors"] == 0 and out["uploads"] == 24 * 3
    assert out["acknowledged"] == 24 * 3 * 4 == out["stored"] == out["counted"]
    assert out["lost"] == 0 and out["duplicated"] == 0
    assert out["windows"] >= 1 and 0 < out["anonymity_set"] <= out["acknowledged"]
    assert out["stale_writes_harmless"] == {"kinds": 6, "failures": {}}
    assert out["same_name_replicas_refused"] == 3  # a second process under each name, while the first runs
    assert 0 <= out["concurrent_shuffles_refused"] <= out["concurrent_shuffles"] - 1  # whichever overlapped
