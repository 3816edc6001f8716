//! DAP-09 reports of a **VDAF draft 08** client (`VdafDraft::Draft08`, prio 0.16.8): the VDAF that DAP-09 names and
//! that Janus 0.7 runs. `janus_messages` 0.7.145 depends on prio 0.16.8 itself (its `codec` is prio 0.16.8's), so
//! here the report goes all the way as a Janus 0.7 deployment takes it:
//!
//! * `janus_messages::Report::get_decoded` reads it (and re-encodes the same bytes);
//! * each input share opens through `hpke-dispatch` under Janus's `InputShareAad` and DAP-09's `info`, and its
//!   plaintext is a `janus_messages::PlaintextInputShare` without extensions;
//! * prio 0.16.8's aggregator API decodes the public share and the payloads as a Prio3Histogram's, prepares them
//!   (`prepare_init`, `prepare_shares_to_prepare_message`, `prepare_next`) with a verify key of draft 08's 16 bytes,
//!   and the aggregate is the measurements' histogram.
//!
//! Reports made through the Rust API (`ReportBuilder`, unchanged, with a draft 08 `Prio3Client`) and through the C
//! API (`ldp_prio3_new_histogram_draft(LDP_VDAF_DRAFT_08, ..)`, `ldp_dap_report`).

use hpke_dispatch::{base_mode_open, Config as DispatchConfig};
use janus_messages::codec::{Decode, Encode};
use janus_messages::{InputShareAad, PlaintextInputShare, Report as JanusReport, Role, TaskId};
use ldp_client::dap::{HpkeKeypair, HpkeSuite, ReportBuilder, KEM_P256_HKDF_SHA256};
use ldp_client::ffi::{
    ldp_dap_report, ldp_dap_report_bytes, ldp_dap_report_free, ldp_last_error_message, ldp_prio3_free,
    ldp_prio3_new_histogram_draft, LdpDapReport, LdpPrio3, LdpStatus, LDP_VDAF_DRAFT_08,
};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type, VdafDraft};
use prio08::codec::ParameterizedDecode;
use prio08::vdaf::prio3::{Prio3Histogram, Prio3InputShare, Prio3PublicShare};
use prio08::vdaf::{Aggregator, Collector, PrepareTransition, Vdaf};

/// A report's output share of one aggregator.
type OutputShare = <Prio3Histogram as Vdaf>::OutputShare;

const BUCKETS: usize = 5;
const TIME: u64 = 1_700_000_123;

/// The leader's and the helper's key pairs (X25519 and P-256).
fn keys() -> [HpkeKeypair; 2] {
    let p256 = HpkeSuite { kem_id: KEM_P256_HKDF_SHA256, ..HpkeSuite::DEFAULT };
    [HpkeKeypair::generate(1, HpkeSuite::DEFAULT).unwrap(), HpkeKeypair::generate(2, p256).unwrap()]
}

/// The VDAF of the task, as Janus's aggregators build it from the task's parameters.
fn vdaf(chunk_length: usize) -> Prio3Histogram {
    Prio3Histogram::new_histogram(2, BUCKETS, chunk_length).unwrap()
}

/// One encoded report, read by Janus, opened through hpke-dispatch and prepared by prio 0.16.8: the two output
/// shares.
fn prepare(vdaf: &Prio3Histogram, task_id: &[u8; 32], keys: &[HpkeKeypair; 2], bytes: &[u8]) -> Vec<OutputShare> {
    let report = JanusReport::get_decoded(bytes).expect("janus_messages decodes the report");
    assert_eq!(report.get_encoded().unwrap(), bytes, "Janus re-encodes other bytes");
    assert_eq!(report.metadata().time().as_seconds_since_epoch(), TIME - TIME % 3600);
    let aad = InputShareAad::new(TaskId::from(*task_id), report.metadata().clone(), report.public_share().to_vec())
        .get_encoded()
        .unwrap();
    let public = Prio3PublicShare::get_decoded_with_param(vdaf, report.public_share()).expect("a public share");
    let nonce: &[u8; 16] = report.metadata().id().as_ref();
    let verify_key = [0x5a; 16];
    let sealed =
        [(report.leader_encrypted_input_share(), Role::Leader), (report.helper_encrypted_input_share(), Role::Helper)];
    let mut states = Vec::new();
    let mut prepare_shares = Vec::new();
    for (agg, ((ciphertext, role), key)) in sealed.into_iter().zip(keys).enumerate() {
        let c = key.config();
        let suite = DispatchConfig::try_from_ids(c.aead_id, c.kdf_id, c.kem_id).unwrap();
        let info = [b"dap-09 input share".as_slice(), &[Role::Client as u8, role as u8]].concat();
        let plaintext =
            base_mode_open(&suite, key.private_key(), ciphertext.encapsulated_key(), &info, ciphertext.payload(), &aad)
                .unwrap_or_else(|e| panic!("the {role} share does not open through hpke-dispatch: {e}"));
        let plaintext = PlaintextInputShare::get_decoded(&plaintext).expect("a PlaintextInputShare");
        assert!(plaintext.extensions().is_empty());
        let input = Prio3InputShare::get_decoded_with_param(&(vdaf, agg), plaintext.payload()).expect("an input share");
        let (state, share) = vdaf.prepare_init(&verify_key, agg, &(), nonce, &public, &input).expect("prepare_init");
        states.push(state);
        prepare_shares.push(share);
    }
    let message = vdaf.prepare_shares_to_prepare_message(&(), prepare_shares).expect("the proof verifies");
    states
        .into_iter()
        .map(|state| match vdaf.prepare_next(state, message.clone()).unwrap() {
            PrepareTransition::Finish(out) => out,
            PrepareTransition::Continue(..) => panic!("Prio3 prepares in one round"),
        })
        .collect()
}

