"""Shared by the tests of the experiment scripts in ``simulations/`` (tests/scripts/ and a few others): load a
script as a module (once per session) and read the CSVs it writes."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from support import ROOT


def load_script(stem: str) -> ModuleType:
    """``simulations/<stem>.py`` as the module ``<stem>_script`` (cached in ``sys.modules``)."""
    name = f"{stem}_script"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "simulations" / f"{stem}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while the class is created
    spec.loader.exec_module(mod)
    return mod


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))
