//! # ldp_client
//!
//! The native client of `ldp`, a toolkit for collecting telemetry under local differential privacy: encoders
//! byte-identical with the Python client (checked against `conformance/vectors`), randomness from the OS generator,
//! a crash-safe privacy-budget ledger, and the upload request `ldp serve` accepts. A C interface
//! (`include/ldp_client.h`) serves C, C++ and Swift apps.
//!
//! See docs/native-client.md for usage from Rust, C and Swift.

#![warn(missing_docs)]
#![deny(unsafe_code)]
// `!(a < b)` is how the checks refuse NaN as Python does (a comparison with NaN is false): kept on purpose.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod audit;
pub mod bytes;
mod client;
mod cost;
#[cfg(feature = "prio")]
pub mod dap;
pub mod encoder;
mod error;
#[cfg(feature = "c-api")]
pub mod ffi;
pub mod json;
pub mod ledger;
pub mod params;
#[cfg(feature = "poplar1")]
pub mod poplar1;
#[cfg(feature = "prio")]
pub mod prio3;
pub mod protocols;
mod pymath;
pub mod pytext;
pub mod random;
mod rational;
pub mod spec;
pub mod upload;
mod value;

pub use client::{batch_id, system_clock, ClientBuilder, Clock, Counts, TelemetryClient, DEFAULT_MAX_OUTBOX_BYTES};
pub use cost::PrivacyCost;
pub use encoder::{envelope_json, Charge, Encoder, EncoderOptions, PayloadValue, Prepared, Protocol, Report};
pub use error::{Error, Refusal, RefusalCode, RefusalKind, Result, ALL_METRICS};
pub use params::ProtocolParams;
pub use serde_json::{json, Value};
pub use spec::{Budget, CollectionSpec, MetricSpec, OtelKind, OtelSource, OtelValue, TrustModel};
