"""Several attributes per user in one report: protocol ``multi``. Client side (standard library only).

A multi report carries ``d >= 2`` attributes of one user, each collected by an existing fixed-domain or
numeric protocol (:data:`COMPONENT_PROTOCOLS`), in one of two modes (Wang et al., ICDE 2019; Arcolezi et
al., 2021):

``split``
    every report carries all ``d`` attributes, each encoded at ``ε/d``. Sequential composition: the
    report costs the *sum* of the components' realized ε (about ε).
``sample`` (SMP)
    each report samples ONE attribute ``j`` exactly uniformly (``randbelow(d)``, independent of the
    values) and encodes it at the full ε; the report carries ``attr = j``. An output ``(j, o)`` has
    probability ``Pr_j[o | x_j]/d``, so the worst ratio is the *largest* component's: the report costs
    the max of the components' realized ε.

Parameters: ``MultiParams(epsilon, mode, attributes)``, ``attributes`` a tuple of
``(name, protocol, params)`` with ``params`` the component's parameters *without* ``epsilon`` (binary
``rr`` takes ``{}``: it is built by ``BinaryRRParams.from_epsilon``). In JSON (spec, ``to_dict``) an
attribute is ``[name, protocol, {params}]``; ``{"name": .., "protocol": .., "params": {..}}`` is accepted
too. The component params are built at ``ε/d`` (split) or ``ε`` (sample) and kept normalized.

Report schema (fixed per params): in sample mode ``attr`` (``uint < d``) first; then each attribute's
fields, prefixed ``<name>_``. In sample mode the fields of the attributes not sampled are all zero, and
:meth:`MultiParams.validate` rejects a report that breaks that (``bad_value``), or whose sampled
sub-report breaks its protocol's rules.

A client value is a mapping ``{name: value}`` with exactly the attribute names; each value is checked
by its protocol's ``prepare`` (every attribute, in both modes) before any budget is charged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any, ClassVar

from ldp.encoders.base import Encoder, ProtocolParams, check_epsilon
from ldp.encoders.base_checks import check_choice, refuse_relation, refuse_type, renaming
from ldp.encoders.base_draws import DrawPrimitives, DrawRule
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.histogram import BucketGRRParams, DBitFlipParams
from ldp.encoders.numeric import DuchiParams, HybridParams, PiecewiseParams
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.errors import Refusal, RefusalValueError, kind_of
from ldp.privacy.accountant import PrivacyCost
from ldp.reports import MAX_FIELDS, Field, PayloadValue, Report, ReportBatch, ReportError, bits_from_int

__all__ = ["MultiParams", "MultiEncoder", "COMPONENT_PROTOCOLS", "MODES", "Attribute"]

COMPONENT_PROTOCOLS: Mapping[str, type[ProtocolParams]] = MappingProxyType({
    "rr": BinaryRRParams, "grr": GRRParams, "bucket-grr": BucketGRRParams, "dbitflip": DBitFlipParams,
    "duchi": DuchiParams, "piecewise": PiecewiseParams, "hybrid": HybridParams,
})
"""The protocols an attribute may use: fixed-domain or numeric, one report per value, no memoization."""

MODES = ("split", "sample")

Attribute = tuple[str, str, Mapping[str, Any]]
"""``(name, protocol, params without epsilon)``."""

_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,30}\Z")


def _normalized(attribute: Any, i: int) -> tuple[str, str, dict[str, Any]]:
    """One attribute as ``(name, protocol, params dict)`` from a triplet or a ``{name, protocol, params}`` mapping."""
    where: dict[str, Any] = {"param": "attributes", "index": i}
    if isinstance(attribute, Mapping):
        if set(attribute) != {"name", "protocol", "params"}:
            raise RefusalValueError(f"attributes[{i}] must have exactly the keys name, protocol, params; got "
                                    f"{sorted(map(str, attribute))}", "param_type", **where, expected="attribute",
                                    got="object")
        name, protocol, params = attribute["name"], attribute["protocol"], attribute["params"]
    elif isinstance(attribute, Sequence) and not isinstance(attribute, (str, bytes)) and len(attribute) == 3:
        name, protocol, params = attribute
    else:
        raise refuse_type(f"attributes[{i}] must be (name, protocol, params) or a mapping of them, "
                          f"got {type(attribute).__name__}", attribute, "attribute", **where)
    if not (isinstance(name, str) and _NAME_RE.match(name)):
        message = f"attributes[{i}]: names are [a-z][a-z0-9_]{{0,30}} (they prefix report fields), got {name!r}"
        if not isinstance(name, str):
            raise RefusalValueError(message, "param_type", **where, expected="string", got=kind_of(name))
        raise RefusalValueError(message, "param_relation", params=["attributes"], rule="attribute_name", index=i)
    check_choice(protocol, "attributes", COMPONENT_PROTOCOLS, f"attributes[{i}] ({name}): protocol must be one of "
                 f"{', '.join(COMPONENT_PROTOCOLS)}, got {protocol!r}", index=i)
    if not isinstance(params, Mapping):
        raise refuse_type(f"attributes[{i}] ({name}): params must be a mapping, got {type(params).__name__}", params,
                          "object", **where)
    if "epsilon" in params:
        raise RefusalValueError(f"attributes[{i}] ({name}): params must not carry epsilon (the multi's epsilon is "
                                "split or given whole by the mode)", "unknown_params", params=["epsilon"],
                                attribute=name)
    return name, protocol, dict(params)


def build_component(protocol: str, params: Mapping[str, Any], epsilon: float) -> ProtocolParams:
    """The component's params at ``epsilon`` (``rr``: symmetric RR, its params must be empty)."""
    params_type = COMPONENT_PROTOCOLS[protocol]
    if params_type is BinaryRRParams:
        if params:
            raise RefusalValueError(f"rr attributes take no params (symmetric RR at the attribute's ε), got "
                                    f"{sorted(params)}", "unknown_params", params=sorted(map(str, params)))
        return BinaryRRParams.from_epsilon(epsilon)
    return params_type.from_dict({**params, "epsilon": epsilon})


