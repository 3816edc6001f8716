//! `ldp_prio`: the `prio` crate's Prio3 VDAFs as Python classes, VDAF draft 18 (prio 0.18.1) and, beside it, VDAF
//! draft 08 (prio 0.16.8, renamed `prio08`: the draft every deployed DAP client speaks), for the aggregators of `ldp`'s
//! two-aggregator mode (sharding too, for simulations and test-vector replays). The extension module of its own
//! distribution, `ldp-telemetry-prio` (`pyproject.toml` beside this crate), so that an install of `ldp-telemetry`
//! without it carries no Rust; `ldp.prio` imports it (through `ldp.prio._native`) and is its Python face.
//!
//! Every operation is a crate's own (draft 18: `Client::shard`, `TestVectorClient::shard_with_random` for given
//! randomness, `Aggregator::verify_init`, `verifier_shares_to_message`, `verify_next`; draft 08: `Client::shard`,
//! `Aggregator::prepare_init`, `prepare_shares_to_prepare_message`, `prepare_next`; both: `Aggregatable`,
//! `Collector`); this crate only moves bytes and integers across, checks what Python hands it (lengths, ranges, which
//! VDAF and draft a share belongs to) and turns every refusal into `ldp.errors.PrioError` naming the VDAF and the
//! operation. The leader's door asks each share's exact length and whether bytes decode as one (`lengths.rs`: the
//! crate's `shard` and its decoding). The Python face, and why this is pyo3 built by setuptools-rust as a
//! distribution of its own, is `ldp/prio/__init__.py`.
//!
//! The layers: `backend.rs` is the trait over the drafts (what the binding asks of one crate's Prio3), implemented
//! once per crate version, generically over the four types, by `draft18.rs` and `draft08.rs` (thin adapters: decode,
//! the crate's call, encode); `spec.rs` is each type as Python sees it (measurement and result), `params.rs` a VDAF's
//! identity and the constructors' rules (the draft, draft 08's empty context string and `bits`); `vdaf.rs` every
//! operation once over any backend, `batch.rs` the aggregators' jobs, `lengths.rs` the door's checks; `cores.rs` and
//! `classes.rs` the Python classes, each holding the core of its draft; `shares.rs` the states and shares, one
//! representation for both drafts (the fields are the same primes). The crate 0.16.8's own vector test,
//! sharding included, is `tests/vectors_08.rs` (`cargo test --locked --no-default-features --test vectors_08`).
//!
//! DAP-09 reports and HPKE (`HpkeConfig`, `HpkeKeypair`, `DapReport`, `seal_report`, `open_input_share`,
//! `hpke_seal`, `hpke_open`) are the native client's (`ldp_client::dap`, a path dependency on `clients/rust`), so
//! that devices and aggregators share one implementation of the upload encoding and the sealing.
//!
//! Poplar1 (VDAF draft 18 §8: heavy hitters, the crate's `experimental` feature) is `poplar1.rs` (the class
//! `Poplar1`: sharding through the native client's `ldp_client::poplar1`, every aggregator and collector step the
//! crate's), `poplar1_shares.rs` (the aggregation parameter, the states and shares it makes) and `poplar1_batch.rs`
//! (the aggregators' jobs, one call per step of a job); `ldp.prio.poplar1` is its Python face.
//!
//! Without the `python` feature (`cargo run --release --no-default-features --example bench_raw`) the crate is
//! empty: the raw benchmark times the `prio` crate alone.
#![cfg(feature = "python")]

mod backend;
mod batch;
mod classes;
mod cores;
mod dap;
mod draft08;
mod draft18;
mod errors;
mod front;
mod front_request;
mod lengths;
mod opens;
mod parallel;
mod params;
mod poplar1;
mod poplar1_batch;
mod poplar1_shares;
mod shares;
mod spec;
mod vdaf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The module `ldp_prio` (imported through `ldp.prio`; its classes name `ldp.prio` as their module, so that they
/// pickle and print as `ldp.prio`'s).
#[pymodule]
fn ldp_prio(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<classes::Prio3Count>()?;
    m.add_class::<classes::Prio3Sum>()?;
    m.add_class::<classes::Prio3SumVec>()?;
    m.add_class::<classes::Prio3Histogram>()?;
    m.add_class::<shares::VerifyState>()?;
    m.add_class::<shares::OutputShare>()?;
    m.add_class::<shares::AggregateShare>()?;
    m.add_class::<dap::HpkeConfig>()?;
    m.add_class::<dap::HpkeKeypair>()?;
    m.add_class::<dap::DapReport>()?;
    m.add_class::<front::HttpFront>()?;
    m.add_class::<front_request::FrontRequest>()?;
    m.add_class::<poplar1::Poplar1>()?;
    m.add_class::<poplar1_shares::AggParam>()?;
    m.add_class::<poplar1_shares::VerifyState>()?;
    m.add_class::<poplar1_shares::OutputShare>()?;
    m.add_class::<poplar1_shares::AggregateShare>()?;
    m.add_function(wrap_pyfunction!(dap::encode_hpke_config_list, m)?)?;
    m.add_function(wrap_pyfunction!(dap::decode_hpke_config_list, m)?)?;
    m.add_function(wrap_pyfunction!(dap::seal_report, m)?)?;
    m.add_function(wrap_pyfunction!(dap::open_input_share, m)?)?;
    m.add_function(wrap_pyfunction!(opens::open_input_shares, m)?)?;
    m.add_function(wrap_pyfunction!(dap::hpke_seal, m)?)?;
    m.add_function(wrap_pyfunction!(dap::hpke_open, m)?)?;
    m.add_function(wrap_pyfunction!(parallel::batch_threads, m)?)?;
    m.add_function(wrap_pyfunction!(parallel::set_batch_threads, m)?)?;
    // draft 18's, the default draft's (as before drafts were a parameter); each object's own: its `verify_key_size`
    m.add("PRIO_VERSION", <draft18::V18<spec::CountSpec> as backend::Backend>::CRATE)?;
    m.add("VDAF_DRAFT", 18)?;
    m.add("VERIFY_KEY_SIZE", draft18::SEED)?;
    m.add("NONCE_SIZE", backend::NONCE_SIZE)?;
    m.add("VDAF_DRAFTS", PyTuple::new(m.py(), params::DRAFTS)?)?;
    let versions = PyDict::new(m.py());
    versions.set_item(8, <draft08::V08<spec::CountSpec> as backend::Backend>::CRATE)?;
    versions.set_item(18, <draft18::V18<spec::CountSpec> as backend::Backend>::CRATE)?;
    m.add("PRIO_VERSIONS", versions)?;
    Ok(())
}
