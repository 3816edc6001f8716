"""The test suite, in folders by idea (file names are unique across folders: pytest imports each test file
by its name):

* ``protocols/``: one file (or a few) per protocol family, and the hash family they share;
* ``privacy/``: the accountant and the budget ledger, privacy claims against the exact audit, client randomness;
* ``client/``: the collection spec, the telemetry client and its uploads, logging, imports without numpy;
* ``server/``: the wire format, the aggregation job (formats, folds, hostile inputs), aggregate bytes;
* ``collector/``: ``ldp serve``, ``ldp watch``, the dashboard, and the end-to-end browser test;
* ``cli/``: the ``ldp`` command, its error contract and progress bars;
* ``plan/``, ``simulation/``, ``regression/``: the planner, simulated collections (and local vs central DP),
  central-DP regression;
* ``results/``: result classes and their outputs, consistency post-processing, association analysis;
* ``docs/``: the docs' snippets, the examples, the distribution's name;
* ``scripts/``: the experiment scripts of ``simulations/``;
* ``structure/``: the structure of the package (its import graph, switches over protocol names);
* ``support/``: helpers, imported as ``support`` (``tests/`` is on ``sys.path`` through ``pythonpath`` in
  ``[tool.pytest.ini_options]``); :data:`support.ROOT` is the repository root.

The fixtures here are those that several files need."""

from __future__ import annotations

import fcntl
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.azure_server import Azurite, azurite_server
from support.s3_server import S3Server, s3_server


def _bytecode_outside_the_tree() -> None:
    """Under ``PYTHONDONTWRITEBYTECODE`` (set in some containers) every process of a run compiles from source:
    each xdist worker rewrites and compiles every test module (about 9 of its 14 CPU-seconds of collection), each
    subprocess the modules it imports. The tree stays free of bytecode, as asked, but the run caches it outside, in a
    folder of the system's temporary one that only this user can write (``sys.pycache_prefix``; the workers and
    subprocesses inherit ``PYTHONPYCACHEPREFIX``). Bytecode is checked against its source's time and size, as in
    ``__pycache__``."""
    if not sys.dont_write_bytecode or sys.pycache_prefix:
        return
    prefix = Path(tempfile.gettempdir()) / f"ldp-tests-pycache-{os.getuid()}"
    prefix.mkdir(mode=0o700, exist_ok=True)
    if prefix.is_symlink() or prefix.stat().st_uid != os.getuid():
        return
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


_bytecode_outside_the_tree()


