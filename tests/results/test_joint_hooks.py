"""The hooks the association analysis and the consistency post-processing ask of a protocol, checked for every
registered protocol: ``Aggregate.report_loglik`` (against the encoder's exact law), ``support_probabilities`` /
``response_matrix`` (against the aggregate's estimator), ``attribute_parts`` / ``check_parts_together`` (against
the report's fields) and ``label_of``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldp.decoders.association import Variable, joint_protocols
from ldp.decoders.consistency import SupportChannel, ibu_counts, oracle_channel
from ldp.privacy.audit import audit
from ldp.protocols import Protocol, protocols
from ldp.reports import Report, parse_json

PROTOCOLS = protocols()
JOINT = [p for p in PROTOCOLS.values() if p.aggregate_type is not None
         and p.params_type in p.aggregate_type.report_loglik_types]


def test_joint_protocols_are_those_whose_aggregate_gives_the_likelihood() -> None:
    """What the association analysis accepts is what the aggregates declare (each checked against the exact law
    below); every other protocol is refused by name. No list of names: a new protocol joins by its hook."""
    assert joint_protocols() == tuple(p.name for p in JOINT) and JOINT
    for proto in PROTOCOLS.values():
        if proto in JOINT:
            continue
        with pytest.raises(ValueError, match=f"association supports the protocols .*got {proto.name!r}"):
            Variable(proto.params_type.examples()[0])


@pytest.mark.parametrize("proto", JOINT, ids=lambda p: p.name)
def test_report_likelihood_is_the_encoders_exact_law(proto: Protocol) -> None:
    """``exp(report_loglik)[o, x] ∝ Pr[encode(x) = o]``, one constant for every output and value (1, or the
    probability of the cohort a RAPPOR likelihood is given)."""
    for params in proto.params_type.audit_examples():
        inputs = params.audit_inputs()

        def run(i: int, src: Any, p: Any = params, xs: list[Any] = inputs) -> str:
            return str(proto.encoder_type.for_audit(p, src).encode(xs[i]).to_json())

        res = audit(range(len(inputs)), run)
        outputs = sorted(str(o) for o in set().union(*res.distributions.values()))
        var = Variable(params, inputs) if params.domain_size is None else Variable(params)
        reports = [parse_json(o) for o in outputs]
        like = np.exp(var.loglik(var.columns(reports)))
        values = range(len(inputs)) if params.domain_size is None else inputs
        law = np.array([[float(res.distributions[i].get(o, 0)) for i in range(len(inputs))] for o in outputs])
        ratio = law / like[:, list(values)]
        assert np.allclose(ratio, ratio[0, 0], rtol=1e-9, atol=0) and 0 < ratio[0, 0] <= 1 + 1e-9, params


def _channel(params: Any) -> Any:
    try:
        return oracle_channel(params)
    except ValueError as err:
        assert "IBU needs the channel" in str(err)
        return None


def test_the_protocols_with_an_ibu_channel_are_those_declaring_one() -> None:
    """IBU runs on exactly the params that declare their channel (``support_probabilities`` or ``response_matrix``),
    each checked against the aggregate's estimator below; both kinds occur, so that check is not vacuous."""
    kinds = set()
    for proto in PROTOCOLS.values():
        for x in proto.params_type.examples():
            declared = x.support_probabilities is not None or x.response_matrix is not None
            assert (_channel(x) is not None) == declared, x
            if declared:
                kinds.add("support" if x.support_probabilities is not None else "matrix")
    assert kinds == {"support", "matrix"}


@pytest.mark.parametrize("proto", list(PROTOCOLS.values()), ids=lambda p: p.name)
def test_support_probabilities_invert_the_aggregates_estimator(proto: Protocol) -> None:
    """The support counts ``ĉ·(p* − q*) + n·q*`` of a raw estimate are whole numbers in ``[0, n]``: the hooks give
    the probabilities the estimator inverts; IBU then returns counts summing to n."""
    for params in proto.params_type.examples():
        channel = _channel(params)
        if channel is None:
            continue
        a, p_star, q_star = channel
        if isinstance(a, SupportChannel):
            assert (a.p_star, a.q_star) == params.support_probabilities and a.d == params.domain_size
        else:
            assert np.allclose(a.sum(axis=0), 1.0) and a.shape == (p_star.size, p_star.size)
        truth = np.arange(1, p_star.size + 1) * 40
        est = proto.aggregate_type.simulate(params, truth, np.random.default_rng(3)).estimate()
        support = est.count * (p_star - q_star) + est.n * q_star
        assert np.allclose(support, np.rint(support), atol=1e-6) and (support > -1e-6).all() and \
            (support < est.n + 1e-6).all(), params
        assert ibu_counts(est.count, est.n, params).sum() == pytest.approx(est.n)


@pytest.mark.parametrize("proto", list(PROTOCOLS.values()), ids=lambda p: p.name)
def test_attribute_parts_are_the_reports_fields(proto: Protocol) -> None:
    """Each part's fields, prefixed, are the report's; a report carrying every part (``check_parts_together``
    passes) holds a valid report of each component."""
    for params in proto.params_type.examples():
        parts = params.attribute_parts
        fields = {f.name: f for f in params.schema}
        for comp, prefix in parts.values():
            for f in comp.schema:
                assert fields[prefix + f.name].kind == f.kind and fields[prefix + f.name].size == f.size
        try:
            params.check_parts_together()
        except ValueError:
            assert parts, f"{params!r}: a one-attribute protocol refuses check_parts_together"
            continue
        report = proto.encoder_type(params, rng=1, simulation=True).encode(params.audit_inputs()[0])
        for comp, prefix in parts.values():
            comp.validate(Report(comp.protocol, comp.fingerprint,
                                 {f.name: report.payload[prefix + f.name] for f in comp.schema}))


@pytest.mark.parametrize("proto", list(PROTOCOLS.values()), ids=lambda p: p.name)
def test_label_of_names_every_value_of_a_fixed_domain(proto: Protocol) -> None:
    for params in proto.params_type.examples():
        d = params.domain_size
        if d is None or d > 1 << 16:
            continue
        names = [params.label_of(i) for i in range(d)]
        assert len(set(names)) == d and all(isinstance(x, str) for x in names)
        labels = getattr(params, "labels", None)
        assert names == (list(labels) if labels else [str(i) for i in range(d)])
