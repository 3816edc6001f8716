//! Nothing: the interoperability tests of `ldp_client`'s DAP-09 reports are in `tests/` (see `tests/janus.rs`).
