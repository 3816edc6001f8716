"""The shuffler stage between ingestion and analysis: chunks written by ingest service replicas
(:mod:`ldp.pipeline.chunks`) mixed into anonymized segments per arrival window (:mod:`ldp.shuffler.stage`)."""

from ldp.pipeline.chunks import ChunkBatch, chunk_key, decode_chunk, encode_chunk
from ldp.shuffler.stage import ShuffleRun, shuffle_app

__all__ = ["ChunkBatch", "ShuffleRun", "chunk_key", "decode_chunk", "encode_chunk", "shuffle_app"]