def _without_epsilon(params: ProtocolParams) -> dict[str, Any]:
    if isinstance(params, BinaryRRParams):
        return {}
    return {k: v for k, v in params.to_dict().items() if k != "epsilon"}


def _frozen(value: Any) -> Any:
    """Hashable, read-only copy of a JSON-like value (lists become tuples, dicts read-only)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    """The JSON form of :func:`_frozen`'s output (tuples become lists, mappings dicts)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _multi_draws(s: DrawPrimitives, pr: MultiParams, value: Any) -> None:
    """Every attribute's draws, in order (split), or one attribute drawn by ``R(d)``, then its draws (sample)."""
    parts = list(zip(pr.names, pr.components, strict=True))
    if pr.mode == "sample":
        parts = [parts[s.R(pr.d)]]
    for name, comp in parts:
        comp.replay_draws(s, value[name])


@dataclass(frozen=True)
class MultiParams(ProtocolParams):
    """``d >= 2`` attributes per report, ``mode`` ``"split"`` (ε/d each) or ``"sample"`` (one at ε)."""

    epsilon: float
    mode: str
    attributes: tuple[Attribute, ...]
    protocol: ClassVar[str] = "multi"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "epsilon": ParamInfo("the privacy budget ε of one report, of all its attributes together",
                             (Range(min=0, min_exclusive=True, finite=True),)),
        "mode": ParamInfo("split: every attribute reported at ε/d; sample: one attribute drawn, reported at ε",
                          choices=MODES),
        "attributes": ParamInfo("the attributes: [name, protocol, params] each, in report order")}
    refusal_rules: ClassVar[Mapping[str, str]] = {
        **{rule: text for part in COMPONENT_PROTOCOLS.values() for rule, text in part.refusal_rules.items()},
        "attribute_name": "a name matches `[a-z][a-z0-9_]{0,30}`",
        "distinct_fields": "the report fields must not collide",
        "fields": "(a limit) the fields of one report", "field_name_characters": "(a limit) a report field's name"}
    draw_rule = DrawRule("split: each attribute's, in order; sample: `R(d)`, then the sampled attribute's",
                         _multi_draws)
    population_kind: ClassVar[str] = "attributes"  # a simulation takes one population per attribute

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        check_choice(self.mode, "mode", MODES, f"mode must be 'split' (ε/d per attribute) or 'sample' (one attribute "
                     f"at ε), got {self.mode!r}")
        raw = self.attributes
        if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Sequence):
            raise refuse_type(f"attributes must be a sequence of (name, protocol, params), got {type(raw).__name__}",
                              raw, "list", "attributes")
        if len(raw) < 2:
            raise RefusalValueError(f"a multi report needs at least 2 attributes (use the protocol itself for one), "
                                    f"got {len(raw)}", "param_length", param="attributes", got=len(raw), min=2)
        attrs = [_normalized(a, i) for i, a in enumerate(raw)]
        names = [a[0] for a in attrs]
        if len(set(names)) != len(names):
            raise refuse_relation(f"attribute names must be distinct, got {names}", "distinct", "attributes")
        each = eps / len(attrs) if self.mode == "split" else eps
        comps = []
        for i, (name, protocol, params) in enumerate(attrs):  # an attribute's own refusal names the attribute
            with renaming({}, f"attributes[{i}] ({name}): {protocol} at ε={each:.6g}: ", attribute=name):
                comps.append(build_component(protocol, params, each))
        object.__setattr__(self, "attributes", tuple((name, protocol, _frozen(_without_epsilon(c)))
                                                     for (name, protocol, _), c in zip(attrs, comps, strict=True)))
        object.__setattr__(self, "_components", tuple(comps))
        self._check_fields()
        self.check_collectable()

    def _check_fields(self) -> None:
        names = [f.name for f in self.schema]
        if len(names) > MAX_FIELDS:
            raise RefusalValueError(f"a multi report carries at most {MAX_FIELDS} fields (the wire format's limit); "
                                    f"these attributes need {len(names)}", "param_limit", limit="fields",
                                    got=len(names), max=MAX_FIELDS)
        if too_long := [n for n in names if len(n) > 32]:
            raise RefusalValueError(f"report field names are at most 32 characters; shorten the attribute names of "
                                    f"{too_long}", "param_limit", limit="field_name_characters",
                                    got=max(map(len, too_long)), max=32)
        if len(set(names)) != len(names):
            raise refuse_relation(f"attribute names make colliding report fields {sorted(names)}; rename an attribute",
                                  "distinct_fields", "attributes")

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    @classmethod
    def of(cls, epsilon: float, mode: str, **attributes: tuple[str, Mapping[str, Any]]) -> MultiParams:
        """Keyword form: ``MultiParams.of(2.0, "sample", app=("grr", {"domain_size": 4}), ...)``."""
        return cls(epsilon, mode, tuple((name, proto, params) for name, (proto, params) in attributes.items()))

    def to_dict(self) -> dict[str, Any]:
        """``{"epsilon", "mode", "attributes": [[name, protocol, {params}], ...]}`` (JSON-ready)."""
        return {"epsilon": self.epsilon, "mode": self.mode,
                "attributes": [[name, proto, _plain(params)] for name, proto, params in self.attributes]}

    # -- the parts -------------------------------------------------------------------------------
    @property
    def d(self) -> int:
        """The number of attributes."""
        return len(self.attributes)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(a[0] for a in self.attributes)

    @property
    def components(self) -> tuple[ProtocolParams, ...]:
        """Each attribute's params, at ``ε/d`` (split) or ``ε`` (sample)."""
        comps: tuple[ProtocolParams, ...] = self.__dict__["_components"]
        return comps

    @property
    def component_epsilon(self) -> float:
        return self.epsilon / self.d if self.mode == "split" else self.epsilon

    @cached_property
    def prefixes(self) -> tuple[str, ...]:
        return tuple(f"{name}_" for name in self.names)

    @property
    def attribute_parts(self) -> dict[str, tuple[ProtocolParams, str]]:
        """Each attribute's component params and field prefix, by name (in attribute order)."""
        return {name: (comp, pre) for name, comp, pre in zip(self.names, self.components, self.prefixes, strict=True)}

    def check_parts_together(self) -> None:
        """A split report carries every attribute; a sample-mode report one (``ValueError``)."""
        if self.mode != "split":
            raise ValueError("a sample-mode multi: each report carries ONE attribute, so no report pairs two, and "
                             "envelopes carry no client identifier to link two reports; collect the pair with mode "
                             "'split' (one report carries every attribute)")

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """Sum (split) or max (sample) of the components' costs (module docstring)."""
        costs = [c.privacy_cost.epsilon for c in self.components]
        return PrivacyCost(math.fsum(costs) if self.mode == "split" else max(costs))

    @property
    def domain_size(self) -> None:
        """``None``: a value is a mapping of attributes, not an index."""
        return None

    @classmethod
    def examples(cls) -> list[MultiParams]:
        """A category, a number and a yes/no, split and sampled; buckets and a hybrid mean, sampled
        (conformance suite)."""
        small: tuple[Attribute, ...] = (("a", "grr", {"domain_size": 3}), ("x", "duchi", {"low": 0, "high": 1}),
                                        ("s", "rr", {}))
        mixed: tuple[Attribute, ...] = (("l", "dbitflip", {"edges": [0, 1, 2], "d": 2}),
                                        ("h", "hybrid", {"low": 0, "high": 1, "cells": 4}))
        return [cls(1.5, "split", small), cls(1.5, "sample", small), cls(2.0, "sample", mixed)]

    def audit_inputs(self) -> list[dict[str, Any]]:
        """Every combination of the attributes' own audit inputs: the worst pair differs in every attribute
        (split mode attains the sum of their ε, sample mode the largest)."""
        from itertools import product

        combos = product(*(c.audit_inputs() for c in self.components))
        return [dict(zip(self.names, combo, strict=True)) for combo in combos]

    def batch_values(self, values: list[Any]) -> dict[str, Any]:
        """``{name: what that attribute's encode_batch takes}`` of a list of value mappings."""
        return {name: comp.batch_values([v[name] for v in values])
                for name, comp in zip(self.names, self.components, strict=True)}

    @property
    def aggregate_cells(self) -> int:
        return self.d + sum(c.aggregate_cells for c in self.components)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        head = (Field("attr", "uint", self.d),) if self.mode == "sample" else ()
        return head + tuple(Field(pre + f.name, f.kind, f.size)
                            for pre, c in zip(self.prefixes, self.components, strict=True) for f in c.schema)

    @cached_property
    def zero_payloads(self) -> tuple[dict[str, PayloadValue], ...]:
        """Each attribute's all-zero prefixed fields (what sample mode carries for an attribute not sampled)."""
        return tuple({pre + f.name: (0 if f.kind == "uint" else bits_from_int(0, f.size)) for f in c.schema}
                     for pre, c in zip(self.prefixes, self.components, strict=True))

    @cached_property
    def sample_templates(self) -> tuple[dict[str, PayloadValue], ...]:
        """Per sampled attribute ``j``, the sample-mode payload with every field in schema order: ``attr = j``
        and all-zero fields (``j``'s are overwritten by its report)."""
        zeros = {k: v for z in self.zero_payloads for k, v in z.items()}
        return tuple({"attr": j, **zeros} for j in range(self.d))

    def sub_report(self, report: Report, j: int) -> Report:
        """Attribute ``j``'s part of a (schema-checked) report, as its protocol's report."""
        comp, pre = self.components[j], self.prefixes[j]
        return Report.trusted(comp.protocol, comp.fingerprint,
                              {f.name: report.payload[pre + f.name] for f in comp.schema})

    def validate(self, report: Report) -> None:
        """The schema's checks; in sample mode, zero fields outside the sampled attribute; then the
        (sampled, or every) attribute's own protocol rules."""
        super().validate(report)
        if self.mode == "split":
            sampled = range(self.d)
        else:
            j = report.payload["attr"]
            assert isinstance(j, int)  # a uint: checked by the schema
            for i, zeros in enumerate(self.zero_payloads):
                if i != j and any(report.payload[k] != v for k, v in zeros.items()):
                    raise ReportError("bad_value", f"attr={j} was sampled but the fields of attribute "
                                                   f"{self.names[i]!r} are not all zero")
            sampled = range(j, j + 1)
        for i in sampled:
            try:
                self.components[i].validate(self.sub_report(report, i))
            except ReportError as err:
                raise ReportError(err.reason, f"attribute {self.names[i]!r}: {err.detail}") from None


