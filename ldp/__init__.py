"""ldp: telemetry under local differential privacy.

Client code imports :mod:`ldp.encoders` (standard library, mmh3 and bitarray only).
Server and simulation code imports :mod:`ldp.decoders` and :mod:`ldp.simulation` (numpy).
This package root imports nothing heavy so that clients stay light.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
