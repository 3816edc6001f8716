//! [`Poplar1ReportBuilder`] (feature `poplar1`): a Poplar1 client and the two aggregators' configs, making a task's
//! DAP-09 reports. DAP frames every VDAF message as opaque bytes, so a Poplar1 report is a Prio3 report's envelope
//! around Poplar1's shares: the report ID is the nonce, the public share the IDPF's correction words, and each input
//! share (an IDPF key and its correlated randomness) sealed to its aggregator as [`super::ReportBuilder`] seals
//! Prio3's (`seal_shares`: one implementation of the sealing). The aggregation parameter (the level and the
//! candidate prefixes) is the collector's, never the device's: a report is the same whatever it is later asked.

use super::input_share::{check_configs, seal_shares};
use super::{Aggregator, HpkeConfig, Report, ReportMetadata, REPORT_ID_LEN, TASK_ID_LEN};
use crate::error::{Error, Refusal, Result};
use crate::poplar1::{Poplar1Client, Poplar1Shares};

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
#[derive(Clone, Debug)]
pub struct Poplar1ReportBuilder {
    client: Poplar1Client,
    task_id: [u8; TASK_ID_LEN],
    configs: [HpkeConfig; 2],
    time_precision: u64,
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
        check_configs([&leader, &helper])?;
        Ok(Poplar1ReportBuilder { client, task_id, configs: [leader, helper], time_precision: 1 })
    }

    /// This builder with the task's time precision in seconds (at least 1).
    pub fn with_time_precision(mut self, seconds: u64) -> Result<Self> {
        if seconds == 0 {
            return Err(Refusal::param_range("time_precision", seconds).with("min", 1).into());
        }
        self.time_precision = seconds;
        Ok(self)
    }

    /// The Poplar1 client.
    pub fn client(&self) -> &Poplar1Client {
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

    /// The report of `measurement` (`bits` bits) made at `time` (seconds since the Unix epoch, rounded down to the
    /// time precision), with a fresh report ID, sharding randomness and ephemeral keys from the OS generator.
    /// Refused as [`Poplar1Client::shard`] refuses.
    pub fn build(&self, measurement: &[bool], time: u64) -> Result<Report> {
        let shares = self.client.shard(measurement)?;
        self.seal(&shares, time, None)
    }

    /// Bytes of randomness [`Poplar1ReportBuilder::build_with_random`] takes: the sharding randomness
    /// ([`crate::poplar1::RAND_LEN`]), then the leader's and the helper's HPKE ephemeral key material.
    pub fn rand_len(&self) -> usize {
        self.client.rand_len() + self.ikm_lens().iter().sum::<usize>()
    }

    fn ikm_lens(&self) -> [usize; 2] {
        self.configs.each_ref().map(|c| c.suite().ikm_len().unwrap_or_default())
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
        if rand.len() != self.rand_len() {
            return Err(Error::value(format!(
                "a Poplar1 report takes {} bytes of randomness ({} to shard, {} and {} of ephemeral key material), \
                 got {}",
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

    fn seal(&self, shares: &Poplar1Shares, time: u64, ikms: Option<[&[u8]; 2]>) -> Result<Report> {
        let metadata = ReportMetadata { report_id: shares.nonce, time: time - time % self.time_precision };
        let [leader, helper] = &self.configs;
        let input_shares = [shares.leader_share(), shares.helper_share()];
        seal_shares(&self.task_id, metadata, &shares.public_share, input_shares, [leader, helper], ikms)
    }
}
