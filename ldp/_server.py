"""Importing this module checks that the ``server`` extra is installed (:mod:`ldp.extras`).

Every server-side package and module (decoders, batch kernels, server jobs, simulation, planner,
comparison, demo, regression) imports it first, so a client-only install says which extra to
install instead of failing deep inside with a bare ``ModuleNotFoundError``.
"""

from ldp.extras import require_extra

require_extra("this part of ldp (decoders, server jobs, simulation, planner, regression)")
