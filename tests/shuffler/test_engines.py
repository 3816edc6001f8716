"""Every shuffle engine answers the :class:`~ldp.shuffler.engine.Engine` protocol (issue 70, item 4): the members
the run calls, with the parameters it passes, declared once and checked here for each engine instead of probed."""

from __future__ import annotations

import inspect

import pytest

from ldp.shuffler.engine import ENGINES, Engine
from ldp.shuffler.local_engine import LocalEngine

MEMBERS = ("__enter__", "__exit__", "prune", "plan_inputs", "drop_staging", "__call__")


def engines() -> list[type]:
    out: list[type] = [LocalEngine]
    try:
        from ldp.shuffler.dask_engine import DaskEngine
    except ImportError:  # the dask extra missing: its engine is not there to check
        return out
    return [*out, DaskEngine]


def _params(fn: object) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@pytest.mark.parametrize("cls", engines(), ids=lambda c: c.__name__)
def test_each_engine_has_every_member_of_the_protocol_with_its_parameters(cls: type) -> None:
    assert cls.engine in ENGINES
    for name in MEMBERS:
        assert callable(getattr(cls, name, None)), f"{cls.__name__} has no {name}"
        assert _params(getattr(cls, name)) == _params(getattr(Engine, name)), f"{cls.__name__}.{name}"


def test_the_check_catches_an_engine_that_lacks_a_member() -> None:
    class Half:
        engine = "local"

        def prune(self, before: float) -> None: ...

    with pytest.raises(AssertionError, match="no __enter__|has no"):
        test_each_engine_has_every_member_of_the_protocol_with_its_parameters(Half)


def test_an_unknown_engine_is_refused() -> None:
    from ldp.shuffler.stage import open_engine

    with pytest.raises(ValueError, match="engine must be one of local, dask"):
        open_engine("spark", None, "demo", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a scheduler only with 'dask'"):
        open_engine("local", None, "demo", None, "tcp://x:1")  # type: ignore[arg-type]