/// The histogram of the reports' output shares (a pair each), aggregated and unsharded.
fn histogram(vdaf: &Prio3Histogram, outputs: &[Vec<OutputShare>]) -> Vec<u128> {
    let shares = [0, 1].map(|agg| vdaf.aggregate(&(), outputs.iter().map(|o| o[agg].clone())).unwrap());
    vdaf.unshard(&(), shares, outputs.len()).unwrap()
}

/// Draft 08's recommended chunk length of the histogram (prio 0.16.8's), as the client picks it.
fn chunk_length() -> usize {
    let Prio3Type::Histogram { chunk_length, .. } = Prio3Type::histogram_for(VdafDraft::Draft08, BUCKETS) else {
        unreachable!()
    };
    assert_eq!(chunk_length, prio08::vdaf::prio3::optimal_chunk_length(BUCKETS));
    chunk_length
}

#[test]
fn rust_draft08_reports_decode_with_janus_and_prepare_with_prio_0_16_8() {
    let (keys, task_id) = (keys(), [0x08; 32]);
    let typ = Prio3Type::histogram_for(VdafDraft::Draft08, BUCKETS);
    let client = Prio3Client::with_draft(VdafDraft::Draft08, typ, b"").unwrap();
    let builder = ReportBuilder::new(client, task_id, keys[0].config().clone(), keys[1].config().clone())
        .unwrap()
        .with_time_precision(3600)
        .unwrap();
    let vdaf = vdaf(chunk_length());
    let outputs: Vec<_> = [4, 0, 4, 2]
        .into_iter()
        .map(|m| {
            prepare(&vdaf, &task_id, &keys, &builder.build(&Measurement::Histogram(m), TIME).unwrap().encode().unwrap())
        })
        .collect();
    assert_eq!(histogram(&vdaf, &outputs), vec![1, 0, 1, 0, 2]);
}

#[test]
fn c_draft08_reports_decode_with_janus_and_prepare_with_prio_0_16_8() {
    let (keys, task_id) = (keys(), [0x09; 32]);
    let [leader, helper] = [0, 1].map(|k| keys[k].config().encode().unwrap());
    let ok = |s: LdpStatus| {
        // SAFETY: the message is a NUL-terminated string the library keeps until the thread's next failing call.
        let message = unsafe { std::ffi::CStr::from_ptr(ldp_last_error_message()) };
        assert_eq!(s, LdpStatus::LdpOk, "{}", message.to_string_lossy());
    };
    let mut prio3: *mut LdpPrio3 = std::ptr::null_mut();
    // SAFETY: a null context of length 0 and a valid out pointer; chunk length 0: draft 08's recommended one.
    ok(unsafe { ldp_prio3_new_histogram_draft(LDP_VDAF_DRAFT_08, BUCKETS, 0, std::ptr::null(), 0, &mut prio3) });
    let vdaf = vdaf(chunk_length());
    let mut outputs = Vec::new();
    for m in [1u64, 1, 3] {
        let mut report: *mut LdpDapReport = std::ptr::null_mut();
        let (mut bytes, mut len): (*const u8, usize) = (std::ptr::null(), 0);
        // SAFETY: live handles and buffers of the given lengths; the report is freed once its bytes are copied.
        let encoded = unsafe {
            ok(ldp_dap_report(
                prio3,
                &m,
                1,
                task_id.as_ptr(),
                32,
                TIME,
                3600,
                leader.as_ptr(),
                leader.len(),
                helper.as_ptr(),
                helper.len(),
                &mut report,
            ));
            ok(ldp_dap_report_bytes(report, &mut bytes, &mut len));
            let copy = std::slice::from_raw_parts(bytes, len).to_vec();
            ldp_dap_report_free(report);
            copy
        };
        outputs.push(prepare(&vdaf, &task_id, &keys, &encoded));
    }
    // SAFETY: a live handle, freed once.
    unsafe { ldp_prio3_free(prio3) };
    assert_eq!(histogram(&vdaf, &outputs), vec![0, 2, 0, 1, 0]);
}
