//! DAP's upload encoding (feature `prio`): a Prio3 measurement as the [`Report`] a two-aggregator deployment's
//! leader accepts, each input share sealed with HPKE (RFC 9180) to its aggregator's key.
//!
//! **The draft: DAP-09** (`draft-ietf-ppm-dap-09`). It is what the newest published `janus_messages` crate (0.7.x,
//! Janus 0.7: the reference implementation's message definitions, used to check this module) speaks, so reports
//! from this crate decode and open in an independent implementation; later drafts have no published decoder to
//! check against yet. DAP frames every VDAF message as opaque bytes, so the VDAF draft 18 public share and input
//! shares of [`crate::prio3`] travel in DAP-09's envelope unchanged (DAP-09 itself names VDAF-08; the aggregators
//! of this deployment run draft 18, the same as the devices).
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

mod codec;
mod hpke;

use std::fmt;

use self::codec::{Reader, Writer};
pub use self::hpke::{
    open, seal, seal_with_ikm, HpkeCiphertext, HpkeConfig, HpkeConfigList, HpkeKeypair, HpkeSuite, AEAD_AES_128_GCM,
    AEAD_AES_256_GCM, AEAD_CHACHA20_POLY1305, KDF_HKDF_SHA256, KDF_HKDF_SHA512, KEM_P256_HKDF_SHA256,
    KEM_P521_HKDF_SHA512, KEM_X25519_HKDF_SHA256,
};
use crate::error::{Error, Refusal, Result};
use crate::prio3::{Measurement, Prio3Client, Prio3Shares, NONCE_LEN};

/// The DAP draft this module speaks: `draft-ietf-ppm-dap-09`.
pub const DRAFT: &str = "draft-ietf-ppm-dap-09";

/// Bytes of a report ID (DAP's `ReportID`), which is also the report's VDAF nonce.
pub const REPORT_ID_LEN: usize = 16;
const _: () = assert!(REPORT_ID_LEN == NONCE_LEN);

/// Bytes of a task ID (DAP's `TaskID`).
pub const TASK_ID_LEN: usize = 32;

/// The HPKE `info` prefix of an input share (DAP-09 §4.4.2), before the sender's and the recipient's roles.
const INPUT_SHARE_LABEL: &[u8] = b"dap-09 input share";

/// DAP's role byte of the client, the sender of input shares.
const CLIENT_ROLE: u8 = 0x01;

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

/// DAP's `ReportMetadata`: `report_id[16] ‖ time u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportMetadata {
    /// The report ID: 16 random bytes, the VDAF nonce.
    pub report_id: [u8; REPORT_ID_LEN],
    /// Seconds since the Unix epoch, rounded down to the task's time precision.
    pub time: u64,
}

impl ReportMetadata {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(ReportMetadata { report_id: r.array("report_id")?, time: r.u64()? })
    }

    fn write(&self, w: &mut Writer) {
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

    /// Reads an encoded report (all of `bytes`; trailing bytes are refused), an [`Error::Value`] saying what is
    /// wrong. The ciphertexts are not opened.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "a Report");
        let metadata = ReportMetadata::read(&mut r)?;
        let public_share = r.opaque32("public_share")?.to_vec();
        let leader_encrypted_input_share = HpkeCiphertext::read(&mut r)?;
        let helper_encrypted_input_share = HpkeCiphertext::read(&mut r)?;
        r.finish()?;
        Ok(Report { metadata, public_share, leader_encrypted_input_share, helper_encrypted_input_share })
    }

    /// The encoding (an [`Error::Value`] only for a field too long for its length prefix).
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
    /// Reads an encoded plaintext input share (all of `bytes`), an [`Error::Value`] saying what is wrong.
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

    /// The encoding (an [`Error::Value`] only for a field too long for its length prefix).
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

/// The HPKE `info` of `aggregator`'s input share: `"dap-09 input share" ‖ 0x01 ‖ role`.
pub fn input_share_info(aggregator: Aggregator) -> Vec<u8> {
    let mut info = INPUT_SHARE_LABEL.to_vec();
    info.extend_from_slice(&[CLIENT_ROLE, aggregator.role()]);
    info
}

/// The HPKE `aad` of a report's input shares, DAP's `InputShareAad`: `task_id[32] ‖ ReportMetadata ‖ public_share
/// opaque<0..2^32-1>`.
pub fn input_share_aad(task_id: &[u8; TASK_ID_LEN], metadata: &ReportMetadata, public_share: &[u8]) -> Result<Vec<u8>> {
    let mut w = Writer::default();
    w.bytes(task_id);
    metadata.write(&mut w);
    w.opaque32(public_share, "a public share")?;
    Ok(w.into_bytes())
}

