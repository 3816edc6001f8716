"""docs/conformance.md against the conformance vectors (conformance/vectors/) and the code.

Every client protocol has a draw-order section, and the page's table of k sequences holds, for each protocol, the
rule its params class declares (``draw_rule``: :mod:`ldp.encoders.base_draws`), tested here: the rule's predictor,
run on the primitives' laws re-implemented below with the probabilities taken from the protocol's params, replays
every case of the protocol's vector file and must ask for exactly the recorded ``randbits(k)`` calls, in order, and
consume all of them. The generated parts of the page must be what ``python conformance/docs_tables.py`` writes; the
float fields, the domain tags and the constants the page names are checked against the code."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import typing
from typing import Any

import pytest
from support import ROOT

from ldp.conformance import GENERATE
from ldp.conformance.docs import COMMAND, render_page
from ldp.protocols import builtin_client_protocols
from ldp.spec import CollectionSpec

PAGE = ROOT / "docs" / "conformance.md"
VECTORS = ROOT / "conformance" / "vectors"
TWO64 = 1 << 64


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


def _table(heading: str) -> dict[str, str]:
    """The two-column table at or after ``heading``: each row's first cell (its code spans' names, each a key) to
    its second cell."""
    lines = _text().split(heading, 1)[1].splitlines()
    if heading.startswith("|"):
        lines = [heading, *lines[1:]]
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows: dict[str, str] = {}
    for line in itertools.takewhile(lambda ln: ln.startswith("|"), lines[start:]):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or set(cells[0]) <= {"-"} or cells[0] == "protocol":
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1]
    return rows


# -- the primitives, as §3 of the page states them ------------------------------------------------------------
def _threshold(x: float) -> int:
    return int(math.ldexp(x, 64))


class Replay:
    """The recorded ``draws`` of a case, and the primitives of §3 stated on them: each ``randbits(k)`` must ask for
    the next record's ``k``. A protocol's predictor (its params' ``draw_rule``, :mod:`ldp.encoders.base_draws`)
    runs on these."""

    def __init__(self, draws: list[list[Any]]) -> None:
        self.draws = [(k, int(v, 16)) for k, v in draws]
        self.next = 0

    def randbits(self, k: int) -> int:
        assert k >= 1, "randbits(0) is never called"
        assert self.next < len(self.draws), f"draw {self.next}: randbits({k}) past the end of the recording"
        want, value = self.draws[self.next]
        assert want == k, f"draw {self.next}: the rule asks randbits({k}), the recording has randbits({want})"
        self.next += 1
        return value

    def B(self, x: float) -> bool:  # noqa: N802  # the page's names
        t = _threshold(x)
        if t == 0 or t >= TWO64:
            return t >= TWO64
        return self.randbits(64) < t

    def BB(self, x: float, n: int) -> int:  # noqa: N802
        t, full = _threshold(x), (1 << n) - 1
        if t == 0 or n == 0:
            return 0
        if t >= TWO64:
            return full
        below, tied = 0, full
        for plane in range(63, -1, -1):
            r = self.randbits(n)
            if t >> plane & 1:
                below, tied = below | (tied & ~r), tied & r
            else:
                tied &= ~r
            if not tied or t % (1 << plane) == 0:
                break
        return below

    def R(self, n: int) -> int:  # noqa: N802
        if n == 1:
            return 0
        bits = (n - 1).bit_length()
        while (r := self.randbits(bits)) >= n:
            pass
        return r


# -- the generated parts, and each protocol's declared rule against its vectors ---------------------------------
def test_the_page_is_what_its_generator_writes() -> None:
    """The k sequences, the float fields and the sections of protocols without prose come from the protocols' own
    modules (ldp.conformance.docs): adding a protocol edits this page only through the generator."""
    assert render_page(_text()) == _text(), f"docs/conformance.md is not up to date: run {COMMAND}"


def test_every_client_protocol_has_a_draw_order_section() -> None:
    headings = re.findall(r"^### `([a-z0-9-]+)`$", _text(), re.M)
    assert sorted(headings) == sorted(builtin_client_protocols()), f"run {COMMAND}"


def test_the_k_sequence_table_states_the_declared_rules() -> None:
    table = _table("### k sequences, in one table")
    rules = {name: params.draw_rule for name, (params, _) in builtin_client_protocols().items()}
    assert {name for name, rule in rules.items() if rule is None} == set(), "protocols without a draw_rule"
    assert table == {name: rule.text for name, rule in rules.items() if rule is not None}, f"run {COMMAND}"


@pytest.mark.parametrize("protocol", sorted(builtin_client_protocols()))
def test_every_case_draws_the_documented_k_sequence(protocol: str) -> None:
    """The protocol's predictor (its params' ``replay_draws``, from its ``draw_rule``) asks for exactly the recorded
    ``randbits`` calls of every case of its vector file, in order, and consumes all of them."""
    path = VECTORS / f"{protocol}.json"
    assert path.exists(), f"{protocol} has no vector file: run {GENERATE}"
    doc = json.loads(path.read_text("ascii"))
    spec = CollectionSpec.from_dict(doc["spec"])
    assert doc["cases"]
    for case in doc["cases"]:
        replay = Replay(case["draws"])
        params = spec.params(case["metric"])
        for report in case["reports"]:
            params.replay_draws(replay, report["value"])
        assert replay.next == len(replay.draws), f"{case['metric']}: {len(replay.draws) - replay.next} draws left"


def test_the_predictors_fail_on_another_order() -> None:
    """The check above can fail: a stream of another order, or one draw short, is caught."""
    doc = json.loads((VECTORS / "olh.json").read_text("ascii"))
    spec = CollectionSpec.from_dict(doc["spec"])
    case = next(c for c in doc["cases"] if len(c["draws"]) >= 2)
    params = spec.params(case["metric"])
    with pytest.raises(AssertionError, match="recording has"):
        params.replay_draws(Replay(case["draws"][::-1]), case["reports"][0]["value"])
    with pytest.raises(AssertionError, match="past the end"):
        params.replay_draws(Replay(case["draws"][:1]), case["reports"][0]["value"])


def test_a_protocol_without_prose_gets_a_generated_section_and_one_without_a_rule_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without its hand-written section, ``grr`` gets a generated one (its rule and its predictor's source); a
    protocol declaring no rule stops the generator, which names it and the hook."""
    text = _text()
    start = text.index("### `grr`\n")
    without = text[:start] + text[text.index("### `sue`\n"):]
    assert render_page(without) != without
    generated = render_page(without).split("<!-- generated: draw-order", 1)[1].split("<!-- end generated", 1)[0]
    assert "### `grr`" in generated and "grr_draws(s, pr.p, pr.domain_size)" in generated
    assert "`ldp/encoders/randomized_response.py`" in generated
    from ldp.encoders.randomized_response import GRRParams

    monkeypatch.setattr(GRRParams, "draw_rule", None)
    with pytest.raises(ValueError, match="grr: GRRParams .* declares no draw_rule"):
        render_page(text)
    with pytest.raises(NotImplementedError, match="GRRParams declares no draw_rule"):
        GRRParams(1.0, 3).replay_draws(Replay([]), 0)


