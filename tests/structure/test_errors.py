"""One errors module (issue 29): every exception and warning class of ldp is defined in :mod:`ldp.errors`, under
:class:`~ldp.errors.LdpError` or :class:`~ldp.errors.LdpWarning`, keeps its builtin base, and still imports from
the module that raises it."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import warnings
from pathlib import Path
from types import ModuleType

import pytest
from structure.import_graph import PACKAGE, imports_of, modules

import ldp
import ldp.errors as errors
from ldp.errors import LdpError, LdpWarning

OPTIONAL = ("pyarrow", "dask", "distributed", "pandas", "matplotlib", "tqdm", "PIL", "scipy", "sklearn", "ldp_prio")
"""Top-level modules of optional extras: a module that needs an absent one is skipped."""

HOMES = {
    "ldp.privacy.ledger": ["BudgetExceeded", "LedgerError", "LedgerDamagedError", "ClockError"],
    "ldp.privacy.accountant": ["BudgetExceeded", "LedgerError"],
    "ldp.privacy.audit": ["AuditError"],
    "ldp.encoders.base": ["Refusal", "RefusalTypeError", "RefusalValueError"],
    "ldp.client.runtime": ["StateError", "BudgetExceeded", "UploadError"],
    "ldp.client.uploader": ["UploadError"],
    "ldp.client": ["StateError", "BudgetExceeded", "UploadError"],
    "ldp.reports": ["ReportError"],
    "ldp.spec.envelope": ["EnvelopeError"],
    "ldp.spec.schema": ["SpecError"],
    "ldp.decoders.aggregate_file": ["AggregateFormatError"],
    "ldp.decoders.base": ["AggregateFormatError"],
    "ldp.decoders.sfp": ["CandidateLimitError"],
    "ldp.jobs.readers": ["InputError"],
    "ldp.jobs.manifest": ["JobError"],
    "ldp.jobs.job": ["InputChangedError", "JobError"],
    "ldp.ingest.config": ["ConfigError"],
    "ldp.ingest.upload": ["IngestError"],
    "ldp.ingest.segments": ["QueueFull", "WriterClosed"],
    "ldp.ingest.watch": ["FoldBusyError"],
    "ldp.extras": ["MissingExtraError"],
    "ldp.randomness": ["SeededRandomnessWarning"],
    "ldp.regression.mechanisms": ["PrivacyLeakWarning", "ReproductionOnlyWarning"],
    "ldp.regression.noise": ["SeededNoiseWarning"],
    "ldp.regression": ["PrivacyLeakWarning", "ReproductionOnlyWarning", "SeededNoiseWarning"],
}
"""Where each class lived before it moved to ldp.errors (and a few packages that export it): the old paths."""

BUILTIN_BASES = {
    "BudgetExceeded": Exception, "LedgerError": Exception, "LedgerDamagedError": Exception, "ClockError": ValueError,
    "StateError": Exception, "AuditError": RuntimeError, "ReportError": ValueError, "EnvelopeError": ValueError,
    "SpecError": ValueError, "UploadError": Exception, "AggregateFormatError": ValueError,
    "CandidateLimitError": ValueError, "InputError": ValueError, "JobError": ValueError,
    "InputChangedError": ValueError, "ConfigError": ValueError, "IngestError": Exception, "QueueFull": Exception,
    "WriterClosed": Exception, "FoldBusyError": RuntimeError, "MissingExtraError": ImportError,
    "SeededRandomnessWarning": UserWarning, "PrivacyLeakWarning": UserWarning, "ReproductionOnlyWarning": UserWarning,
    "SeededNoiseWarning": UserWarning, "Refusal": Exception, "RefusalTypeError": TypeError,
    "RefusalValueError": ValueError,
}
"""The builtin class each was derived from before the move: ``except`` clauses written against it still catch."""

SUBCLASSES = {"LedgerDamagedError": "LedgerError", "ClockError": "LedgerError", "StateError": "LedgerError",
              "EnvelopeError": "ReportError", "InputChangedError": "JobError", "RefusalTypeError": "Refusal",
              "RefusalValueError": "Refusal"}
"""The hierarchy between them, kept."""


def _import(name: str) -> ModuleType | None:
    """The module, or ``None`` when it needs an optional extra that is not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except ImportError as exc:  # MissingExtraError is one
        if isinstance(exc, errors.MissingExtraError) or (exc.name or "").split(".")[0] in OPTIONAL:
            return None
        raise


def _all_modules() -> list[ModuleType]:
    found = []
    for info in pkgutil.walk_packages(ldp.__path__, "ldp."):
        if info.name.rsplit(".", 1)[-1] == "__main__":  # runs the command line
            continue
        if (module := _import(info.name)) is not None:
            found.append(module)
    return found


def test_every_exception_and_warning_is_defined_in_ldp_errors():
    seen = set()
    for module in _all_modules():
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.split(".")[0] == "ldp":
                assert obj.__module__ == "ldp.errors", f"{module.__name__}.{name} is defined in {obj.__module__}"
                assert issubclass(obj, LdpError | LdpWarning), f"{obj.__name__} is under neither base"
                seen.add(obj)
    defined = {obj for obj in vars(errors).values() if inspect.isclass(obj) and issubclass(obj, BaseException)}
    assert seen <= defined and len(defined) >= 26


