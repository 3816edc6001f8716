"""Client-only smoke test, run by .ci/run in a venv made with a plain `pip install .` (no extras).

Every protocol's encoder encodes a value from the OS CSPRNG, and a TelemetryClient records and
lists its outbox, with numpy (and the rest of the server extra) provably absent: not installed,
and not imported. The Prio3 binding (its own distribution, ldp-telemetry-prio) is not installed either, and
``ldp.prio`` says how to install it; no compiled module of ``ldp`` is loaded by the client's code. Exits non-zero on
any failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile

for module in ("numpy", "scipy", "sklearn", "ldp_prio"):
    assert importlib.util.find_spec(module) is None, f"{module} is installed in the client-only venv"

from ldp.client.runtime import TelemetryClient  # noqa: E402
from ldp.encoders import (  # noqa: E402
    BinaryRRParams,
    BLHParams,
    BucketGRRParams,
    CmsParams,
    DBitFlipParams,
    DuchiParams,
    GRRParams,
    HcmsParams,
    HRParams,
    HybridParams,
    LGRRParams,
    MemoMeanParams,
    MultiParams,
    OLHParams,
    PiecewiseParams,
    RapporParams,
    SSParams,
)
from ldp.encoders.dbitflip_memo import MemoDBitFlipParams  # noqa: E402
from ldp.encoders.hadamard_block import HRBlockParams  # noqa: E402
from ldp.encoders.histogram import BucketOUEParams  # noqa: E402
from ldp.encoders.pem import PEMParams  # noqa: E402
from ldp.encoders.projective_geometry import HPGParams, PGRParams  # noqa: E402
from ldp.encoders.range_tree import HHParams  # noqa: E402
from ldp.encoders.rappor_ngrams import RapporNgramsParams  # noqa: E402
from ldp.encoders.sfp import SfpParams  # noqa: E402
from ldp.encoders.thresh import ThreshParams  # noqa: E402
from ldp.encoders.unary import LOUEParams, OUEParams, SUEParams  # noqa: E402
from ldp.extras import MissingExtraError  # noqa: E402
from ldp.protocols import client_protocols  # noqa: E402
from ldp.reports import parse_json  # noqa: E402

CASES = {
    "rr": (BinaryRRParams.forced_response(), 1),
    "grr": (GRRParams.from_labels(1.0, ["a", "b", "c"]), "b"),
    "rappor": (RapporParams(16, 2, 8, 0.25, 0.75, 0.5), "https://example.com/"),
    "cms": (CmsParams(4.0, 16, 256), "word"),
    "hcms": (HcmsParams(4.0, 16, 256), "word"),
    "pem": (PEMParams(4.0), "hello"),
    "rappor-ngrams": (RapporNgramsParams(16, 2, 8, 0.25, 0.75, 0.5, 16, 2, 8, 0.25, 0.75, 0.5), "hello"),
    "sfp": (SfpParams(2.0, 2.0, word_num_hashes=16, word_width=256, fragment_num_hashes=16, fragment_width=256),
            "hello"),
    "sue": (SUEParams(1.0, 8), 3),
    "oue": (OUEParams(1.0, 8), 3),
    "blh": (BLHParams(1.0, 8), 3),
    "olh": (OLHParams(1.0, 8), 3),
    "hr": (HRParams(1.0, 8), 3),
    "hr-block": (HRBlockParams(4.0, 100), 42),
    "pgr": (PGRParams(2.0, 1024), 1000),
    "hpg": (HPGParams(6.0, 1024), 1000),
    "ss": (SSParams(1.0, 8), 3),
    "duchi": (DuchiParams(1.0, 0.0, 240.0), 37.5),
    "piecewise": (PiecewiseParams(1.0, 0.0, 240.0), 37.5),
    "hybrid": (HybridParams(1.0, 0.0, 240.0), 37.5),
    "dbitflip": (DBitFlipParams(2.0, (0, 30, 60, 120, 240), d=2), 37.5),
    "bucket-grr": (BucketGRRParams(1.0, (0, 30, 60, 120, 240)), 37.5),
    "bucket-oue": (BucketOUEParams(1.0, (0, 30, 60, 120, 240)), 37.5),
    "hh": (HHParams(1.0, 0.0, 256.0), 37.5),
    "lgrr": (LGRRParams(4.0, 1.0, 3), 1),
    "loue": (LOUEParams(4.0, 1.0, 3), 1),
    "memo-mean": (MemoMeanParams(1.0, 0.0, 240.0), 37.5),
    "memo-dbitflip": (MemoDBitFlipParams(2.0, (0, 30, 60, 120, 240), d=2), 37.5),
    "thresh": (ThreshParams(1.0, 3, labels=("home", "search", "settings")), "search"),
    "multi": (MultiParams(2.0, "sample", (("screen", "grr", {"domain_size": 3}),
                                          ("minutes", "duchi", {"low": 0, "high": 240}))),
              {"screen": 1, "minutes": 30.0}),
}
assert set(CASES) == set(client_protocols()), f"smoke test misses {set(client_protocols()) - set(CASES)}"
for name, (params, value) in CASES.items():
    encoder_type = client_protocols()[name][1]
    line = encoder_type(params).encode(value).to_json()
    assert parse_json(line).protocol == name
    print(f"{name}: {line[:100]}")

spec = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "collection.json")
with tempfile.TemporaryDirectory() as tmp, TelemetryClient(spec, os.path.join(tmp, "state.db")) as app:
    app.record("app_category", "games")
    app.record("dark_mode", True)
    app.record("homepage", "https://example.com/")
    pending = app.pending()
    assert len(pending) == 3 and all(json.loads(item.line)["spec"] for item in pending)
    print(f"TelemetryClient: {len(pending)} envelopes pending, ε spent {app.spent().epsilon:.3f}")

try:
    import ldp.decoders  # noqa: F401
except MissingExtraError as exc:
    assert "pip install 'ldp-telemetry[server]'" in str(exc)
else:
    raise AssertionError("ldp.decoders imported without the server extra")
for module in ("numpy", "scipy", "sklearn"):
    assert module not in sys.modules, f"{module} was imported"
compiled = sorted(name for name, module in sys.modules.items()
                  if name.startswith("ldp.") and not (getattr(module, "__file__", None) or "").endswith(".py"))
assert not compiled, f"the client's code loaded compiled modules of ldp: {compiled}"

import ldp.prio  # noqa: E402  (after the check above: the binding's Python face imports without it)

assert not ldp.prio.available()
try:
    ldp.prio.require()
except MissingExtraError as exc:
    assert "pip install 'ldp-telemetry[prio]'" in str(exc) and "pip install ./bindings/prio" in str(exc), exc
else:
    raise AssertionError("ldp.prio.require() passed without the Prio3 binding")
print("client-only smoke test passed")