/// The input shares of one report, sealed: a report's envelope around shares already made (by this crate's
/// [`ReportBuilder`], or by another Prio3 implementation with the report ID as its nonce). `input_shares` are the
/// leader's and the helper's, in that order; each becomes a `PlaintextInputShare` without extensions sealed to its
/// config, with ephemeral keys from the OS generator. Refused: a config this crate cannot seal to
/// ([`HpkeConfig::check`]), the same public key for both aggregators.
pub fn seal_input_shares(
    task_id: &[u8; TASK_ID_LEN],
    metadata: ReportMetadata,
    public_share: &[u8],
    input_shares: [&[u8]; 2],
    leader: &HpkeConfig,
    helper: &HpkeConfig,
) -> Result<Report> {
    seal_shares(task_id, metadata, public_share, input_shares, [leader, helper], None)
}

/// [`seal_input_shares`] with each seal's ephemeral key material given (`ikms[0]` for the leader, `[1]` the helper).
fn seal_shares(
    task_id: &[u8; TASK_ID_LEN],
    metadata: ReportMetadata,
    public_share: &[u8],
    input_shares: [&[u8]; 2],
    configs: [&HpkeConfig; 2],
    ikms: Option<[&[u8]; 2]>,
) -> Result<Report> {
    check_configs(configs)?;
    let aad = input_share_aad(task_id, &metadata, public_share)?;
    let mut sealed = Vec::with_capacity(2);
    for (i, aggregator) in [Aggregator::Leader, Aggregator::Helper].into_iter().enumerate() {
        let mut plaintext = PlaintextInputShare { extensions: Vec::new(), payload: input_shares[i].to_vec() };
        let encoded = plaintext.encode();
        crate::prio3::wipe(&mut plaintext.payload);
        let mut encoded = encoded?;
        let info = input_share_info(aggregator);
        let ciphertext = match ikms {
            None => seal(configs[i], &info, &aad, &encoded),
            Some(ikms) => seal_with_ikm(configs[i], &info, &aad, &encoded, ikms[i]),
        };
        crate::prio3::wipe(&mut encoded);
        sealed.push(ciphertext?);
    }
    let helper_encrypted_input_share = sealed.pop().expect("two ciphertexts");
    let leader_encrypted_input_share = sealed.pop().expect("two ciphertexts");
    Ok(Report {
        metadata,
        public_share: public_share.to_vec(),
        leader_encrypted_input_share,
        helper_encrypted_input_share,
    })
}

/// Both configs can be sealed to, and are not one key (each aggregator must hold its own).
fn check_configs(configs: [&HpkeConfig; 2]) -> Result<()> {
    for (aggregator, config) in [Aggregator::Leader, Aggregator::Helper].into_iter().zip(configs) {
        config.check().map_err(|e| Error::value(format!("the {aggregator}'s HPKE config: {e}")))?;
    }
    if configs[0].public_key == configs[1].public_key {
        return Err(Error::value(
            "the leader's and the helper's HPKE configs have the same public key: each aggregator must have its own",
        ));
    }
    Ok(())
}

/// What an aggregator does with its share of a report: opens `ciphertext` (its `HpkeCiphertext`) with its
/// `keypair` under the report's task, metadata and public share, and returns the `PlaintextInputShare`'s payload,
/// the VDAF input share (for `verify_init`).
///
/// Refused (an [`Error::Value`]): a ciphertext sealed to another config id; one that does not open (another key,
/// another aggregator's share, or a task, report ID, time or public share other than the ones it was sealed
/// with); a plaintext that is no `PlaintextInputShare`; and one with extensions, since this deployment defines none
/// and DAP-09 has an aggregator reject a report whose extensions it does not recognize.
pub fn open_input_share(
    keypair: &HpkeKeypair,
    aggregator: Aggregator,
    task_id: &[u8; TASK_ID_LEN],
    metadata: &ReportMetadata,
    public_share: &[u8],
    ciphertext: &HpkeCiphertext,
) -> Result<Vec<u8>> {
    let aad = input_share_aad(task_id, metadata, public_share)?;
    let mut plaintext = open(keypair, &input_share_info(aggregator), &aad, ciphertext)?;
    let share = PlaintextInputShare::decode(&plaintext);
    crate::prio3::wipe(&mut plaintext);
    let share = share?;
    if let Some(e) = share.extensions.first() {
        return Err(Error::value(format!(
            "the {aggregator}'s input share carries {} extension(s) (the first of type 0x{:04x}): this deployment \
             recognizes none, and DAP-09 rejects a report with an unrecognized extension",
            share.extensions.len(),
            e.extension_type
        )));
    }
    Ok(share.payload)
}

