"""docs/conformance.md against the conformance vectors (conformance/vectors/) and the code.

Every client protocol has a draw-order section, and the page's table of k sequences holds, for each protocol, the
rule tested here: a predictor written from that rule (the primitives' laws re-implemented, the probabilities taken
from the protocol's params) replays every case of the protocol's vector file and must ask for exactly the recorded
``randbits(k)`` calls, in order, and consume all of them. The float fields, the domain tags and the constants the
page names are checked against the code."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import typing
from collections.abc import Callable
from typing import Any

import pytest
from support import ROOT

from ldp.protocols import client_protocols
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
class Replay:
    """The recorded ``draws`` of a case: each ``randbits(k)`` must ask for the next record's ``k``."""

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


def _threshold(x: float) -> int:
    return int(math.ldexp(x, 64))


def B(s: Replay, x: float) -> bool:
    t = _threshold(x)
    if t == 0 or t >= TWO64:
        return t >= TWO64
    return s.randbits(64) < t


def BB(s: Replay, x: float, n: int) -> int:
    t, full = _threshold(x), (1 << n) - 1
    if t == 0 or n == 0:
        return 0
    if t >= TWO64:
        return full
    below, tied = 0, full
    for plane in range(63, -1, -1):
        r = s.randbits(n)
        if t >> plane & 1:
            below, tied = below | (tied & ~r), tied & r
        else:
            tied &= ~r
        if not tied or t % (1 << plane) == 0:
            break
    return below


def R(s: Replay, n: int) -> int:
    if n == 1:
        return 0
    bits = (n - 1).bit_length()
    while (r := s.randbits(bits)) >= n:
        pass
    return r


# -- each protocol's rule: its text in the page's table, and its predictor -------------------------------------
def _grr(s: Replay, p: float, d: int) -> bool:
    kept = B(s, p)
    if not kept:
        R(s, d - 1)
    return kept


def _sketch(s: Replay, sk: Any) -> int:
    j = R(s, sk.num_hashes)
    if sk.hadamard:
        R(s, sk.width)
        B(s, sk.flip_probability)
    else:
        BB(s, sk.flip_probability, sk.width)
    return j


def _piecewise(s: Replay, pr: Any, x: float) -> None:
    B(s, pr.grid(x)[1])
    if B(s, pr.p_in):
        R(s, pr.window)
    else:
        R(s, pr.cells - pr.window)


def _duchi(s: Replay, pr: Any, x: float) -> None:
    B(s, pr.unit(x))
    B(s, pr.q)


def _ss(s: Replay, pr: Any, value: Any) -> None:
    o = int(B(s, pr.p))
    for j in range(pr.domain_size - pr.omega + o, pr.domain_size):
        R(s, j)


def _pem(s: Replay, pr: Any, value: Any) -> None:
    group = R(s, pr.groups)
    if pr.oracle_of(group) == "grr":
        _grr(s, pr.grr(group).p, 1 << pr.prefix_bits(group))
    else:
        R(s, pr.seed_range)
        _grr(s, pr.p, pr.g)


def _dbitflip(s: Replay, pr: Any, value: Any) -> None:
    k, d, b = pr.num_buckets, pr.d, pr.bucket_of(value)
    if d == k:
        sampled = (1 << k) - 1
    elif math.comb(k, d) <= 4096:
        subsets = [sum(1 << i for i in c) for c in itertools.combinations(range(k), d)]
        sampled = subsets[R(s, len(subsets))]
    else:
        sampled = 0
        for j in range(k - d, k):
            t = R(s, j + 1)
            sampled |= 1 << (j if sampled >> t & 1 else t)
    if d > 8:
        BB(s, pr.p0, k)
    else:
        for i in range(k):
            if sampled >> i & 1 and i != b:
                B(s, pr.p0)
    if sampled >> b & 1:
        B(s, pr.p1)


def _hybrid(s: Replay, pr: Any, value: Any) -> None:
    x = pr.check_value(value)
    if B(s, pr.alpha):
        _piecewise(s, pr.piecewise, x)
    else:
        _duchi(s, pr.duchi, x)