def test_no_module_but_ldp_errors_defines_an_exception_class():
    """Read from the source too, so a module that needs an absent extra is checked as well."""
    names = {n for n, obj in vars(errors).items() if inspect.isclass(obj)} | {
        "Exception", "BaseException", "ValueError", "TypeError", "RuntimeError", "ImportError", "KeyError",
        "OSError", "Warning", "UserWarning", "DeprecationWarning", "LookupError", "ArithmeticError"}
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                         for b in node.bases}
                if bases & names or any(b.endswith(("Error", "Exception", "Warning")) for b in bases):
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert not offenders, offenders


def test_bases_and_hierarchy():
    for name, builtin in BUILTIN_BASES.items():
        cls = getattr(errors, name)
        assert issubclass(cls, builtin), name
        assert issubclass(cls, LdpWarning if issubclass(builtin, Warning) else LdpError), name
    for name, parent in SUBCLASSES.items():
        assert issubclass(getattr(errors, name), getattr(errors, parent)), name
    assert set(BUILTIN_BASES) <= set(errors.__all__)


def test_the_module_docstring_draws_every_class_under_its_parents():
    """The tree in ``ldp.errors``' docstring is the page a user reads: each class on it once, indented under its
    ldp parent, with its builtin bases named beside it."""
    drawn: dict[str, tuple[int, list[str]]] = {}
    for line in (errors.__doc__ or "").splitlines():
        if line.startswith("    Ldp"):  # a root: "LdpError (Exception)"
            name, base = line.split()
            depth, names = 0, [name, base.strip("()")]
        elif "── " in line:
            depth = line.index("── ")
            names = [n.strip() for n in line.split("── ", 1)[1].split("  ", 1)[0].split(",")]
        else:
            continue
        assert names[0] not in drawn, f"{names[0]} is drawn twice"
        drawn[names[0]] = (depth, names[1:])
    classes = {n: c for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, BaseException)}
    assert set(drawn) == set(classes), set(drawn) ^ set(classes)
    parents: list[tuple[int, str]] = []
    for name, (depth, builtins) in drawn.items():
        parents = [p for p in parents if p[0] < depth]
        cls = classes[name]
        bases = list(cls.__bases__)
        if parents:
            assert bases.pop(0) is classes[parents[-1][1]], f"{name} is drawn under {parents[-1][1]}"
        assert builtins == [b.__name__ for b in bases], f"{name}: bases {cls.__bases__}"
        parents.append((depth, name))


@pytest.mark.parametrize("module_name", sorted(HOMES))
def test_old_import_paths_give_the_same_class(module_name):
    module = _import(module_name)
    if module is None:
        pytest.skip(f"{module_name} needs an optional extra")
    for name in HOMES[module_name]:
        assert getattr(module, name) is getattr(errors, name), f"{module_name}.{name}"
        if hasattr(module, "__all__"):
            assert name in module.__all__, f"{name} not in {module_name}.__all__"


@pytest.mark.parametrize("exc", [
    errors.ClockError("a broken clock"), errors.ReportError("bad_value", "x"), errors.EnvelopeError("bad_spec"),
    errors.SpecError(["metrics: missing"]), errors.AggregateFormatError("corrupt"),
    errors.CandidateLimitError("too many"), errors.InputError("no CSV"), errors.JobError("in use"),
    errors.InputChangedError("changed"), errors.ConfigError("bad key"),
    errors.RefusalValueError("epsilon must be finite and > 0, got -1", "param_range", param="epsilon", got=-1),
], ids=lambda exc: type(exc).__name__)
def test_except_value_error_still_catches(exc):
    with pytest.raises(ValueError) as info:
        raise exc
    assert info.value is exc and isinstance(exc, LdpError)


def test_messages_are_unchanged():
    from ldp.privacy.accountant import PrivacyCost
    from ldp.privacy.ledger import BudgetLedger

    assert str(errors.ReportError("bad_value", "x")) == "bad_value: x"
    assert str(errors.ReportError("truncated")) == "truncated"
    assert str(errors.EnvelopeError("bad_spec", "y")) == "bad_spec: y"
    assert str(errors.SpecError(["a: b", "c: d"], "spec.json")) == "spec.json: 2 error(s):\n  a: b\n  c: d"
    assert str(errors.IngestError(413, "too_large", "body")) == "413 too_large: body"
    one, two = PrivacyCost(1.0), PrivacyCost(2.0)
    assert str(errors.BudgetExceeded(BudgetLedger.ALL, "window", one, two, two)) == (
        "privacy budget exceeded for all metrics (window): spent ε=2, requested ε=1, cap ε=2")
    assert str(errors.BudgetExceeded("m", "lifetime", one, one, one, index=3)) == (
        "privacy budget exceeded for metric 'm' (lifetime) at charge 3 of a batch (nothing of the batch was "
        "charged): spent ε=1, requested ε=1, cap ε=1")
    with pytest.raises(ValueError, match="unknown envelope rejection reason"):
        errors.EnvelopeError("no_such_reason")


def test_ldp_errors_imports_nothing_of_ldp():
    """Only standard library at run time (its ``TYPE_CHECKING`` imports are annotations)."""
    path = PACKAGE / "errors.py"
    assert imports_of("ldp.errors", path, set(modules())) == []
    assert Path(errors.__file__).read_text() == path.read_text()  # CI imports an installed copy
