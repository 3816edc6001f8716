"""The task file's ``hpke_configs`` (issue 87): the leader's and the helper's public configs, which devices seal to,
written by ``ldp collect task --leader-config --helper-config``, read back exactly, refused when malformed; and an
aggregator refuses to start on a task naming another config than its own key's, so that no device seals to a key
the aggregator does not hold."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, strategies as st
from support import ROOT, call_main
from support.loopback_aggregators import prio

from ldp.aggregators.service import check_device_configs
from ldp.aggregators.task import Noise, Task, b64
from ldp.errors import ConfigError
from ldp.spec import CollectionSpec

EXAMPLE = ROOT / "examples" / "two_aggregators.json"


def _configs() -> tuple[bytes, bytes]:
    p = prio()
    return p.HpkeKeypair.generate(1).config.to_bytes(), p.HpkeKeypair.generate(2).config.to_bytes()


def _task(configs: tuple[bytes, bytes] | None) -> Task:
    return Task.for_metric(CollectionSpec.load(EXAMPLE), "crashed", leader_url="https://l.example",
                           helper_url="https://h.example", min_batch_size=10, noise=Noise(),
                           collector_hpke_config=_configs()[0], hpke_configs=configs)


def test_the_configs_round_trip_and_an_old_file_has_none() -> None:
    configs = _configs()
    doc = _task(configs).to_dict()
    assert doc["hpke_configs"] == {"leader": b64(configs[0]), "helper": b64(configs[1])}
    assert Task.from_dict(json.loads(json.dumps(doc))).hpke_configs == configs
    assert "hpke_configs" not in _task(None).to_dict() and Task.from_dict(_task(None).to_dict()).hpke_configs is None


@pytest.mark.parametrize("bad", [[], {"leader": "AQ"}, {"leader": "AQ", "helper": "AQ", "x": "AQ"},
                                 {"leader": "a+b", "helper": "AQ"}, {"leader": "", "helper": "AQ"},
                                 {"leader": "A" * 400, "helper": "AQ"}])
def test_malformed_configs_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="hpke_configs"):
        Task.from_dict({**_task(None).to_dict(), "hpke_configs": bad})


@given(st.recursive(st.none() | st.text(max_size=8) | st.integers(), lambda c: st.lists(c, max_size=3)
                    | st.dictionaries(st.sampled_from(["leader", "helper", "x"]), c, max_size=3), max_leaves=6))
def test_any_value_is_read_or_refused_with_a_value_error(value: Any) -> None:
    doc = {**_task(None).to_dict(), "hpke_configs": value}
    try:
        task = Task.from_dict(doc)
    except ValueError:
        return
    assert task.hpke_configs is None or all(isinstance(c, bytes) and c for c in task.hpke_configs)


def test_an_aggregator_refuses_a_task_naming_another_key() -> None:
    configs = _configs()
    task = _task(configs)
    for role, mine in (("leader", configs[0]), ("helper", configs[1])):
        config = SimpleNamespace(role=role, tasks=[SimpleNamespace(task=task)], hpke_key=Path(f"{role}.json"))
        check_device_configs(config, mine)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=f"hpke_configs.{role} is not this {role}'s key's config"):
            check_device_configs(config, _configs()[0])  # type: ignore[arg-type]
    legacy = SimpleNamespace(role="leader", tasks=[SimpleNamespace(task=dataclasses.replace(task, hpke_configs=None))],
                             hpke_key=Path("k"))
    check_device_configs(legacy, b"anything")  # type: ignore[arg-type]


def test_ldp_collect_task_writes_the_configs(tmp_path: Path) -> None:
    key = str(tmp_path / "k.json")
    assert call_main(["collect", "keygen", "--out", key])[0] == 0
    leader, helper = (b64(c) for c in _configs())
    base = ["collect", "task", "--spec", str(EXAMPLE), "--metric", "crashed", "--leader", "http://l", "--helper",
            "http://h", "--collector-key", key, "--min-batch-size", "10"]
    code, _, err = call_main([*base, "--leader-config", leader, "--helper-config", helper,
                              "--out", str(tmp_path / "t.json")])
    assert code == 0, err
    assert [b64(c) for c in Task.load(tmp_path / "t.json").hpke_configs or ()] == [leader, helper]
    for extra, message in ((["--leader-config", leader], "go together"),
                           (["--leader-config", leader, "--helper-config", leader], "the same config"),
                           (["--leader-config", "AAAA", "--helper-config", helper], "")):
        code, _, err = call_main([*base, *extra, "--out", str(tmp_path / "u.json")])
        assert code == 2 and message in err and "internal error" not in err, err
        assert not (tmp_path / "u.json").exists()