def _ngrams(s: Replay, pr: Any, value: Any) -> None:
    R(s, pr.pairs)
    for _ in range(2):
        BB(s, pr.gram.p, pr.gram_bloombits)
        BB(s, pr.gram.q, pr.gram_bloombits)
    BB(s, pr.p, pr.num_bloombits)
    BB(s, pr.q, pr.num_bloombits)


def _hh(s: Replay, pr: Any, value: Any) -> None:
    if pr.level_weights:
        r, level = R(s, sum(pr.level_weights)), 0
        while r >= pr.level_weights[level]:
            r, level = r - pr.level_weights[level], level + 1
    else:
        level = R(s, pr.depth)
    m, oracle = pr.level_size(level + 1), pr.level_oracle(level + 1)
    if pr.oracle_kinds[level] == "grr":
        _grr(s, oracle.p, m)
    else:
        BB(s, oracle.q, m)
        B(s, 0.5)


def _multi(s: Replay, pr: Any, value: Any) -> None:
    parts = list(zip(pr.names, pr.components, strict=True))
    if pr.mode == "sample":
        parts = [parts[R(s, pr.d)]]
    for name, comp in parts:
        RULES[comp.protocol][1](s, comp, value[name])


Predictor = Callable[[Replay, Any, Any], object]
RULES: dict[str, tuple[str, Predictor]] = {
    "rr": ("`B(q)` for a 1, `B(p)` for a 0", lambda s, pr, v: B(s, pr.q if v else pr.p)),
    "grr": ("`B(p)`, then `R(d−1)` if false", lambda s, pr, v: _grr(s, pr.p, pr.domain_size)),
    "sue": ("`BB(q, d)`, `B(p)`", lambda s, pr, v: (BB(s, pr.q, pr.domain_size), B(s, pr.p))),
    "oue": ("`BB(q, d)`, `B(1/2)`", lambda s, pr, v: (BB(s, pr.q, pr.domain_size), B(s, 0.5))),
    "olh": ("`R(seed_range)`, `B(p)`, then `R(g−1)` if false",
            lambda s, pr, v: (R(s, pr.seed_range), _grr(s, pr.p, pr.g))),
    "blh": ("`R(seed_range)`, `B(p)`", lambda s, pr, v: (R(s, pr.seed_range), B(s, pr.p))),
    "hr": ("`B(p)`, `R(K)`", lambda s, pr, v: (B(s, pr.p), R(s, pr.order))),
    "hr-block": ("`B(γ)`, then `R(K)` if true, `R(b)` if false",
                 lambda s, pr, v: R(s, pr.order) if B(s, pr.gamma) else R(s, pr.block_order)),
    "ss": ("`B(p)`, then `R(d−ω+o)`, `R(d−ω+o+1)`, …, `R(d−1)`, with `o` = 1 if `B(p)` was true, else 0", _ss),
    "cms": ("`R(k)`, `BB(σ(ε/2), m)`", lambda s, pr, v: _sketch(s, pr)),
    "hcms": ("`R(k)`, `R(m)`, `B(σ(ε))`", lambda s, pr, v: _sketch(s, pr)),
    "rappor": ("`BB(p, k)`, `BB(q, k)`",
               lambda s, pr, v: (BB(s, pr.p, pr.num_bloombits), BB(s, pr.q, pr.num_bloombits))),
    "rappor-ngrams": ("`R(P(P−1)/2)`, then twice `BB(gram_p, gram_k)`, `BB(gram_q, gram_k)`, then `BB(p, k)`, "
                      "`BB(q, k)`", _ngrams),
    "sfp": ("`R(L/r)`, the word sketch's (`cms` or `hcms`), the fragment sketch's",
            lambda s, pr, v: (R(s, pr.num_positions), _sketch(s, pr.word_params), _sketch(s, pr.fragment_params))),
    "pem": ("`R(G)`; in a GRR group `B(p_j)`, then `R(2^b_j − 1)` if false; in an OLH group `R(seed_range)`, "
            "`B(p)`, then `R(g−1)` if false", _pem),
    "duchi": ("`B(unit(x))`, `B(q)`", lambda s, pr, v: _duchi(s, pr, pr.check_value(v))),
    "piecewise": ("`B(φ)`, `B(p_in)`, then `R(w)` if true, `R(G−w)` if false",
                  lambda s, pr, v: _piecewise(s, pr, pr.check_value(v))),
    "hybrid": ("`B(α)`, then piecewise's if true, duchi's if false", _hybrid),
    "dbitflip": ("the sample (nothing if `d = k`; `R(C(k, d))` if `C(k, d) <= 4096`; else `R(k−d+1)`, …, `R(k)`), "
                 "then `BB(p0, k)` if `d > 8`, else `B(p0)` per sampled bucket other than the value's, then `B(p1)` "
                 "if the value's bucket is sampled", _dbitflip),
    "bucket-grr": ("`B(p)`, then `R(k−1)` if false", lambda s, pr, v: _grr(s, pr.grr.p, pr.num_buckets)),
    "bucket-oue": ("`BB(q, k)`, `B(1/2)`", lambda s, pr, v: (BB(s, pr.q, pr.num_buckets), B(s, 0.5))),
    "hh": ("`R(depth)` (with `level_weights`: `R(Σw)`); at a GRR level `B(p)`, then `R(m−1)` if false; at an OUE "
           "level `BB(q, m)`, `B(1/2)`", _hh),
    "lgrr": ("`B(p2)`, then `R(d−1)` if false", lambda s, pr, v: _grr(s, pr.instantaneous.p, pr.domain_size)),
    "loue": ("`BB(flip, d)`", lambda s, pr, v: BB(s, pr.flip, pr.domain_size)),
    "memo-mean": ("`B(γ)`", lambda s, pr, v: B(s, pr.gamma_realized)),
    "memo-dbitflip": ("`B(γ)` per sampled bucket", lambda s, pr, v: [B(s, pr.gamma_realized) for _ in range(pr.d)]),
    "thresh": ("nothing (every draw is from the keyed stream)", lambda s, pr, v: None),
    "multi": ("split: each attribute's, in order; sample: `R(d)`, then the sampled attribute's", _multi),
}


