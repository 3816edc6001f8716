"""check_protocol's checklist (ldp.protocols.checklist): each optional part read from the protocol, and the list in
the AssertionError of a failing check."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ldp.decoders.randomized_response import GRRAggregate
from ldp.encoders.randomized_response import GRREncoder, GRRParams
from ldp.protocols import Protocol, get_protocol
from ldp.protocols.checklist import checklist, format_checklist
from ldp.protocols.checks import as_protocol, check_protocol, protocol_checks

ROOT = Path(__file__).resolve().parents[2]


def _parts(proto: Protocol) -> dict[str, bool | None]:
    return {item.part: item.present for item in checklist(proto, root=ROOT)}


def test_grr_has_every_part_and_rr_lacks_what_it_lacks() -> None:
    assert set(_parts(get_protocol("grr")).values()) == {True}
    rr = _parts(get_protocol("rr"))
    assert rr["planner (for_epsilon)"] and rr["joint estimation (report_loglik)"]
    sketch = _parts(get_protocol("cms"))
    assert sketch["IBU channel (support_probabilities / response_matrix)"] is None  # an open domain
    assert sketch["joint estimation (report_loglik)"] is False


@dataclasses.dataclass(frozen=True)
class _Bare(GRRParams):
    """GRR under another name with nothing optional: no planner, no draw rule, no aggregate."""

    protocol = "bare-grr-checklist"
    draw_rule = None

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> _Bare:
        raise NotImplementedError

    @classmethod
    def examples(cls) -> list[_Bare]:
        return [cls(1.0, 3)]


class _BareEncoder(GRREncoder):
    params_type = _Bare


def test_missing_parts_are_named_with_their_file() -> None:
    proto = Protocol("bare-grr-checklist", _Bare, _BareEncoder, None, "provisional")
    items = {item.part: item for item in checklist(proto)}
    assert items["aggregate"].present is False and "Aggregate subclass with params_type = _Bare" in \
        items["aggregate"].where
    assert items["draw rule (draw_rule)"].present is False and "DrawRule" in items["draw rule (draw_rule)"].where
    assert items["vector file"].present is None  # not a built-in: no file of this repository
    text = format_checklist(proto, list(items.values()))
    assert text.startswith("bare-grr-checklist: ") and "[ ] aggregate" in text and "-> " in text


def test_a_failing_check_ends_with_the_checklist() -> None:
    proto = Protocol("bare-grr-checklist", _Bare, _BareEncoder, GRRAggregate, "provisional")
    with pytest.raises(AssertionError) as err:
        check_protocol(Protocol("bare-grr-checklist", _Bare, _BareEncoder, None, "provisional"), show=False)
    message = str(err.value)
    assert message.startswith("bare-grr-checklist-params failed: bare-grr-checklist has no aggregate")
    assert "\n\nbare-grr-checklist: " in message and "[ ] draw rule (draw_rule)" in message
    assert [str(c) for c in protocol_checks(proto)][0] == "bare-grr-checklist-params"


def test_as_protocol_takes_a_name_a_protocol_or_a_class() -> None:
    grr = get_protocol("grr")
    assert as_protocol("grr") is grr and as_protocol(grr) is grr
    assert as_protocol(GRRParams) == grr and as_protocol(GRREncoder) == grr
    with pytest.raises(ValueError, match="unknown protocol"):
        as_protocol("no-such-protocol")
    with pytest.raises(TypeError, match="its params or encoder class"):
        as_protocol(int)