/// Builds the DAP-09 reports of one task: a [`Prio3Client`] (two aggregators), the task ID, the leader's and the
/// helper's [`HpkeConfig`] and the task's time precision. Keeps no state between reports (`Send + Sync`).
#[derive(Clone, Debug)]
pub struct ReportBuilder {
    client: Prio3Client,
    task_id: [u8; TASK_ID_LEN],
    configs: [HpkeConfig; 2],
    time_precision: u64,
}

impl ReportBuilder {
    /// The builder of `client`'s reports for the task `task_id`, sealed to `leader` and `helper` (each checked:
    /// [`HpkeConfig::check`]), with a time precision of 1 second until [`ReportBuilder::with_time_precision`].
    /// Refused: a client for other than two aggregators (DAP has a leader and a helper), a config this crate cannot
    /// seal to, the same config id and key for both aggregators.
    pub fn new(
        client: Prio3Client,
        task_id: [u8; TASK_ID_LEN],
        leader: HpkeConfig,
        helper: HpkeConfig,
    ) -> Result<Self> {
        if client.aggregators() != 2 {
            return Err(Refusal::param_range("aggregators", client.aggregators()).with("min", 2).with("max", 2).into());
        }
        check_configs([&leader, &helper])?;
        Ok(ReportBuilder { client, task_id, configs: [leader, helper], time_precision: 1 })
    }

    /// This builder with the task's time precision in seconds (at least 1): each report's time is rounded down to
    /// a multiple of it.
    pub fn with_time_precision(mut self, seconds: u64) -> Result<Self> {
        if seconds == 0 {
            return Err(Refusal::param_range("time_precision", seconds).with("min", 1).into());
        }
        self.time_precision = seconds;
        Ok(self)
    }

    /// The Prio3 client.
    pub fn client(&self) -> &Prio3Client {
        &self.client
    }

    /// The task ID.
    pub fn task_id(&self) -> &[u8; TASK_ID_LEN] {
        &self.task_id
    }

    /// The HPKE config `aggregator`'s share is sealed to.
    pub fn config(&self, aggregator: Aggregator) -> &HpkeConfig {
        &self.configs[aggregator.index()]
    }

    /// The time precision in seconds.
    pub fn time_precision(&self) -> u64 {
        self.time_precision
    }

    /// `time` rounded down to the time precision: the time a report made at `time` carries.
    pub fn report_time(&self, time: u64) -> u64 {
        time - time % self.time_precision
    }

    /// The report of `measurement` made at `time` (seconds since the Unix epoch), with a fresh report ID, sharding
    /// randomness and ephemeral keys from the OS generator. Refused as [`Prio3Client::shard`] refuses (nothing is
    /// drawn for a measurement it refuses).
    pub fn build(&self, measurement: &Measurement, time: u64) -> Result<Report> {
        // The shard's nonce is 16 bytes of the OS generator: the report ID.
        let shares = self.client.shard(measurement)?;
        self.seal(&shares, time, None)
    }

