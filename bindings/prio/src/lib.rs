//! `ldp_prio`: the `prio` crate's Prio3 VDAFs (VDAF draft 18) as Python classes, for the aggregators of `ldp`'s
//! two-aggregator mode (sharding too, for simulations and test-vector replays). The extension module of its own
//! distribution, `ldp-telemetry-prio` (`pyproject.toml` beside this crate), so that an install of `ldp-telemetry`
//! without it carries no Rust; `ldp.prio` imports it (through `ldp.prio._native`) and is its Python face.
//!
//! Every operation is the crate's own (`Client::shard`, the crate's `TestVectorClient::shard_with_random` for given
//! randomness, `Aggregator::verify_init`, `verifier_shares_to_message`, `verify_next`, `Aggregatable`, `Collector`);
//! this crate only moves bytes and integers across, checks what Python hands it (lengths, ranges, which VDAF a share
//! belongs to) and turns every refusal into `ldp.errors.PrioError` naming the operation. The leader's door asks each
//! share's exact length and whether bytes decode as one (`lengths.rs`: the crate's `shard` and its decoding). The Python face, and why
//! this is pyo3 built by setuptools-rust as a distribution of its own, is `ldp/prio/__init__.py`.
//!
//! DAP-09 reports and HPKE (`HpkeConfig`, `HpkeKeypair`, `DapReport`, `seal_report`, `open_input_share`,
//! `hpke_seal`, `hpke_open`) are the native client's (`ldp_client::dap`, a path dependency on `clients/rust`), so
//! that devices and aggregators share one implementation of the upload encoding and the sealing.
//!
//! Without the `python` feature (`cargo run --release --no-default-features --example bench_raw`) the crate is
//! empty: the raw benchmark times the `prio` crate alone.
#![cfg(feature = "python")]

mod batch;
mod dap;
mod errors;
mod lengths;
mod shares;
mod vdafs;

use pyo3::prelude::*;

/// The module `ldp_prio` (imported through `ldp.prio`; its classes name `ldp.prio` as their module, so that they
/// pickle and print as `ldp.prio`'s).
#[pymodule]
fn ldp_prio(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<vdafs::Prio3Count>()?;
    m.add_class::<vdafs::Prio3Sum>()?;
    m.add_class::<vdafs::Prio3SumVec>()?;
    m.add_class::<vdafs::Prio3Histogram>()?;
    m.add_class::<shares::VerifyState>()?;
    m.add_class::<shares::OutputShare>()?;
    m.add_class::<shares::AggregateShare>()?;
    m.add_class::<dap::HpkeConfig>()?;
    m.add_class::<dap::HpkeKeypair>()?;
    m.add_class::<dap::DapReport>()?;
    m.add_function(wrap_pyfunction!(dap::encode_hpke_config_list, m)?)?;
    m.add_function(wrap_pyfunction!(dap::decode_hpke_config_list, m)?)?;
    m.add_function(wrap_pyfunction!(dap::seal_report, m)?)?;
    m.add_function(wrap_pyfunction!(dap::open_input_share, m)?)?;
    m.add_function(wrap_pyfunction!(dap::hpke_seal, m)?)?;
    m.add_function(wrap_pyfunction!(dap::hpke_open, m)?)?;
    m.add("PRIO_VERSION", "0.18.1")?;
    m.add("VDAF_DRAFT", 18)?;
    m.add("VERIFY_KEY_SIZE", vdafs::VERIFY_KEY_SIZE)?;
    m.add("NONCE_SIZE", vdafs::NONCE_SIZE)?;
    Ok(())
}