def _one_blas_thread_per_worker() -> None:
    """Under xdist (``-n auto``: a worker per core) each worker's BLAS and OpenMP libraries run one thread. With their
    default of a thread per core, the workers' threads spin against each other: a small factorization took 20
    times its CPU. Set before numpy, scipy and scikit-learn load their libraries (each reads it when loaded), and
    inherited by the tests' subprocesses; a user's own setting is kept. A test of thread limits raises them itself
    (``threadpoolctl.threadpool_limits``)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")


_one_blas_thread_per_worker()


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist with ``--cov``, pytest-cov starts two coverages in each worker: the controller's (its options
    ask for workers) and the worker's own, stacked; pausing the worker's for a ``no_cover`` test resumes the other,
    so the test still ran traced, only slower and into a file nobody reads. The stray one is stopped here (it is
    never saved: the worker's own is what the controller combines), so ``no_cover`` runs untraced as it does
    without xdist."""
    plugin = config.pluginmanager.get_plugin("_cov")
    stray = getattr(plugin, "cov_controller", None)
    if hasattr(config, "workerinput") and type(stray).__name__ == "DistMaster":
        stray.cov.stop()  # type: ignore[union-attr]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: a worker per core and one more. About a sixth of the suite's time is waiting, not computing (real
    deadlines and leases, processes and servers starting, held sockets), so a worker per core left the cores idle that
    long (170 % CPU of 200 on 2 cores); a third worker fills it: 4 min 16 s -> 3 min 56 s on an idle 2-core machine,
    the same CPU time (2026-11-27). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` and ``-n logical`` keep xdist's own count."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses == "logical":
        return None
    affinity = getattr(os, "sched_getaffinity", None)
    return (len(affinity(0)) if affinity else os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the tests marked ``heavy`` (the suite's longest: a statistics battery, a run of the whole
    pipeline) are handed out first, alternately to the workers, and the others after them in their order: a long
    test handed out last would leave the other workers idle until it ends. Every worker sorts its collection alike
    (a stable sort), as xdist requires."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.fixture
def run_ldp(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``run_ldp(*argv)``: ``ldp ARGV`` in this process, returning (exit status, stdout, stderr) as read by
    ``capsys`` (for a module-scoped fixture or a hypothesis test: :func:`support.call_main`)."""
    from ldp.cli.command import main

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv))
        out, err = capsys.readouterr()
        return status, out, err

    return run


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-compatible server (moto in server mode, its own process) for the session: storage, shuffler,
    collector replicas and aggregation over object storage use it."""
    with s3_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture(scope="session")
def azure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """Azurite, the Azure Storage emulator (``azurite-blob``, its own process) for the session: the ``az://`` store
    and everything over it (skipped where it is not installed, failed under ``LDP_REQUIRE_AZURITE=1``)."""
    with azurite_server(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture(scope="session")
def dask_scheduler() -> Iterator[str]:
    """A ``dask.distributed`` LocalCluster for the session (2 worker processes, one thread and 1 GiB each), its
    scheduler's address: the Dask engines' tests share it (each worker process started once per test process, not
    once per module: a cluster takes seconds to start). Skipped without ``distributed``."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit="1GiB",
                                  dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


@pytest.fixture(params=["local", "s3", "az"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A store of :mod:`ldp.storage` of each kind, empty: a folder, a fresh prefix of the session's S3 server, and
    one of its Azurite's container."""
    import time

    from ldp.storage import open_store

    if request.param == "local":
        return open_store(tmp_path / "store")
    if request.param == "az":
        azure = request.getfixturevalue("azure")
        return open_store(f"{azure.container('ldp-stores')}/t{time.monotonic_ns()}", azure.options())
    s3 = request.getfixturevalue("s3")
    return open_store(f"{s3.bucket('ldp-stores')}/t{time.monotonic_ns()}", s3.options())


@pytest.fixture(scope="session")
def statistics_battery(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Any, ...]]:
    """``statistics_battery(name)``: the statistics battery of the registered protocol ``name``, as
    :func:`ldp.protocols.check_statistics.statistics_power` returns it (one row per example: its failures, the
    collections it ran, its power), run once per protocol and test run and shared by the tests that read it (the
    conformance suite's ``statistics`` test and the power test of ``tests/protocols/test_statistics_power.py``): the
    same battery, at the same power and false-alarm levels, asserted on by each. Under xdist the workers share it
    through a file of the run's temporary folder: the first worker to need a protocol runs it under a lock, the others
    wait and read its result. A test that breaks a protocol on purpose runs the battery itself (``check_statistics``),
    never this cached one."""
    from ldp.protocols import get_protocol
    from ldp.protocols.check_statistics import statistics_power

    root = tmp_path_factory.getbasetemp()
    folder = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "statistics-battery"
    folder.mkdir(exist_ok=True)
    runs: dict[str, tuple[Any, ...]] = {}

    def battery(name: str) -> tuple[Any, ...]:
        if name not in runs:
            saved = folder / f"{name}.pickle"
            with open(folder / f"{name}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if saved.exists():
                    runs[name] = pickle.loads(saved.read_bytes())
                else:
                    runs[name] = tuple(statistics_power(get_protocol(name)))
                    saved.with_suffix(".partial").write_bytes(pickle.dumps(runs[name]))
                    saved.with_suffix(".partial").replace(saved)
        return runs[name]

    return battery
