"""ldp.display.progress: a tqdm bar on a terminal, nothing otherwise; the long commands use it."""

import re
import sys

import pytest

import ldp.demo
import ldp.display.progress
from ldp.cli.command import main
from ldp.display.progress import NoProgress, iterate, progress, wanted
from ldp.encoders import GRRParams
from ldp.simulation.collect import accuracy, make_population


@pytest.fixture
def tty(monkeypatch):
    """Make stderr (captured by pytest) count as a terminal."""
    monkeypatch.setattr(ldp.display.progress, "_stderr_is_terminal", lambda: True)


def test_off_when_stderr_is_not_a_terminal(capsys):
    assert not wanted(None)  # pytest captures stderr: not a terminal
    bar = progress(10, "work")
    assert isinstance(bar, NoProgress) and not bar
    with bar as b:
        b.update(3)
        b.set_postfix_str("x")
    assert list(iterate(range(4), desc="work")) == [0, 1, 2, 3]
    assert capsys.readouterr().err == ""


def test_off_when_disabled_even_on_a_terminal(tty, capsys):
    assert wanted(None) and not wanted(False)
    assert isinstance(progress(10, "work", enabled=False), NoProgress)
    assert list(iterate("abc", desc="work", enabled=False)) == ["a", "b", "c"]
    assert capsys.readouterr().err == ""


def test_tqdm_bar_on_a_terminal(tty, capsys):
    tqdm = pytest.importorskip("tqdm")
    with progress(3, "work") as bar:
        assert isinstance(bar.bar, tqdm.tqdm) and bar
        bar.update(3)
    assert list(iterate(range(5), desc="counting", unit="step")) == list(range(5))
    err = capsys.readouterr()
    assert "work" in err.err and "counting" in err.err and "step" in err.err
    assert err.out == ""  # bars never touch stdout


def test_enabled_true_without_a_terminal(capsys):
    pytest.importorskip("tqdm")
    assert list(iterate([1, 2], desc="forced", enabled=True)) == [1, 2]
    assert "forced" in capsys.readouterr().err


class _Shell:
    def __init__(self, config):
        self.config = config


@pytest.mark.parametrize("shell, notebook", [(_Shell({"IPKernelApp": {}}), True),  # Jupyter
                                             (_Shell({"TerminalIPythonApp": {}}), False),  # plain IPython
                                             (None, False)])  # IPython imported, no shell
def test_a_notebook_gets_a_bar_without_a_terminal(monkeypatch, shell, notebook):
    fake = type(sys)("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert ldp.display.progress.in_notebook() is notebook
    assert wanted(None) is notebook  # stderr is pytest's capture: not a terminal


def test_no_ipython_loaded_is_no_notebook(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not ldp.display.progress.in_notebook()


def test_the_bar_is_tqdms_automatic_front_end(monkeypatch):
    """In a notebook tqdm.auto is the widget bar; here it is whatever tqdm.auto names, never tqdm.std directly."""
    made = []

    class FakeBar:
        def __init__(self, **options):
            made.append(options)

        def update(self, n=1):
            pass

        def close(self):
            pass

    fake_auto = type(sys)("tqdm.auto")
    fake_auto.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake_auto)
    with progress(3, "work", enabled=True) as bar:
        assert isinstance(bar.bar, FakeBar)
    assert made and made[0]["desc"] == "work"


def test_no_tqdm_no_bar_no_error(tty, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # (and tqdm.auto, if an earlier test loaded it)
    assert isinstance(progress(5, "work", enabled=True), NoProgress)
    assert list(iterate(range(3), desc="work", enabled=True)) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_accuracy_shows_trials(tty, capsys):
    pytest.importorskip("tqdm")
    params, population = GRRParams(1.0, 4), make_population("uniform", 4)
    quiet = accuracy(params, population, 500, trials=3, rng=1, progress=False)
    assert capsys.readouterr().err == ""
    shown = accuracy(params, population, 500, trials=3, rng=1)
    assert "simulate grr" in capsys.readouterr().err
    assert (quiet.mean_estimate == shown.mean_estimate).all()  # the bar changes no result


@pytest.fixture
def small_demo(monkeypatch):
    monkeypatch.setitem(ldp.demo.SIZES, "quick", {"emoji": 2000, "words": 20_000, "regression": 2000})


def _untimed(text: str) -> str:
    return re.sub(r"\(\d+(\.\d+)? m?s\)", "(… s)", text)


def test_demo_stdout_is_unchanged_by_the_bar(small_demo, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    argv = ["demo", "--quick", "--n", "50", "--seed", "5"]
    assert main(argv) == 0
    plain = capsys.readouterr()
    assert plain.err == ""  # stderr not a terminal: no bar
    monkeypatch.setattr(ldp.display.progress, "_stderr_is_terminal", lambda: True)
    assert main(argv) == 0
    barred = capsys.readouterr()
    assert "demo" in barred.err and "section" in barred.err
    assert _untimed(barred.out) == _untimed(plain.out)
    assert main(["-q", *argv]) == 0  # ldp -q: no bar, even on a terminal
    quiet = capsys.readouterr()
    assert quiet.err == "" and _untimed(quiet.out) == _untimed(plain.out)
