//! [`Poplar1ReportBuilder`] (feature `poplar1`): a Poplar1 client and the two aggregators' configs, making a task's
//! DAP-09 reports. DAP frames every VDAF message as opaque bytes, so a Poplar1 report is a Prio3 report's envelope
//! around Poplar1's shares: the report ID is the nonce, the public share the IDPF's correction words, and each input
//! share (an IDPF key and its correlated randomness) sealed to its aggregator by the envelope
//! [`super::ReportBuilder`] is too (`DapBuilder`: one implementation of the sealing). The aggregation parameter (the level and the
//! candidate prefixes) is the collector's, never the device's: a report is the same whatever it is later asked.

use std::fmt;

use super::builder::{DapBuilder, ReportVdaf};
use super::{Aggregator, HpkeConfig, Report, REPORT_ID_LEN, TASK_ID_LEN};
use crate::error::Result;
use crate::poplar1::{Poplar1Client, Poplar1Shares, NONCE_LEN};

impl ReportVdaf for Poplar1Client {
    type Measurement = [bool];
    type Shares = Poplar1Shares;
    const REPORT: &'static str = "a Poplar1 report";
    fn aggregators(&self) -> usize {
        2
    }
    fn rand_len(&self) -> usize {
        Poplar1Client::rand_len(self)
    }
    fn shard(&self, measurement: &[bool]) -> Result<Poplar1Shares> {
        Poplar1Client::shard(self, measurement)
    }
    fn shard_with_random(&self, m: &[bool], nonce: &[u8; NONCE_LEN], rand: &[u8]) -> Result<Poplar1Shares> {
        Poplar1Client::shard_with_random(self, m, nonce, rand)
    }
}

/// Builds the DAP-09 reports of one Poplar1 task: a [`Poplar1Client`], the task ID, the leader's and the helper's
/// [`HpkeConfig`] and the task's time precision. Keeps no state between reports (`Send + Sync`).
///
/// ```
/// use ldp_client::dap::{HpkeKeypair, HpkeSuite, Poplar1ReportBuilder};
/// use ldp_client::poplar1::Poplar1Client;
///
/// # let leader = HpkeKeypair::generate(1, HpkeSuite::DEFAULT)?.config().clone();
/// # let helper = HpkeKeypair::generate(2, HpkeSuite::DEFAULT)?.config().clone();
/// let task_id = [7u8; 32];
/// let client = Poplar1Client::new(64, &task_id)?;
/// let builder = Poplar1ReportBuilder::new(client, task_id, leader, helper)?.with_time_precision(3600)?;
/// let measurement = builder.client().measurement_from_bytes(b"new-word")?;
/// let body = builder.build(&measurement, 1_700_000_123)?.encode()?; // PUT to {leader}/tasks/{task-id}/reports
/// # Ok::<(), ldp_client::Error>(())
/// ```
#[derive(Clone)]
pub struct Poplar1ReportBuilder(DapBuilder<Poplar1Client>);

impl fmt::Debug for Poplar1ReportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_as("Poplar1ReportBuilder", f)
    }
}

impl Poplar1ReportBuilder {
    /// The builder of `client`'s reports for the task `task_id`, sealed to `leader` and `helper` (each checked:
    /// [`HpkeConfig::check`]; not one key for both), with a time precision of 1 second.
    pub fn new(
        client: Poplar1Client,
        task_id: [u8; TASK_ID_LEN],
        leader: HpkeConfig,
        helper: HpkeConfig,
    ) -> Result<Self> {
        DapBuilder::new(client, task_id, leader, helper).map(Poplar1ReportBuilder)
    }

    /// This builder with the task's time precision in seconds (at least 1).
    pub fn with_time_precision(self, seconds: u64) -> Result<Self> {
        self.0.with_time_precision(seconds).map(Poplar1ReportBuilder)
    }

    /// The Poplar1 client.
    pub fn client(&self) -> &Poplar1Client {
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

    /// The report of `measurement` (`bits` bits) made at `time` (seconds since the Unix epoch, rounded down to the
    /// time precision), with a fresh report ID, sharding randomness and ephemeral keys from the OS generator.
    /// Refused as [`Poplar1Client::shard`] refuses.
    pub fn build(&self, measurement: &[bool], time: u64) -> Result<Report> {
        self.0.build(measurement, time)
    }

    /// Bytes of randomness [`Poplar1ReportBuilder::build_with_random`] takes: the sharding randomness
    /// ([`crate::poplar1::RAND_LEN`]), then the leader's and the helper's HPKE ephemeral key material.
    pub fn rand_len(&self) -> usize {
        self.0.rand_len()
    }

    /// [`Poplar1ReportBuilder::build`] with the caller's report ID and randomness
    /// ([`Poplar1ReportBuilder::rand_len`] bytes): the same inputs always give the same bytes. **For tests only**.
    pub fn build_with_random(
        &self,
        measurement: &[bool],
        time: u64,
        report_id: &[u8; REPORT_ID_LEN],
        rand: &[u8],
    ) -> Result<Report> {
        self.0.build_with_random(measurement, time, report_id, rand)
    }
}
