//! DAP-09's messages of an upload: a [`Report`] (its [`ReportMetadata`], the public share and the two sealed input
//! shares) and the [`PlaintextInputShare`] each aggregator opens.

use std::fmt;

use super::codec::{Reader, Writer};
use super::{Aggregator, HpkeCiphertext, REPORT_ID_LEN};
use crate::error::Result;

/// DAP's `ReportMetadata`: `report_id[16] ‖ time u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportMetadata {
    /// The report ID: 16 random bytes, the VDAF nonce.
    pub report_id: [u8; REPORT_ID_LEN],
    /// Seconds since the Unix epoch, rounded down to the task's time precision.
    pub time: u64,
}

impl ReportMetadata {
    pub(super) fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(ReportMetadata { report_id: r.array("report_id")?, time: r.u64()? })
    }

    pub(super) fn write(&self, w: &mut Writer) {
        w.bytes(&self.report_id);
        w.u64(self.time);
    }
}

/// DAP's `Report` (§4.4.2): `ReportMetadata ‖ public_share opaque<0..2^32-1> ‖ leader HpkeCiphertext ‖ helper
/// HpkeCiphertext`, the body of an upload (media type `application/dap-report`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Report {
    /// The report ID and time.
    pub metadata: ReportMetadata,
    /// The VDAF public share (empty for Prio3Count and Prio3Sum).
    pub public_share: Vec<u8>,
    /// The leader's `PlaintextInputShare`, sealed to the leader.
    pub leader_encrypted_input_share: HpkeCiphertext,
    /// The helper's `PlaintextInputShare`, sealed to the helper.
    pub helper_encrypted_input_share: HpkeCiphertext,
}

impl Report {
    /// The media type of an encoded report in an upload.
    pub const MEDIA_TYPE: &'static str = "application/dap-report";

    /// Reads an encoded report (all of `bytes`; trailing bytes are refused), an [`Error::Value`](crate::Error::Value)
    /// saying what is wrong. The ciphertexts are not opened.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "a Report");
        let metadata = ReportMetadata::read(&mut r)?;
        let public_share = r.opaque32("public_share")?.to_vec();
        let leader_encrypted_input_share = HpkeCiphertext::read(&mut r)?;
        let helper_encrypted_input_share = HpkeCiphertext::read(&mut r)?;
        r.finish()?;
        Ok(Report { metadata, public_share, leader_encrypted_input_share, helper_encrypted_input_share })
    }

    /// The encoding (an [`Error::Value`](crate::Error::Value) only for a field too long for its length prefix).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut w = Writer::default();
        self.metadata.write(&mut w);
        w.opaque32(&self.public_share, "a Report's public share")?;
        self.leader_encrypted_input_share.write(&mut w)?;
        self.helper_encrypted_input_share.write(&mut w)?;
        Ok(w.into_bytes())
    }

    /// The sealed input share of `aggregator`.
    pub fn encrypted_input_share(&self, aggregator: Aggregator) -> &HpkeCiphertext {
        match aggregator {
            Aggregator::Leader => &self.leader_encrypted_input_share,
            Aggregator::Helper => &self.helper_encrypted_input_share,
        }
    }
}

/// DAP's `Extension`: `extension_type u16 ‖ extension_data opaque<0..2^16-1>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Extension {
    /// The extension's type.
    pub extension_type: u16,
    /// Its data.
    pub extension_data: Vec<u8>,
}

/// DAP's `PlaintextInputShare`: `extensions Extension<0..2^16-1> ‖ payload opaque<0..2^32-1>`, what is sealed to
/// an aggregator (the payload is its VDAF input share).
#[derive(Clone, PartialEq, Eq)]
pub struct PlaintextInputShare {
    /// The extensions for the aggregator (this crate sends none).
    pub extensions: Vec<Extension>,
    /// The VDAF input share.
    pub payload: Vec<u8>,
}

impl PlaintextInputShare {
    /// Reads an encoded plaintext input share (all of `bytes`), an [`Error::Value`](crate::Error::Value) saying what is
    /// wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "a PlaintextInputShare");
        let mut list = Reader::new(r.opaque16("extensions")?, "a PlaintextInputShare's extensions");
        let mut extensions = Vec::new();
        while !list.is_empty() {
            let extension_type = list.u16()?;
            extensions.push(Extension { extension_type, extension_data: list.opaque16("extension_data")?.to_vec() });
        }
        let payload = r.opaque32("payload")?.to_vec();
        r.finish()?;
        Ok(PlaintextInputShare { extensions, payload })
    }

    /// The encoding (an [`Error::Value`](crate::Error::Value) only for a field too long for its length prefix).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut list = Writer::default();
        for e in &self.extensions {
            list.u16(e.extension_type);
            list.opaque16(&e.extension_data, "an extension's data")?;
        }
        let mut w = Writer::default();
        w.opaque16(&list.into_bytes(), "a PlaintextInputShare's extensions")?;
        w.opaque32(&self.payload, "a PlaintextInputShare's payload")?;
        Ok(w.into_bytes())
    }
}

/// The payload is an input share, a secret: `Debug` shows its length only.
impl fmt::Debug for PlaintextInputShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlaintextInputShare")
            .field("extensions", &self.extensions)
            .field("payload_len", &self.payload.len())
            .finish()
    }
}
