"""What compiled code a client's install carries (issue 83): ldp-telemetry's wheel, which a plain ``pip install .``
installs, holds no native module but the seven optional C kernels of the server side, linked without their debug
information, and never the Prio3 binding, which is a distribution of its own (``ldp-telemetry-prio``,
``bindings/prio``).

Why the C kernels may stay: 0.3 MB in all once stripped (1 % of the client's venv), no runtime dependency, no
toolchain but a C compiler (and left out without one), and no client code loads them (``.ci/client_smoke.py``
checks); moving them out would take a second compiled distribution and changes to the server modules that import
them, for 0.3 MB. What the client's install lost is the Rust library (1.8 MB then, 2.4 MB with VDAF-08) that
needed cargo.

The file list is read from the wheel ``LDP_CLIENT_WHEEL`` names (``.ci/run`` passes the one its client-only install
installs), from the installed ldp-telemetry (the README's test command installs it from this tree: its RECORD is the
wheel's list), and from the build's declaration (``setup.py``, ``pyproject.toml``)."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import struct
import tomllib
import zipfile
from pathlib import Path

import pytest
from support import ROOT

ALLOWED = {"ldp/batch/_foldkernel", "ldp/batch/_lhkernel", "ldp/batch/_emkernel", "ldp/batch/_linekernel",
           "ldp/batch/_sskernel", "ldp/batch/_pgkernel", "ldp/jobs/_synckernel"}
"""The native modules ldp-telemetry may ship: the optional C kernels (``setup.py``), by path without suffix."""
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")


def native_modules(names: list[str]) -> set[str]:
    """The native modules among a distribution's file names, by path without their suffix (``.cpython-311-….so``,
    ``.abi3.so``)."""
    return {name.split(".", 1)[0] for name in names if name.endswith(NATIVE_SUFFIXES)}


def elf_sections(data: bytes) -> set[str] | None:
    """The section names of an ELF file (None for another format): enough to tell whether debug information is in."""
    if data[:4] != b"\x7fELF":
        return None
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    shoff = struct.unpack_from(order + ("Q" if wide else "I"), data, 0x28 if wide else 0x20)[0]
    entsize, count, names_index = struct.unpack_from(order + "HHH", data, 0x3A if wide else 0x2E)

    def header(i: int) -> tuple[int, int, int]:
        at = shoff + i * entsize
        name = struct.unpack_from(order + "I", data, at)[0]
        offset, size = struct.unpack_from(order + ("QQ" if wide else "II"), data, at + (0x18 if wide else 0x10))
        return name, offset, size

    _, table_at, table_size = header(names_index)
    table = data[table_at:table_at + table_size]
    return {table[n:table.index(b"\0", n)].decode() for n, _, _ in map(header, range(count))}


def check_files(files: dict[str, bytes | None]) -> None:
    """The rules on a file list (contents given for the native modules, where they can be read)."""
    names = sorted(files)
    assert native_modules(names) <= ALLOWED, sorted(native_modules(names) - ALLOWED)
    assert not [n for n in names if n.endswith((".c", ".h", ".rs"))], "sources in the wheel"
    for name, data in files.items():
        sections = elf_sections(data) if data is not None and name.endswith(NATIVE_SUFFIXES) else None
        assert sections is None or ".debug_info" not in sections, f"{name} carries its debug information"


def test_the_checks_catch_what_they_are_for() -> None:
    assert native_modules(["ldp/prio/_native.cpython-311-x86_64-linux-gnu.so", "ldp/batch/_lhkernel.abi3.so",
                           "ldp/encoders/grr.py"]) == {"ldp/prio/_native", "ldp/batch/_lhkernel"}
    with pytest.raises(AssertionError, match="ldp/prio/_native"):
        check_files({"ldp/prio/_native.cpython-311-x86_64-linux-gnu.so": None})
    with pytest.raises(AssertionError, match="sources"):
        check_files({"ldp/batch/_foldkernel.c": None})
    with pytest.raises(AssertionError, match="debug information"):
        check_files({"ldp/batch/_lhkernel.cpython-311-x86_64-linux-gnu.so": _tiny_elf([".text", ".debug_info"])})
    check_files({"ldp/batch/_lhkernel.cpython-311-x86_64-linux-gnu.so": _tiny_elf([".text", ".symtab"]),
                 "ldp/encoders/grr.py": None})


def _tiny_elf(sections: list[str]) -> bytes:
    """An ELF64 little-endian header and section table with these names (and the name table's own), nothing else."""
    names = b"\0" + b"".join(s.encode() + b"\0" for s in [*sections, ".shstrtab"])
    count, table_at = len(sections) + 2, 64 + len(names)
    head = bytearray(64)
    head[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", head, 0x28, table_at)
    struct.pack_into("<HHH", head, 0x3A, 64, count, count - 1)
    table, at = bytearray(64), 1  # section 0: the null section
    for s in [*sections, ".shstrtab"]:
        entry = bytearray(64)
        struct.pack_into("<I", entry, 0, at)
        if s == ".shstrtab":
            struct.pack_into("<QQ", entry, 0x18, 64, len(names))
        table += entry
        at += len(s) + 1
    return bytes(head) + names + bytes(table)


def test_the_build_declares_the_c_kernels_only() -> None:
    """setup.py builds the allowed kernels and nothing else (no Rust), linked without their debug information on
    Linux; pyproject.toml asks for no Rust build tool and keeps the kernels' C sources out of the wheel."""
    source = (ROOT / "setup.py").read_text()
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id == "Extension"]
    declared = {call.args[0].value.replace(".", "/") for call in calls if isinstance(call.args[0], ast.Constant)}
    assert declared == ALLOWED and len(calls) == len(ALLOWED)
    tree = ast.parse(source)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported == {"sys", "setuptools", "setuptools.command.build_ext"}, imported  # no setuptools_rust
    setup_call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    assert {k.arg for k in setup_call.keywords} == {"ext_modules", "cmdclass"}  # no rust_extensions
    assert '"-Wl,--strip-debug"' in source and 'cmdclass={"build_ext": StrippedBuildExt}' in source
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["build-system"]["requires"] == ["setuptools>=77"]
    assert {"*.c", "*.h"} <= set(pyproject["tool"]["setuptools"]["exclude-package-data"]["*"])


def test_the_wheel_a_client_installs() -> None:
    """The wheel ``LDP_CLIENT_WHEEL`` names (``.ci/run``: the one the client-only install installs)."""
    path = os.environ.get("LDP_CLIENT_WHEEL")
    if not path:
        pytest.skip("LDP_CLIENT_WHEEL names no wheel (.ci/run sets it for its client-only install)")
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        check_files({n: wheel.read(n) if n.endswith(NATIVE_SUFFIXES) else None for n in names})
    tops = {n.split("/", 1)[0] for n in names}  # the package and its metadata: no top-level module (ldp_prio)
    assert "ldp" in tops and len(tops) == 2 and [t for t in tops if t.startswith("ldp_telemetry-")], tops
    assert native_modules(names), "the wheel has no C kernel: built without a compiler?"


def test_the_installed_distribution() -> None:
    """ldp-telemetry as installed here: from this tree by the README's test command, its RECORD the wheel's list (the
    build's own ``ldp_telemetry.egg-info`` in the tree, found first from the root, lists the sdist's files instead)."""
    installed = [d for d in importlib.metadata.distributions(name="ldp-telemetry") if d.read_text("RECORD")]
    if not installed:
        pytest.skip("ldp-telemetry is not installed from a wheel (the tests run on the source tree)")
    record = [line.rsplit(",", 2)[0] for line in (installed[0].read_text("RECORD") or "").splitlines()]
    files = [name for name in record if name.startswith("ldp/")]
    if not files:
        pytest.skip("ldp-telemetry is installed in editable mode: no file list of a wheel")
    check_files({name: Path(str(installed[0].locate_file(name))).read_bytes() if name.endswith(NATIVE_SUFFIXES)
                 else None for name in files})
