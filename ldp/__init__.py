"""ldp: telemetry under local differential privacy.

Client code imports :mod:`ldp.encoders` (standard library, mmh3 and bitarray only).
Server and simulation code imports :mod:`ldp.decoders` and :mod:`ldp.simulation` (numpy).
This package root imports nothing heavy so that clients stay light.

The library logs under the ``ldp`` logger and never configures logging: a :class:`logging.NullHandler`
keeps an app that configured none from seeing our records on stderr through logging's last resort
(an ``upload stopped`` warning after the app caught :class:`~ldp.client.uploader.UploadError`, say).
"""

import logging

from ldp import _moved

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())
_moved.install()  # the import paths of 0.1 that moved (ldp.accountant, ...), for one release
__getattr__ = _moved.module_getattr

__all__ = ["__version__"]
