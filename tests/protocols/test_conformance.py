"""The conformance suite (:mod:`ldp.protocols.checks`) over every registered protocol, each check its own test; and
proof that each check can fail: a protocol broken on purpose (claimed ε too small, variance formula off by 2, a
biased estimator, a batch kernel of another law, a merge that loses counts, params that do not round trip, a
protocol without its hooks) fails the check that guards it."""

from __future__ import annotations

import pytest

from ldp.decoders.randomized_response import GRRAggregate, grr_variance
from ldp.encoders.base import ProtocolParams
from ldp.encoders.randomized_response import GRREncoder, GRRParams
from ldp.privacy.accountant import PrivacyCost
from ldp.protocols import get_protocol, protocols
from ldp.protocols.check_statistics import assert_passed
from ldp.protocols.checks import (
    all_checks,
    check_batch,
    check_client,
    check_merge,
    check_params,
    check_privacy,
    check_protocol,
    check_statistics,
    protocol_checks,
)
from ldp.protocols.registry import Protocol
from ldp.reports import ReportError

# The statistics battery is numpy-bound simulation that tracing slows by half again: it runs untraced (no_cover)
# except on the protocols whose batteries between them reach every branch of check_statistics (a hash_seed redrawn
# per collection: cms; attributes drawn by each run: multi; params the planner refuses: rappor-ngrams; a mean: duchi)
TRACED_BATTERIES = {"cms", "multi", "rappor-ngrams", "duchi"}


def _case(check):
    if check.name != "statistics":
        return pytest.param(check, id=str(check))
    # the batteries are the suite's longest tests: handed out first under xdist (tests/conftest.py)
    marks = [pytest.mark.heavy] + ([pytest.mark.no_cover] if check.protocol not in TRACED_BATTERIES else [])
    return pytest.param(check, id=str(check), marks=marks)


@pytest.mark.parametrize("check", [_case(c) for c in all_checks()])
def test_protocol_conforms(check, statistics_battery):
    if check.name == "statistics":  # check_statistics on the battery run once per protocol (tests/conftest.py)
        assert_passed(statistics_battery(check.protocol))
    else:
        check()


def test_every_protocol_has_every_check():
    names = [c.name for c in protocol_checks("grr")]
    assert names == ["params", "privacy", "statistics", "merge", "batch", "client"]
    assert {c.name: c.function for c in protocol_checks("grr")}["statistics"] is check_statistics  # as shared above
    assert {str(c) for c in all_checks()} == {f"{p}-{n}" for p in protocols() for n in names}
    with pytest.raises(ValueError, match="unknown protocol"):
        protocol_checks("no-such-protocol")


# -- each check can fail ------------------------------------------------------------------------------------
class UnderclaimedGRR(GRRParams):
    """GRR that claims 0.9 of its ε."""

    @property
    def privacy_cost(self) -> PrivacyCost:  # type: ignore[override]
        return PrivacyCost(0.9 * self.epsilon)


def test_an_underclaimed_epsilon_fails_the_audit():
    broken = Protocol("grr", UnderclaimedGRR, GRREncoder, GRRAggregate)
    with pytest.raises(AssertionError, match="above the claimed"):
        check_privacy(broken)


def test_an_overstated_audit_epsilon_fails_the_audit(monkeypatch):
    monkeypatch.setattr(GRRParams, "audit_epsilon", lambda self: 0.5 * self.privacy_cost.epsilon)
    with pytest.raises(AssertionError, match="not the stated"):
        check_privacy(get_protocol("grr"))


def test_a_variance_formula_off_by_two_fails_the_statistics(monkeypatch):
    monkeypatch.setattr(GRRAggregate, "exact_variance", staticmethod(lambda p, t: 2 * grr_variance(p, t)))
    with pytest.raises(AssertionError, match="outside the chi-square band"):
        check_statistics(get_protocol("grr"))
    with pytest.raises(AssertionError, match="^grr-statistics failed: "):
        check_protocol("grr")


def test_a_biased_estimator_fails_the_statistics(monkeypatch):
    estimate = GRRAggregate.estimate

    def biased(self, *args, **kwargs):
        est = estimate(self, *args, **kwargs)
        est.count[0] += 0.02 * self.n  # 2% of the users: far beyond the allowed standard errors
        return est

    monkeypatch.setattr(GRRAggregate, "estimate", biased)
    with pytest.raises(AssertionError, match="standard errors from the truth"):
        check_statistics(get_protocol("grr"))


def test_a_batch_kernel_of_another_law_fails(monkeypatch):
    encode_batch = GRREncoder.encode_batch

    def leaky_batch(self, values, rng=None):
        other = GRREncoder(GRRParams(self.params.epsilon + 0.3, self.params.domain_size, self.params.labels))
        return self._batch(dict(encode_batch(other, values, rng).columns))

    monkeypatch.setattr(GRREncoder, "encode_batch", leaky_batch)
    with pytest.raises(AssertionError, match="does not follow encode's exact law"):
        check_batch(get_protocol("grr"))


def test_a_merge_that_loses_counts_fails(monkeypatch):
    def lossy(self, other):
        self.n += other.n
        return self

    monkeypatch.setattr(GRRAggregate, "merge", lossy)
    with pytest.raises(AssertionError, match="merging two halves differs"):
        check_merge(get_protocol("grr"))


def test_params_that_do_not_round_trip_fail(monkeypatch):
    to_dict = GRRParams.to_dict
    monkeypatch.setattr(GRRParams, "to_dict", lambda self: {**to_dict(self), "epsilon": round(self.epsilon + 0.1, 3)})
    with pytest.raises(AssertionError, match="round trips to"):
        check_params(get_protocol("grr"))


def test_reports_the_server_refuses_fail_the_client_path(monkeypatch):
    def refuse(self, report):
        raise ReportError("bad_value", "refused on purpose")

    monkeypatch.setattr(GRRParams, "validate", refuse)
    with pytest.raises(AssertionError, match="rejected"):
        check_client(get_protocol("grr"))


def test_a_protocol_without_its_hooks_fails_with_a_clear_message(monkeypatch):
    monkeypatch.setattr(GRRParams, "examples", ProtocolParams.__dict__["examples"])
    with pytest.raises(AssertionError, match=r"GRRParams defines no examples\(\)"):
        check_params(get_protocol("grr"))
    monkeypatch.setattr(GRRParams, "audit_examples", classmethod(lambda cls: [cls(1.0, 100)]))
    with pytest.raises(AssertionError, match=r"GRRParams defines no audit_inputs\(\)"):  # 100 values: too many
        check_privacy(get_protocol("grr"))