    /// [`ReportBuilder::build`] at the system clock's time.
    pub fn build_now(&self, measurement: &Measurement) -> Result<Report> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| Error::value(format!("the system clock is before the Unix epoch ({e})")))?;
        self.build(measurement, now.as_secs())
    }

    /// Bytes of randomness [`ReportBuilder::build_with_random`] takes: the client's sharding randomness
    /// ([`Prio3Client::rand_len`]), then the leader's and the helper's HPKE ephemeral key material
    /// ([`HpkeSuite::ikm_len`] each: 32 for X25519 and P-256).
    pub fn rand_len(&self) -> usize {
        self.client.rand_len() + self.ikm_lens().iter().sum::<usize>()
    }

    fn ikm_lens(&self) -> [usize; 2] {
        self.configs.each_ref().map(|c| c.suite().ikm_len().unwrap_or_default())
    }

    /// [`ReportBuilder::build`] with the caller's report ID and randomness ([`ReportBuilder::rand_len`] bytes: the
    /// sharding randomness, then each seal's ephemeral key material): the same inputs always give the same bytes.
    /// **For tests only**: a report ID, sharding randomness or ephemeral key used twice, or not drawn from a
    /// cryptographic generator, breaks the measurement's privacy. A `rand` of another length is refused.
    pub fn build_with_random(
        &self,
        measurement: &Measurement,
        time: u64,
        report_id: &[u8; REPORT_ID_LEN],
        rand: &[u8],
    ) -> Result<Report> {
        if rand.len() != self.rand_len() {
            return Err(Error::value(format!(
                "a report takes {} bytes of randomness ({} to shard, {} and {} of ephemeral key material), got {}",
                self.rand_len(),
                self.client.rand_len(),
                self.ikm_lens()[0],
                self.ikm_lens()[1],
                rand.len()
            )));
        }
        let (shard, ikms) = rand.split_at(self.client.rand_len());
        let (leader_ikm, helper_ikm) = ikms.split_at(self.ikm_lens()[0]);
        let shares = self.client.shard_with_random(measurement, report_id, shard)?;
        self.seal(&shares, time, Some([leader_ikm, helper_ikm]))
    }

    fn seal(&self, shares: &Prio3Shares, time: u64, ikms: Option<[&[u8]; 2]>) -> Result<Report> {
        let metadata = ReportMetadata { report_id: shares.nonce, time: self.report_time(time) };
        let input_shares = [shares.leader_share(), shares.helper_share()];
        let [leader, helper] = &self.configs;
        seal_shares(&self.task_id, metadata, &shares.public_share, input_shares, [leader, helper], ikms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prio3::Prio3Type;

    fn pair(id: u8) -> HpkeKeypair {
        HpkeKeypair::generate(id, HpkeSuite::DEFAULT).unwrap()
    }

    #[test]
    fn a_report_round_trips_and_opens_for_each_aggregator_only() {
        let (leader, helper) = (pair(1), pair(2));
        let task_id = [9u8; 32];
        let client = Prio3Client::new(Prio3Type::histogram(5), &task_id).unwrap();
        let builder = ReportBuilder::new(client, task_id, leader.config().clone(), helper.config().clone())
            .unwrap()
            .with_time_precision(60)
            .unwrap();
        let report = builder.build(&Measurement::Histogram(3), 1_000_059).unwrap();
        assert_eq!(report.metadata.time, 1_000_020);
        let bytes = report.encode().unwrap();
        assert_eq!(Report::decode(&bytes).unwrap(), report);
        let m = &report.metadata;
        let open_as = |kp: &HpkeKeypair, a: Aggregator, task: &[u8; 32], md: &ReportMetadata| {
            open_input_share(kp, a, task, md, &report.public_share, report.encrypted_input_share(a))
        };
        assert!(open_as(&leader, Aggregator::Leader, &task_id, m).is_ok());
        assert!(open_as(&helper, Aggregator::Helper, &task_id, m).is_ok());
        assert!(open_as(&leader, Aggregator::Helper, &task_id, m).is_err(), "another role's info");
        assert!(open_as(&leader, Aggregator::Leader, &[8u8; 32], m).is_err(), "another task");
        let later = ReportMetadata { time: m.time + 60, ..*m };
        assert!(open_as(&leader, Aggregator::Leader, &task_id, &later).is_err(), "another time");
        let mut truncated = bytes.clone();
        truncated.pop();
        assert!(Report::decode(&truncated).is_err());
        let mut longer = bytes;
        longer.push(0);
        assert!(Report::decode(&longer).unwrap_err().to_string().contains("trailing"));
    }

    #[test]
    fn the_builder_refuses_what_dap_cannot_carry() {
        let (leader, helper) = (pair(1), pair(2));
        let three = Prio3Client::with_aggregators(Prio3Type::Count, 3, b"").unwrap();
        assert!(ReportBuilder::new(three, [0; 32], leader.config().clone(), helper.config().clone()).is_err());
        let count = || Prio3Client::new(Prio3Type::Count, b"").unwrap();
        assert!(ReportBuilder::new(count(), [0; 32], leader.config().clone(), leader.config().clone()).is_err());
        let unknown = HpkeConfig { kem_id: 0x0011, ..leader.config().clone() };
        let e = ReportBuilder::new(count(), [0; 32], unknown, helper.config().clone()).unwrap_err();
        assert!(e.to_string().contains("leader's HPKE config") && e.to_string().contains("0x0011"), "{e}");
        let b = ReportBuilder::new(count(), [0; 32], leader.config().clone(), helper.config().clone()).unwrap();
        assert!(b.clone().with_time_precision(0).is_err());
        assert_eq!(b.rand_len(), 64 + 32 + 32);
        assert!(b.build_with_random(&Measurement::Count(true), 5, &[0; 16], &[0; 10]).is_err());
    }
}
