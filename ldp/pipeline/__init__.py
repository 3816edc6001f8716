"""What the collection pipeline's stages share, below all of them: the objects one stage writes and the next reads,
and the rules their bytes follow. The ingest service (:mod:`ldp.ingest`) and the shuffler (:mod:`ldp.shuffler`) both
import from here and never from each other.

* :mod:`ldp.pipeline.chunks` — a replica's chunk (its batches with ids and arrival windows) and its key;
* :mod:`ldp.pipeline.shuffle` — a segment's lines in a uniformly random order, and a closed segment's name;
* :mod:`ldp.pipeline.canonical` — the canonical bytes of an upload line;
* :mod:`ldp.pipeline.amplification` — the central guarantee a shuffled segment's anonymity set buys, and how a
  segment's (or a Dask part's) name tells what it is;
* :mod:`ldp.pipeline.status` — the shuffler's status the analysts' readers see (runs set aside).
"""