class MultiEncoder(Encoder):
    """Client encoder for :class:`MultiParams`; a value is a mapping ``{name: value}`` of every attribute."""

    params: MultiParams
    params_type: ClassVar[type[MultiParams]] = MultiParams

    def __init__(self, params: MultiParams, **options: Any) -> None:
        super().__init__(params, **options)
        from ldp.protocols import client_protocols  # stdlib only; imported here (it scans this package)

        # each component's law, drawing from this encoder's source (checked for seeding above; no ledger of its own)
        self._parts: tuple[Encoder, ...] = tuple(
            client_protocols()[c.protocol][1](c, rng=self._rng, simulation=True) for c in self.params.components)
        pr = self.params
        self._prepares = tuple(zip(pr.names, (part.prepare for part in self._parts), strict=True))
        # per attribute: its part's payload function and its fields' prefixed names (built once, not per report)
        self._payloads = tuple((part.randomize_payload, {f.name: pre + f.name for f in comp.schema})
                               for part, comp, pre in zip(self._parts, pr.components, pr.prefixes, strict=True))
        # sample mode, per sampled attribute: its payload template, payload function and names, in one lookup
        self._samples = tuple((template, *payload) for template, payload in
                              zip(pr.sample_templates, self._payloads, strict=True)) if pr.mode == "sample" else ()

    def prepare(self, value: Any) -> tuple[Any, ...]:
        """Every attribute's value checked by its protocol, in attribute order."""
        names = self.params.names
        if type(value) is not dict and not isinstance(value, Mapping):  # (a dict skips the ABC check's cost)
            raise refuse_type(f"multi values must be a mapping {{name: value}} of the attributes {list(names)}, "
                              f"got {type(value).__name__}", value, "object")
        if len(value) == len(names):  # the common case in one pass; any problem: the checks below name it
            try:
                return tuple([prepare(value[name]) for name, prepare in self._prepares])
            except (KeyError, TypeError, ValueError):
                pass
        if missing := [n for n in names if n not in value]:
            raise RefusalValueError(f"multi value is missing attributes {missing} (every report needs all of "
                                    f"{list(names)})", "missing_attributes", attributes=missing)
        if extra := [k for k in value if k not in names]:
            raise RefusalValueError(f"multi value has unknown attributes {[str(k) for k in extra][:5]} "
                                    f"(the attributes are {list(names)})", "unknown_attributes",
                                    attributes=sorted(str(k) for k in extra))
        out = []
        for name, part in zip(names, self._parts, strict=True):
            try:
                out.append(part.prepare(value[name]))
            except Refusal as exc:  # the attribute's own refusal, naming the attribute
                raise exc.restated(f"attribute {name!r}: {exc}", attribute=name) from None
        return tuple(out)

    def randomize(self, prepared: tuple[Any, ...]) -> Report:
        pr = self.params
        if pr.mode == "split":
            payload: dict[str, PayloadValue] = {}
            for (draw, names), x in zip(self._payloads, prepared, strict=True):
                for k, v in draw(x).items():
                    payload[names[k]] = v
            return self._report(payload)
        j = self._rng.randbelow(pr.d)
        template, draw, names = self._samples[j]
        payload = template.copy()  # "attr", then every field in schema order (the others' zeros)
        for k, v in draw(prepared[j]).items():
            payload[names[k]] = v
        return Report.trusted(self._protocol, self._fp, payload)  # self._report inlined: SMP's per-report path

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of ``{name: array}`` (each array as its protocol's ``encode_batch`` takes it:
        indices for the fixed-domain ones, numbers for the numeric ones); see :mod:`ldp.batch.multi`."""
        from ldp.batch.multi import multi_encode_batch  # numpy, loaded only here

        return self._batch(multi_encode_batch(self.params, self._parts, values, rng))
