"""What every protocol's parameters are, whatever the protocol (re-exported by :mod:`ldp.encoders.base`, whose
:class:`~ldp.encoders.base.ProtocolParams` adds the questions the rest of the package asks a protocol): the name and
parameters' meanings it declares, the checks every parameter set passes, its dict form and fingerprint, and the
check that a report was made with it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ldp.encoders.base_checks import BASE_RULES
from ldp.encoders.base_fields import COMMON_PARAMS, ParamInfo
from ldp.errors import RefusalTypeError, RefusalValueError
from ldp.reports import MAX_LINE, Field, Report, fingerprint, max_line_bytes, validate_report

if TYPE_CHECKING:
    from ldp.privacy.cost import PrivacyCost

__all__ = ["ParamsRecord", "MAX_AGGREGATE_CELLS"]

_R = TypeVar("_R", bound="ParamsRecord")

MAX_AGGREGATE_CELLS = 1 << 28
"""Counters a server aggregate of one metric may hold (2 GiB of int64): parameters needing more are refused."""


class ParamsRecord:
    """The base of :class:`~ldp.encoders.base.ProtocolParams`: a protocol's frozen parameter dataclass as a record
    (its ``protocol`` name, what each parameter means and the refusals it may raise, the checks that its reports can
    be collected, its dict form and fingerprint)."""

    protocol: ClassVar[str]
    refusal_rules: ClassVar[Mapping[str, str]] = {}
    """The ``rule`` of each ``param_relation`` refusal and the ``limit`` of each ``param_limit`` refusal this class's
    own checks raise, with its meaning (docs/conformance.md lists them); besides, any protocol may raise those of
    :data:`~ldp.encoders.base_checks.BASE_RULES`."""

    param_info: ClassVar[Mapping[str, ParamInfo]] = {}
    """What each of this class's own parameters means and its range checks (:mod:`ldp.encoders.base_fields`); a
    parameter not declared here or in a base class takes :data:`~ldp.encoders.base_fields.COMMON_PARAMS`' entry."""

    @classmethod
    def info_of(cls, name: str) -> ParamInfo:
        """The :class:`~ldp.encoders.base_fields.ParamInfo` of parameter ``name``: the class's (or a base's)
        :attr:`param_info`, else the common one; ``KeyError`` when neither declares it."""
        for klass in cls.__mro__:
            declared: Mapping[str, ParamInfo] = vars(klass).get("param_info", {})
            if name in declared:
                return declared[name]
        return COMMON_PARAMS[name]

    @classmethod
    def declared_rules(cls) -> dict[str, str]:
        """Every ``rule`` and ``limit`` a refusal of these parameters may carry: :data:`BASE_RULES` and the
        :attr:`refusal_rules` of the class and its bases."""
        out = dict(BASE_RULES)
        for klass in reversed(cls.__mro__):
            out.update(vars(klass).get("refusal_rules", {}))
        return out

    if TYPE_CHECKING:  # what each subclass defines, as a field, a property or a cached_property
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]  # each subclass is a dataclass

        @property
        def schema(self) -> tuple[Field, ...]: ...

        @property
        def privacy_cost(self) -> PrivacyCost: ...

        @property
        def domain_size(self) -> int | None:
            """``None`` for an open-domain protocol (the sketches, RAPPOR, SFP: any string)."""

        @property
        def aggregate_cells(self) -> int: ...

    def check_collectable(self) -> None:
        """``ValueError`` unless reports of these parameters can be uploaded and aggregated: every
        upload line within ``MAX_LINE`` bytes (servers reject longer ones as ``too_large``, after
        the client has spent its budget on them) and the aggregate within ``MAX_AGGREGATE_CELLS``."""
        line = max_line_bytes(self.protocol, self.schema)
        if line > MAX_LINE:
            raise RefusalValueError(
                f"{self.protocol} reports of these parameters take up to {line:,} bytes as an upload line, over the "
                f"{MAX_LINE:,}-byte limit of every server job: all would be rejected", "param_limit",
                limit="line_bytes", got=line, max=MAX_LINE)
        cells = self.aggregate_cells
        if cells > MAX_AGGREGATE_CELLS:
            raise RefusalValueError(
                f"the {self.protocol} aggregate of these parameters needs {cells:,} counters "
                f"({cells * 8 / 2**30:.1f} GiB), over the limit of {MAX_AGGREGATE_CELLS:,} (2 GiB)", "param_limit",
                limit="aggregate_cells", got=cells, max=MAX_AGGREGATE_CELLS)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of the parameters (tuples become lists)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_dict(cls: type[_R], d: Mapping[str, Any]) -> _R:
        """The parameters of :meth:`to_dict`'s dict (lists become tuples); ``ValueError`` on unknown names."""
        fields = dataclasses.fields(cls)
        if unknown := set(d) - {f.name for f in fields}:
            raise RefusalValueError(f"unknown {cls.__name__} parameters: {sorted(unknown)}", "unknown_params",
                                    params=sorted(map(str, unknown)))
        required = [f.name for f in fields if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]
        if missing := [name for name in required if name not in d]:
            raise RefusalTypeError(f"missing {cls.__name__} parameters: {missing}", "missing_params", params=missing)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})

    @cached_property
    def fingerprint(self) -> str:
        """16 hex digits identifying protocol + parameters (see :func:`ldp.reports.fingerprint`)."""
        return fingerprint(self.protocol, self.to_dict())

    def validate(self, report: Report) -> None:
        """Raise :class:`ldp.reports.ReportError` unless ``report`` was made with these parameters."""
        validate_report(report, self.protocol, self.fingerprint, self.schema)
