//! [`ReportBuilder`]: a Prio3 client and the two aggregators' configs, making a task's reports; and the envelope
//! every VDAF's report builder shares ([`DapBuilder`], over a [`ReportVdaf`]: Prio3 here, Poplar1 in
//! `poplar1_builder`).

use std::fmt;

use super::input_share::{check_configs, seal_shares};
use super::{Aggregator, HpkeConfig, Report, ReportMetadata, REPORT_ID_LEN, TASK_ID_LEN};
use crate::error::{Error, Refusal, Result};
use crate::prio3::{Measurement, Prio3Client, Prio3Shares, VdafShares, NONCE_LEN};

/// What a DAP-09 report needs of a VDAF client: its sharding, with fresh or given randomness. DAP frames every VDAF
/// message as opaque bytes, so one envelope serves every VDAF: the report ID is the nonce, the public share travels
/// in clear, each input share is sealed to its aggregator (DAP-09 §4.4.2).
pub(crate) trait ReportVdaf: Clone + fmt::Debug {
    /// A measurement, as the client's `shard` takes it.
    type Measurement: ?Sized;
    /// The shares of one measurement.
    type Shares: VdafShares;
    /// A report of this VDAF, as the refusal of randomness of the wrong length names it.
    const REPORT: &'static str;
    /// The number of aggregators the client shards for (DAP has two).
    fn aggregators(&self) -> usize;
    /// Bytes of sharding randomness one report takes.
    fn rand_len(&self) -> usize;
    /// `measurement` sharded with a fresh nonce and randomness from the OS generator.
    fn shard(&self, measurement: &Self::Measurement) -> Result<Self::Shares>;
    /// `measurement` sharded with the caller's nonce and randomness.
    fn shard_with_random(
        &self,
        measurement: &Self::Measurement,
        nonce: &[u8; NONCE_LEN],
        rand: &[u8],
    ) -> Result<Self::Shares>;
}

impl ReportVdaf for Prio3Client {
    type Measurement = Measurement;
    type Shares = Prio3Shares;
    const REPORT: &'static str = "a report";
    fn aggregators(&self) -> usize {
        Prio3Client::aggregators(self)
    }
    fn rand_len(&self) -> usize {
        Prio3Client::rand_len(self)
    }
    fn shard(&self, measurement: &Measurement) -> Result<Prio3Shares> {
        Prio3Client::shard(self, measurement)
    }
    fn shard_with_random(&self, m: &Measurement, nonce: &[u8; NONCE_LEN], rand: &[u8]) -> Result<Prio3Shares> {
        Prio3Client::shard_with_random(self, m, nonce, rand)
    }
}

/// The DAP-09 reports of one task, of any VDAF: a client (two aggregators), the task ID, the leader's and the
/// helper's [`HpkeConfig`] and the task's time precision. [`ReportBuilder`] and `Poplar1ReportBuilder` are this,
/// each over its VDAF's client; the C interface's report functions take it too.
#[derive(Clone)]
pub(crate) struct DapBuilder<C> {
    client: C,
    task_id: [u8; TASK_ID_LEN],
    configs: [HpkeConfig; 2],
    time_precision: u64,
}

impl<C: ReportVdaf> DapBuilder<C> {
    /// The builder of `client`'s reports for `task_id`, sealed to `leader` and `helper` (each checked:
    /// [`HpkeConfig::check`]; not one key for both), with a time precision of 1 second. Refused: a client for other
    /// than two aggregators.
    pub(crate) fn new(client: C, task_id: [u8; TASK_ID_LEN], leader: HpkeConfig, helper: HpkeConfig) -> Result<Self> {
        if client.aggregators() != 2 {
            return Err(Refusal::param_range("aggregators", client.aggregators()).with("min", 2).with("max", 2).into());
        }
        check_configs([&leader, &helper])?;
        Ok(DapBuilder { client, task_id, configs: [leader, helper], time_precision: 1 })
    }

    /// This builder with the time precision in seconds (at least 1).
    pub(crate) fn with_time_precision(mut self, seconds: u64) -> Result<Self> {
        if seconds == 0 {
            return Err(Refusal::param_range("time_precision", seconds).with("min", 1).into());
        }
        self.time_precision = seconds;
        Ok(self)
    }

    pub(crate) fn client(&self) -> &C {
        &self.client
    }

    pub(crate) fn task_id(&self) -> &[u8; TASK_ID_LEN] {
        &self.task_id
    }

    pub(crate) fn config(&self, aggregator: Aggregator) -> &HpkeConfig {
        &self.configs[aggregator.index()]
    }

    pub(crate) fn time_precision(&self) -> u64 {
        self.time_precision
    }

    /// `time` rounded down to the time precision.
    pub(crate) fn report_time(&self, time: u64) -> u64 {
        time - time % self.time_precision
    }

    /// The report of `measurement` at `time`, its report ID, randomness and ephemeral keys from the OS generator.
    pub(crate) fn build(&self, measurement: &C::Measurement, time: u64) -> Result<Report> {
        // The shard's nonce is 16 bytes of the OS generator: the report ID.
        let shares = self.client.shard(measurement)?;
        self.seal(&shares, time, None)
    }

