"""An example protocol from another distribution: k-ary randomized response (Warner 1965, generalized; Wang et al.,
USENIX Security 2017) under the name ``example-krr``, its client half in :mod:`ldp_example_protocol.encoder` and
its server half in :mod:`ldp_example_protocol.aggregate`, declared to ldp by the entry points of pyproject.toml."""
