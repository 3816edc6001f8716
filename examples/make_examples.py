"""Write the example input files of the README and docs, from fixed seeds (same bytes on every run).

    python examples/make_examples.py            # rewrites the files beside this script
    python examples/make_examples.py OUT_DIR    # writes them into OUT_DIR instead

* ``rappor/params.csv``, ``rappor/counts.csv``, ``rappor/map.csv``: a RAPPOR collection of 20,000
  clients in Google's file formats, for ``ldp rappor-decode --params ... --counts ... --map ...``.
  The true counts are in ``rappor/truth.csv`` (the map also lists candidates nobody holds).
* ``reports.jsonl``: upload envelopes of 200 simulated devices for the spec ``collection.json``
  (one report per metric each, and two damaged lines), for ``ldp fold``.

``tests/docs/test_examples.py`` regenerates them and checks the bytes, so the files cannot go stale.
Needs the ``server`` extra (numpy).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap
from ldp.encoders.rappor import RapporEncoder, RapporParams
from ldp.jobs.formats import write_jsonl
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec
from ldp.spec.envelope import Envelope

HERE = Path(__file__).resolve().parent
SEED = 20240517
RAPPOR = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=32, p=0.5, q=0.75, f=0.5)
HOLDERS = {f"www.site{i}.example": 8000 // i for i in range(1, 9)}  # 8 sites, Zipf-like: 8000, 4000, ...
NOBODY = [f"www.unused{i}.example" for i in range(1, 5)]  # candidates held by no client
DEVICES = 200
WINDOW = 20000  # the day (window index) of the uploads
DAMAGED = ['{"spec":"not-a-fingerprint","metric":"dark_mode","window":20000,"report":{}}',
           '{"spec": truncated']


def rappor_files(out: Path, rng: np.random.Generator) -> list[Path]:
    """Google's params.csv, counts.csv and map.csv of one simulated collection, and the truth."""
    agg = RapporAggregate.simulate(RAPPOR, HOLDERS, rng)
    cmap = CandidateMap.from_candidates(RAPPOR, list(HOLDERS) + NOBODY)
    folder = out / "rappor"
    folder.mkdir(parents=True, exist_ok=True)
    files = {"params.csv": RAPPOR.to_google_csv(), "counts.csv": agg.to_google_counts(),
             "map.csv": cmap.to_google_map(),
             "truth.csv": "value,clients\n" + "".join(f"{k},{v}\n" for k, v in {**HOLDERS,
                                                                                 **dict.fromkeys(NOBODY, 0)}.items())}
    for name, text in files.items():
        (folder / name).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8", newline="\n")
    return [folder / name for name in files]


def upload_file(out: Path, rng: np.random.Generator) -> Path:
    """``DEVICES`` devices' envelopes for ``collection.json``: one report per metric, interleaved."""
    spec = CollectionSpec.load(HERE / "collection.json")
    homepages = (HERE / "homepage_candidates.txt").read_text(encoding="utf-8").split()
    per_metric = []
    for name, metric in spec.metrics.items():
        if isinstance(metric.params, RapporParams):  # the first few home pages of the candidate file
            batch = RapporEncoder(metric.params).encode_batch(rng.integers(0, 4, DEVICES), rng,
                                                              candidates=homepages[:4])
        elif (d := metric.params.domain_size) is not None:  # GRR, RR: value indices, skewed towards the first
            values = rng.choice(d, DEVICES, p=np.arange(d, 0, -1) / (d * (d + 1) / 2))
            batch = get_protocol(metric.protocol).encoder_type(metric.params).encode_batch(values, rng)
        else:
            raise ValueError(f"no example values for metric {name!r} ({metric.protocol})")
        per_metric.append([Envelope(spec.fingerprint, name, WINDOW, r) for r in batch.reports()])
    lines: list[Envelope | str] = [env for device in zip(*per_metric, strict=True) for env in device]
    lines[10:10] = DAMAGED[:1]
    lines[100:100] = DAMAGED[1:]
    path = out / "reports.jsonl"
    write_jsonl(path, lines)
    return path


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else HERE
    rng = np.random.default_rng(SEED)
    written = rappor_files(out, rng) + [upload_file(out, rng)]
    for path in written:
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
