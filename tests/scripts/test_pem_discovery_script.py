"""simulations/pem_discovery.py runs end to end on a tiny setting (PEM only, synthetic words)."""

import sys

from support import ROOT

SIM = ROOT / "simulations"


def test_pem_discovery_script_runs(tmp_path, capsys):
    sys.path.insert(0, str(SIM))
    try:
        import pem_discovery
    finally:
        sys.path.remove(str(SIM))
    assert pem_discovery.main(["--ns", "30000", "--epsilons", "6", "--reps", "1", "--no-sfp", "--words",
                               "english-like", "--vocab", "300", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "pem" in out and (tmp_path / "summary.csv").exists()
    rows = (tmp_path / "results.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[0].startswith("method,n,epsilon")
