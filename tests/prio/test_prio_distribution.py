"""The Prio3 binding as a distribution of its own (issue 83): ``ldp-telemetry-prio`` (``bindings/prio``) holds the one
extension module ``ldp_prio``, for the stable ABI, released with ldp-telemetry's version (the ``prio`` extra asks for
it exactly); ``ldp.prio`` imports it through ``ldp.prio._native``, and without it says the two ways to install it,
which are the lines the README, the extras and the binding's folder really offer."""

from __future__ import annotations

import configparser
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from typing import Any

from prio_support import CRATE, ROOT, binding, missing

import ldp


def _toml(path: Any) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def test_the_binding_is_its_own_distribution_at_ldp_telemetrys_version() -> None:
    own, main, cargo = _toml(CRATE / "pyproject.toml"), _toml(ROOT / "pyproject.toml"), _toml(CRATE / "Cargo.toml")
    assert own["project"]["name"] == "ldp-telemetry-prio"
    assert own["project"]["version"] == ldp.__version__ == cargo["package"]["version"]
    extras = main["project"]["optional-dependencies"]
    assert extras["prio"] == [f"ldp-telemetry-prio=={ldp.__version__}"]
    pulling = [name for name, reqs in extras.items() if any(r.startswith("ldp-telemetry-prio") for r in reqs)]
    assert pulling == ["prio"]  # no other extra (not all, not test) brings the Rust build in
    assert own["project"]["requires-python"] == main["project"]["requires-python"] == ">=3.11"


def test_the_build_is_pinned_locked_stripped_and_abi3() -> None:
    own, cargo = _toml(CRATE / "pyproject.toml"), _toml(CRATE / "Cargo.toml")
    assert all(re.fullmatch(r"[\w-]+==[\d.]+", r) for r in own["build-system"]["requires"])
    assert {r.split("==")[0] for r in own["build-system"]["requires"]} >= {"setuptools", "setuptools-rust"}
    (module,) = own["tool"]["setuptools-rust"]["ext-modules"]
    assert module["target"] == "ldp_prio" and module["binding"] == "PyO3" and module["debug"] is False
    assert module["cargo-manifest-args"] == ["--locked"] and not module.get("optional", False)
    assert own["tool"]["setuptools"]["packages"] == [] and own["tool"]["setuptools"]["py-modules"] == []
    # pyo3 names the module's init function after the function under #[pymodule]: it must be the target's name
    assert re.search(r"#\[pymodule\]\nfn ldp_prio\(", (CRATE / "src" / "lib.rs").read_text())
    assert "abi3-py311" in cargo["dependencies"]["pyo3"]["features"]
    assert cargo["profile"]["release"]["strip"] in ("symbols", True)
    wheel = configparser.ConfigParser()
    wheel.read(CRATE / "setup.cfg")
    assert wheel["bdist_wheel"]["py_limited_api"] == "cp311"


def test_the_sdist_of_ldp_telemetry_carries_the_bindings_source() -> None:
    """No sdist of bindings/prio alone can build (its crate needs ../../clients/rust): ldp-telemetry's carries both."""
    manifest = (ROOT / "MANIFEST.in").read_text()
    for line in ("include bindings/prio/pyproject.toml bindings/prio/setup.cfg", "graft bindings/prio/src",
                 "graft clients/rust/src", "prune bindings/prio/target"):
        assert line in manifest


def test_without_the_binding_the_error_names_both_installs() -> None:
    """Runs whether or not the binding is installed: ``ldp_prio`` is made unimportable in a fresh interpreter (and
    ``ldp.prio._native``, which an editable tree's old in-place build of the binding would stand for)."""
    assert "\nfrom ldp_prio import (\n" in (ROOT / "ldp" / "prio" / "_native.py").read_text()
    done = subprocess.run([sys.executable, "-c",
                           "import sys; sys.modules['ldp_prio'] = sys.modules['ldp.prio._native'] = None\n"
                           "import ldp.prio\n"
                           "assert not ldp.prio.available()\n"
                           "try:\n"
                           "    ldp.prio.Prio3Sum\n"
                           "except ImportError as exc:\n"
                           "    print(exc)\n"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert "ldp-telemetry-prio" in message and "ldp_prio" in message, message
    assert "pip install 'ldp-telemetry[prio]'" in message and "pip install ./bindings/prio" in message, message
    assert "cargo" in message and "Rust 1.89" in message, message
    # the lines it offers are the ones that exist: the extra, the folder, the README's test command installing it
    assert (CRATE / "pyproject.toml").exists()
    assert "prio" in _toml(ROOT / "pyproject.toml")["project"]["optional-dependencies"]
    rust_version = _toml(CRATE / "Cargo.toml")["package"]["rust-version"]
    assert f"Rust {rust_version} or later" in message
    assert re.search(r"^pip install '\.\[test\]' \./bindings/prio && pytest", (ROOT / "README.md").read_text(), re.M)


def test_the_installed_binding_is_one_abi3_module() -> None:
    """Where it is installed (CI: the README's test command, and the wheel in every other Python's venv)."""
    prio = binding()
    try:
        import ldp_prio
    except ImportError as exc:  # ldp.prio found a binding elsewhere: an editable tree's old in-place build
        missing(f"ldp.prio works, but not through ldp-telemetry-prio ({exc}): pip install ./bindings/prio")
    import ldp.prio._native as native

    dist = importlib.metadata.distribution("ldp-telemetry-prio")
    assert dist.version == ldp.__version__
    names = [str(f) for f in dist.files or [] if ".dist-info/" not in str(f)]
    assert names == ["ldp_prio.abi3.so"], names
    tags = [line.split(": ", 1)[1] for line in (dist.read_text("WHEEL") or "").splitlines()
            if line.startswith("Tag: ")]
    assert tags and all(t.startswith("cp311-abi3-") for t in tags), tags
    assert ldp_prio.__file__.endswith("ldp_prio.abi3.so")
    for name in native.__all__:  # ldp.prio's names are the module's own objects, its classes named as ldp.prio's
        assert getattr(prio, name) is getattr(ldp_prio, name) is getattr(native, name)
    assert prio.Prio3Count.__module__ == "ldp.prio"