    /// The sharding randomness, then each aggregator's HPKE ephemeral key material.
    pub(crate) fn rand_len(&self) -> usize {
        self.client.rand_len() + self.ikm_lens().iter().sum::<usize>()
    }

    fn ikm_lens(&self) -> [usize; 2] {
        self.configs.each_ref().map(|c| c.suite().ikm_len().unwrap_or_default())
    }

    /// [`DapBuilder::build`] with the caller's report ID and randomness ([`DapBuilder::rand_len`] bytes).
    pub(crate) fn build_with_random(
        &self,
        measurement: &C::Measurement,
        time: u64,
        report_id: &[u8; REPORT_ID_LEN],
        rand: &[u8],
    ) -> Result<Report> {
        if rand.len() != self.rand_len() {
            return Err(Error::value(format!(
                "{} takes {} bytes of randomness ({} to shard, {} and {} of ephemeral key material), got {}",
                C::REPORT,
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

    /// The report of shares already made: the nonce as the report ID, the time rounded down, both input shares
    /// sealed (with ephemeral key material `ikms`, else from the OS generator).
    fn seal(&self, shares: &C::Shares, time: u64, ikms: Option<[&[u8]; 2]>) -> Result<Report> {
        let metadata = ReportMetadata { report_id: *shares.nonce(), time: self.report_time(time) };
        let input_shares = [shares.input_shares()[0].as_slice(), shares.input_shares()[1].as_slice()];
        let [leader, helper] = &self.configs;
        seal_shares(&self.task_id, metadata, shares.public_share(), input_shares, [leader, helper], ikms)
    }

    /// `Debug` under the public builder's name: its client, task ID, configs and time precision.
    pub(crate) fn fmt_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("client", &self.client)
            .field("task_id", &self.task_id)
            .field("configs", &self.configs)
            .field("time_precision", &self.time_precision)
            .finish()
    }
}

/// Builds the DAP-09 reports of one task: a [`Prio3Client`] (two aggregators), the task ID, the leader's and the
/// helper's [`HpkeConfig`] and the task's time precision. Keeps no state between reports (`Send + Sync`).
#[derive(Clone)]
pub struct ReportBuilder(DapBuilder<Prio3Client>);

impl fmt::Debug for ReportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_as("ReportBuilder", f)
    }
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
        DapBuilder::new(client, task_id, leader, helper).map(ReportBuilder)
    }

    /// This builder with the task's time precision in seconds (at least 1): each report's time is rounded down to
    /// a multiple of it.
    pub fn with_time_precision(self, seconds: u64) -> Result<Self> {
        self.0.with_time_precision(seconds).map(ReportBuilder)
    }

    /// The Prio3 client.
    pub fn client(&self) -> &Prio3Client {
        self.0.client()
    }

    /// The task ID.
    pub fn task_id(&self) -> &[u8; TASK_ID_LEN] {
        self.0.task_id()
    }

    /// The HPKE config `aggregator`'s share is sealed to.
    pub fn config(&self, aggregator: Aggregator) -> &HpkeConfig {
        self.0.config(aggregator)
    }

    /// The time precision in seconds.
    pub fn time_precision(&self) -> u64 {
        self.0.time_precision()
    }

    /// `time` rounded down to the time precision: the time a report made at `time` carries.
    pub fn report_time(&self, time: u64) -> u64 {
        self.0.report_time(time)
    }

    /// The report of `measurement` made at `time` (seconds since the Unix epoch), with a fresh report ID, sharding
    /// randomness and ephemeral keys from the OS generator. Refused as [`Prio3Client::shard`] refuses (nothing is
    /// drawn for a measurement it refuses).
    pub fn build(&self, measurement: &Measurement, time: u64) -> Result<Report> {
        self.0.build(measurement, time)
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
    /// ([`HpkeSuite::ikm_len`](super::HpkeSuite::ikm_len) each: 32 for X25519 and P-256).
    pub fn rand_len(&self) -> usize {
        self.0.rand_len()
    }

    /// [`ReportBuilder::build`] with the caller's report ID and randomness ([`ReportBuilder::rand_len`] bytes: the
    /// sharding randomness, then each seal's ephemeral key material): the same inputs always give the same bytes.
    /// **For tests only**: a report ID, sharding randomness or ephemeral key used twice, or not drawn from a
    /// cryptographic generator, breaks the measurement's privacy. A `rand` of another length is refused, and so is
    /// any for a VDAF draft 08 client ([`Prio3Client::shard_with_random`] says why).
    pub fn build_with_random(
        &self,
        measurement: &Measurement,
        time: u64,
        report_id: &[u8; REPORT_ID_LEN],
        rand: &[u8],
    ) -> Result<Report> {
        self.0.build_with_random(measurement, time, report_id, rand)
    }

    /// The envelope shared with every VDAF's builder (the C interface's report functions take it).
    #[cfg(feature = "c-api")]
    pub(crate) fn dap(&self) -> &DapBuilder<Prio3Client> {
        &self.0
    }
}
