//! DAP's upload encoding (feature `prio`): a Prio3 measurement as the [`Report`] a two-aggregator deployment's
//! leader accepts, each input share sealed with HPKE (RFC 9180) to its aggregator's key.
//!
//! **The draft: DAP-09** (`draft-ietf-ppm-dap-09`). It is what the newest published `janus_messages` crate (0.7.x,
//! Janus 0.7: the reference implementation's message definitions, used to check this module) speaks, so reports
//! from this crate decode and open in an independent implementation; later drafts have no published decoder to
//! check against yet. DAP frames every VDAF message as opaque bytes, so the public share and input shares of
//! [`crate::prio3`] travel in DAP-09's envelope unchanged, of either draft: DAP-09 itself names VDAF-08, which a
//! client of [`VdafDraft::Draft08`](crate::prio3::VdafDraft::Draft08) shards (what Janus 0.7 and the other deployed
//! DAP-09 aggregators run), while this deployment's own aggregators run draft 18, the default; the builder takes
//! the client of either. A draft 08 client has no [`ReportBuilder::build_with_random`] (its sharding randomness is
//! drawn inside prio 0.16.8).
//!
//! ```
//! use ldp_client::dap::{HpkeKeypair, HpkeSuite, ReportBuilder};
//! use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};
//!
//! # let leader_config = HpkeKeypair::generate(1, HpkeSuite::DEFAULT)?.config().clone();
//! # let helper_config = HpkeKeypair::generate(2, HpkeSuite::DEFAULT)?.config().clone();
//! let task_id = [7u8; 32];
//! let client = Prio3Client::new(Prio3Type::histogram(4), &task_id)?;
//! // Each aggregator's HpkeConfig, from its /hpke_config (HpkeConfigList::decode(..)?.first_supported()).
//! let builder = ReportBuilder::new(client, task_id, leader_config, helper_config)?.with_time_precision(3600)?;
//! let report = builder.build(&Measurement::Histogram(2), 1_700_000_123)?;
//! assert_eq!(report.metadata.time, 1_699_999_200); // rounded down to the hour
//! let body = report.encode()?; // PUT to {leader}/tasks/{task-id}/reports as application/dap-report
//! # Ok::<(), ldp_client::Error>(())
//! ```
//!
//! **What a report is** (DAP-09 §4.4.2): `report_id` (16 random bytes, which is also the VDAF nonce) and `time`
//! (seconds since the epoch, rounded down to the task's time precision so that it does not single a device out);
//! the public share; and for each aggregator a `PlaintextInputShare` (no extensions; the payload its VDAF input
//! share) sealed with `SealBase(pk, "dap-09 input share" ‖ 0x01 ‖ role, aad, plaintext)`, `role` 0x02 for the
//! leader and 0x03 for the helper, `aad` the `InputShareAad`: the task ID, the report's metadata and its public
//! share. An aggregator that opens its share with another task, report ID, time or public share fails: the
//! metadata cannot be swapped between reports.
//!
//! **Randomness**: [`ReportBuilder::build`] draws the report ID, the sharding randomness and each seal's ephemeral
//! key material from the OS generator at each call (fork-safe); [`ReportBuilder::build_with_random`] takes them
//! from the caller, for tests only.
//!
//! Layout: the aggregators and the draft's constants here; DAP-09's messages (`messages`), sealing and opening input
//! shares (`input_share`), the [`ReportBuilder`] (`builder`), a task's public file as a device reads it
//! (`task_file`: [`TaskFile`], [`AnyTaskFile`]; a Poplar1 task's, `poplar1_task`); the encoding (`codec`) and HPKE (`hpke`).

mod builder;
mod codec;
mod hpke;
mod input_share;
mod messages;
#[cfg(feature = "poplar1")]
mod poplar1_builder;
#[cfg(feature = "poplar1")]
mod poplar1_task;
mod task_file;

use std::fmt;

pub use self::builder::ReportBuilder;
#[cfg(feature = "c-api")]
pub(crate) use self::builder::{DapBuilder, ReportVdaf};
pub use self::hpke::{
    open, seal, seal_with_ikm, HpkeCiphertext, HpkeConfig, HpkeConfigList, HpkeKeypair, HpkeSuite, AEAD_AES_128_GCM,
    AEAD_AES_256_GCM, AEAD_CHACHA20_POLY1305, KDF_HKDF_SHA256, KDF_HKDF_SHA512, KEM_P256_HKDF_SHA256,
    KEM_P521_HKDF_SHA512, KEM_X25519_HKDF_SHA256,
};
pub use self::input_share::{input_share_aad, input_share_info, open_input_share, seal_input_shares};
pub use self::messages::{Extension, PlaintextInputShare, Report, ReportMetadata};
#[cfg(feature = "poplar1")]
pub use self::poplar1_builder::Poplar1ReportBuilder;
#[cfg(feature = "poplar1")]
pub use self::poplar1_task::Poplar1TaskFile;
pub use self::task_file::{AnyTaskFile, TaskFile, TaskMembers, TASK_FORMAT};
use crate::prio3::NONCE_LEN;

/// The DAP draft this module speaks: `draft-ietf-ppm-dap-09`.
pub const DRAFT: &str = "draft-ietf-ppm-dap-09";

/// Bytes of a report ID (DAP's `ReportID`), which is also the report's VDAF nonce.
pub const REPORT_ID_LEN: usize = 16;
const _: () = assert!(REPORT_ID_LEN == NONCE_LEN);

/// Bytes of a task ID (DAP's `TaskID`).
pub const TASK_ID_LEN: usize = 32;

/// The aggregator an input share is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregator {
    /// The leader (VDAF aggregator 0, DAP role 0x02): it receives the report.
    Leader,
    /// The helper (VDAF aggregator 1, DAP role 0x03).
    Helper,
}

impl Aggregator {
    /// DAP's role byte: 0x02 for the leader, 0x03 for the helper.
    pub fn role(self) -> u8 {
        match self {
            Aggregator::Leader => 0x02,
            Aggregator::Helper => 0x03,
        }
    }

    /// The VDAF aggregator ID: 0 for the leader, 1 for the helper.
    pub fn index(self) -> usize {
        match self {
            Aggregator::Leader => 0,
            Aggregator::Helper => 1,
        }
    }

    /// `"leader"` or `"helper"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Aggregator::Leader => "leader",
            Aggregator::Helper => "helper",
        }
    }
}

impl fmt::Display for Aggregator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
