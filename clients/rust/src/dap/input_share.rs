//! An input share's sealing and opening (DAP-09 §4.4.2): its HPKE `info` and `aad`, the two shares of a report
//! sealed to the leader's and the helper's configs, and a share opened by its aggregator.

use super::codec::Writer;
use super::{
    open, seal, seal_with_ikm, Aggregator, HpkeCiphertext, HpkeConfig, HpkeKeypair, PlaintextInputShare, Report,
    ReportMetadata, TASK_ID_LEN,
};
use crate::error::{Error, Result};

/// The HPKE `info` prefix of an input share (DAP-09 §4.4.2), before the sender's and the recipient's roles.
const INPUT_SHARE_LABEL: &[u8] = b"dap-09 input share";

/// DAP's role byte of the client, the sender of input shares.
const CLIENT_ROLE: u8 = 0x01;

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
/// [`ReportBuilder`](super::ReportBuilder), or by another Prio3 implementation with the report ID as its nonce).
/// `input_shares` are the leader's and the helper's, in that order; each becomes a `PlaintextInputShare` without
/// extensions sealed to its config, with ephemeral keys from the OS generator. Refused: a config this crate cannot seal
/// to ([`HpkeConfig::check`]), the same public key for both aggregators.
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
pub(super) fn seal_shares(
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
pub(super) fn check_configs(configs: [&HpkeConfig; 2]) -> Result<()> {
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