def test_the_float_fields_are_the_annotated_ones() -> None:
    table = _table("| protocol | float fields |")
    assert set(table) == set(builtin_client_protocols())
    for protocol, (params_type, _) in builtin_client_protocols().items():
        hints = typing.get_type_hints(params_type)
        floats = {f.name for f in dataclasses.fields(params_type) if "float" in str(hints[f.name])}
        assert set(re.findall(r"`([a-z_]+)`", table[protocol])) == floats, protocol


def test_the_tags_and_constants_are_the_code_s() -> None:
    from ldp.client import state
    from ldp.encoders import longitudinal, longitudinal_memo, numeric, pem, rappor, rappor_ngrams

    text = _text()
    tags = [rappor._PRR_DOMAIN, rappor._MEMO_DOMAIN, longitudinal_memo._PRR_DOMAIN, longitudinal_memo._MEMO_DOMAIN,
            longitudinal._ALPHA_DOMAIN, rappor_ngrams._SUB_SECRET, state._METRIC_SECRET]
    for tag in tags:
        assert f'"{tag.decode("ascii").replace(chr(0), chr(92) + "0")}' in text, tag
    assert f"{pem.KEY_SEED:#X}".replace("0X", "0x") in text
    assert repr(numeric.HYBRID_THRESHOLD) in text