def test_every_client_protocol_has_a_draw_order_section() -> None:
    headings = set(re.findall(r"^### `([a-z-]+)`$", _text(), re.M))
    assert headings == set(client_protocols())


def test_the_k_sequence_table_states_the_tested_rules() -> None:
    table = _table("### k sequences, in one table")
    assert set(table) == set(client_protocols()) == set(RULES)
    assert {p: table[p] for p in RULES} == {p: text for p, (text, _) in RULES.items()}


@pytest.mark.parametrize("protocol", sorted(client_protocols()))
def test_every_case_draws_the_documented_k_sequence(protocol: str) -> None:
    doc = json.loads((VECTORS / f"{protocol}.json").read_text("ascii"))
    spec = CollectionSpec.from_dict(doc["spec"])
    predict = RULES[protocol][1]
    assert doc["cases"]
    for case in doc["cases"]:
        replay = Replay(case["draws"])
        params = spec.params(case["metric"])
        for report in case["reports"]:
            predict(replay, params, report["value"])
        assert replay.next == len(replay.draws), f"{case['metric']}: {len(replay.draws) - replay.next} draws left"


def test_the_predictors_fail_on_another_order() -> None:
    """The check above can fail: a stream of another order, or one draw short, is caught."""
    doc = json.loads((VECTORS / "olh.json").read_text("ascii"))
    spec = CollectionSpec.from_dict(doc["spec"])
    case = next(c for c in doc["cases"] if len(c["draws"]) >= 2)
    params = spec.params(case["metric"])
    with pytest.raises(AssertionError, match="recording has"):
        RULES["olh"][1](Replay(case["draws"][::-1]), params, case["reports"][0]["value"])
    with pytest.raises(AssertionError, match="past the end"):
        RULES["olh"][1](Replay(case["draws"][:1]), params, case["reports"][0]["value"])


def test_the_float_fields_are_the_annotated_ones() -> None:
    table = _table("| protocol | float fields |")
    assert set(table) == set(client_protocols())
    for protocol, (params_type, _) in client_protocols().items():
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
