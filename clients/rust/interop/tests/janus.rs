//! `ldp_client`'s DAP-09 reports against an independent implementation: Janus's message definitions
//! (`janus_messages` 0.7.145, DAP-09), Janus's HPKE dispatch (`hpke-dispatch`) and prio's aggregators.
//!
//! For reports of each Prio3 type made through the Rust API (`ReportBuilder`) and through the C API
//! (`ldp_dap_report`), over several HPKE suites:
//!
//! * `janus_messages::Report::get_decoded` reads them, every field is the client's, and Janus re-encodes the same
//!   bytes;
//! * Janus's `InputShareAad` of the report is the client's, and each encrypted input share opens through
//!   `hpke-dispatch` with the aggregator's private key under DAP-09's `info` ("dap-09 input share" ‖ 0x01 ‖ role)
//!   and that `aad`; the plaintext is a `janus_messages::PlaintextInputShare` without extensions;
//! * its payload decodes as prio's `Prio3InputShare`, and the two shares with the public share verify and
//!   aggregate, through prio's own API, to the measurements' aggregate.
//!
//! The other way round, a report Janus's way (Janus's messages, sealed by `hpke-dispatch`) decodes and opens
//! through `ldp_client::dap`, as the aggregators' binding does; and the client's `HpkeConfig` and `HpkeConfigList`
//! encodings are Janus's, both ways.

use hpke_dispatch::{base_mode_open, base_mode_seal, Config as DispatchConfig};
use janus_messages::codec::{Decode as JanusDecode, Encode as JanusEncode};
use janus_messages::{
    HpkeAeadId, HpkeCiphertext as JanusCiphertext, HpkeConfig as JanusConfig, HpkeConfigId,
    HpkeConfigList as JanusConfigList, HpkeKdfId, HpkeKemId, HpkePublicKey, InputShareAad,
    PlaintextInputShare as JanusPlaintext, Report as JanusReport, ReportId, ReportMetadata as JanusMetadata, Role,
    TaskId, Time,
};
use ldp_client::dap::{
    input_share_aad, open_input_share, Aggregator as DapAggregator, HpkeConfig, HpkeConfigList, HpkeKeypair, HpkeSuite,
    Report, ReportBuilder, AEAD_AES_256_GCM, AEAD_CHACHA20_POLY1305, KDF_HKDF_SHA512, KEM_P256_HKDF_SHA256,
    KEM_P521_HKDF_SHA512,
};
use ldp_client::ffi::{
    ldp_dap_report, ldp_dap_report_bytes, ldp_dap_report_free, ldp_dap_report_with_random, ldp_prio3_free,
    ldp_prio3_new_count, ldp_prio3_new_histogram, ldp_prio3_new_sum, ldp_prio3_new_sum_vec, LdpDapReport, LdpPrio3,
    LdpStatus,
};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};
use prio::codec::ParameterizedDecode;
use prio::vdaf::prio3::{Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use prio::vdaf::{Aggregator, Client, Collector, Vdaf, VerifyTransition};

const CTX: &[u8] = b"ldp interop: janus_messages";

/// A Prio3 VDAF as the aggregators and the collector run it (prio's API).
trait Prio3Vdaf: Client<16> + Aggregator<32, 16> + Collector + Vdaf<AggregationParam = ()> {}
impl<V: Client<16> + Aggregator<32, 16> + Collector + Vdaf<AggregationParam = ()>> Prio3Vdaf for V {}

fn suites() -> [HpkeSuite; 3] {
    [
        HpkeSuite::DEFAULT,
        HpkeSuite { kem_id: KEM_P256_HKDF_SHA256, kdf_id: KDF_HKDF_SHA512, aead_id: AEAD_CHACHA20_POLY1305 },
        HpkeSuite { kem_id: KEM_P521_HKDF_SHA512, kdf_id: KDF_HKDF_SHA512, aead_id: AEAD_AES_256_GCM },
    ]
}

/// Fresh key pairs for the leader and the helper, of suites `i` and `i + 1`.
fn keypairs(i: usize) -> [HpkeKeypair; 2] {
    let s = suites();
    [HpkeKeypair::generate(1, s[i % 3]).unwrap(), HpkeKeypair::generate(2, s[(i + 1) % 3]).unwrap()]
}

/// The DAP-09 `info` of an input share, from the draft's text (§4.4.2) and Janus's role numbers.
fn info(role: Role) -> Vec<u8> {
    [b"dap-09 input share".as_slice(), &[Role::Client as u8, role as u8]].concat()
}

/// Checks one encoded report against Janus, opens both shares through hpke-dispatch, and runs both aggregators
/// (prio) on them: the two output shares, for aggregation.
fn check_report<V: Prio3Vdaf>(
    vdaf: &V,
    verify_key: &[u8; 32],
    task_id: &[u8; 32],
    bytes: &[u8],
    keys: &[HpkeKeypair; 2],
    time: u64,
) -> [V::OutputShare; 2] {
    // Janus reads every field as the client wrote it, and encodes the same bytes.
    let ours = Report::decode(bytes).unwrap();
    let janus = JanusReport::get_decoded(bytes).expect("janus_messages decodes the report");
    assert_eq!(janus.get_encoded().unwrap(), bytes, "Janus re-encodes other bytes");
    assert_eq!(janus.metadata().id().as_ref(), &ours.metadata.report_id);
    assert_eq!(janus.metadata().time().as_seconds_since_epoch(), time);
    assert_eq!(ours.metadata.time, time);
    assert_eq!(janus.public_share(), ours.public_share.as_slice());
    let sealed: [(&JanusCiphertext, Role, DapAggregator); 2] = [
        (janus.leader_encrypted_input_share(), Role::Leader, DapAggregator::Leader),
        (janus.helper_encrypted_input_share(), Role::Helper, DapAggregator::Helper),
    ];
    // Janus's AAD is the client's.
    let aad = InputShareAad::new(TaskId::from(*task_id), janus.metadata().clone(), janus.public_share().to_vec())
        .get_encoded()
        .unwrap();
    assert_eq!(aad, input_share_aad(task_id, &ours.metadata, &ours.public_share).unwrap());

    let public = V::PublicShare::get_decoded_with_param(vdaf, janus.public_share()).expect("a Prio3 public share");
    let mut states = Vec::new();
    let mut verifier_shares = Vec::new();
    for (agg, ((ciphertext, role, aggregator), key)) in sealed.into_iter().zip(keys).enumerate() {
        let payload = open_share(&ours, ciphertext, role, aggregator, key, task_id, &aad);
        // prio reads the payload as its input share and verifies it.
        let input = V::InputShare::get_decoded_with_param(&(vdaf, agg), &payload).expect("a Prio3 input share");
        let (state, share) = vdaf
            .verify_init(verify_key, CTX, agg, &(), janus.metadata().id().as_ref(), &public, &input)
            .expect("verify_init");
        states.push(state);
        verifier_shares.push(share);
    }
    let message = vdaf.verifier_shares_to_message(CTX, &(), verifier_shares).expect("the proof verifies");
    let mut outs = states.into_iter().map(|state| match vdaf.verify_next(CTX, state, message.clone()).unwrap() {
        VerifyTransition::Finish(out) => out,
        VerifyTransition::Continue(..) => panic!("Prio3 verifies in one round"),
    });
    [outs.next().unwrap(), outs.next().unwrap()]
}

/// One sealed input share of the report (`ours`), the `role`'s, sealed to `key`: the client's bytes, opened through
/// Janus's HPKE dispatch as DAP-09 says to the payload of the client's own opening, and not by the other
/// aggregator's `info`. Its payload, as Janus reads it.
fn open_share(
    ours: &Report,
    ciphertext: &JanusCiphertext,
    role: Role,
    aggregator: DapAggregator,
    key: &HpkeKeypair,
    task_id: &[u8; 32],
    aad: &[u8],
) -> Vec<u8> {
    let ours_c = ours.encrypted_input_share(aggregator);
    assert_eq!(u8::from(*ciphertext.config_id()), key.config().id);
    assert_eq!(u8::from(*ciphertext.config_id()), ours_c.config_id);
    assert_eq!(ciphertext.encapsulated_key(), ours_c.enc.as_slice());
    assert_eq!(ciphertext.payload(), ours_c.payload.as_slice());
    // Opened through Janus's HPKE dispatch, as DAP-09 says.
    let c = key.config();
    let suite = DispatchConfig::try_from_ids(c.aead_id, c.kdf_id, c.kem_id).unwrap();
    let plaintext = base_mode_open(
        &suite,
        key.private_key(),
        ciphertext.encapsulated_key(),
        &info(role),
        ciphertext.payload(),
        aad,
    )
    .unwrap_or_else(|e| panic!("the {role} share does not open through hpke-dispatch: {e}"));
    let plaintext = JanusPlaintext::get_decoded(&plaintext).expect("a PlaintextInputShare");
    assert!(plaintext.extensions().is_empty());
    // The same payload as the client's own opening.
    let payload = open_input_share(key, aggregator, task_id, &ours.metadata, &ours.public_share, ours_c).unwrap();
    assert_eq!(plaintext.payload(), payload.as_slice());
    // The other aggregator's info does not open it.
    let other = if role == Role::Leader { Role::Helper } else { Role::Leader };
    let suite_open = |info: &[u8], aad: &[u8]| {
        base_mode_open(&suite, key.private_key(), ciphertext.encapsulated_key(), info, ciphertext.payload(), aad)
    };
    assert!(suite_open(&info(other), aad).is_err());
    plaintext.payload().to_vec()
}

/// Aggregates the reports' output shares (prio) and unshards them.
fn unshard<V: Prio3Vdaf>(vdaf: &V, outputs: Vec<[V::OutputShare; 2]>) -> V::AggregateResult {
    let n = outputs.len();
    let (leader, helper): (Vec<_>, Vec<_>) = outputs.into_iter().map(|[l, h]| (l, h)).unzip();
    let shares = [leader, helper].map(|o| vdaf.aggregate(&(), o).unwrap());
    vdaf.unshard(&(), shares, n).unwrap()
}

/// Reports of `measurements` through the Rust API (one from the OS generator and one with given randomness each),
/// checked and aggregated: the aggregate result.
fn rust_reports<V: Prio3Vdaf>(vdaf: &V, typ: Prio3Type, measurements: &[Measurement], i: usize) -> V::AggregateResult {
    let task_id = [i as u8 + 0x30; 32];
    let keys = keypairs(i);
    let verify_key = [i as u8; 32];
    let builder = ReportBuilder::new(
        Prio3Client::new(typ, CTX).unwrap(),
        task_id,
        keys[0].config().clone(),
        keys[1].config().clone(),
    )
    .unwrap()
    .with_time_precision(600)
    .unwrap();
    let mut outputs = Vec::new();
    for (j, m) in measurements.iter().enumerate() {
        let report = builder.build(m, 1_700_000_599).unwrap();
        outputs.push(check_report(vdaf, &verify_key, &task_id, &report.encode().unwrap(), &keys, 1_700_000_400));
        let rand: Vec<u8> = (0..builder.rand_len()).map(|k| (k + j) as u8).collect();
        let report = builder.build_with_random(m, 1_700_000_000, &[j as u8; 16], &rand).unwrap();
        outputs.push(check_report(vdaf, &verify_key, &task_id, &report.encode().unwrap(), &keys, 1_699_999_800));
    }
    unshard(vdaf, outputs)
}

#[test]
fn rust_reports_decode_with_janus_open_and_verify() {
    let count = [true, false, true].map(Measurement::Count);
    assert_eq!(rust_reports(&Prio3Count::new_count(2).unwrap(), Prio3Type::Count, &count, 0), 4);
    let sum = [0, 255, 17].map(Measurement::Sum);
    let typ = Prio3Type::Sum { max_measurement: 255 };
    assert_eq!(rust_reports(&Prio3Sum::new_sum(2, 255).unwrap(), typ, &sum, 1), 2 * 272);
    let typ = Prio3Type::sum_vec(1000, 3);
    let Prio3Type::SumVec { chunk_length, .. } = typ else { unreachable!() };
    let vdaf = Prio3SumVec::new_sum_vec(2, 1000, 3, chunk_length).unwrap();
    let sum_vec = [vec![1, 2, 1000], vec![0, 0, 7]].map(Measurement::SumVec);
    assert_eq!(rust_reports(&vdaf, typ, &sum_vec, 2), vec![2, 4, 2014]);
    let typ = Prio3Type::histogram(6);
    let Prio3Type::Histogram { chunk_length, .. } = typ else { unreachable!() };
    let vdaf = Prio3Histogram::new_histogram(2, 6, chunk_length).unwrap();
    let hist = [5, 0, 5, 2].map(Measurement::Histogram);
    assert_eq!(rust_reports(&vdaf, typ, &hist, 3), vec![2, 0, 2, 0, 0, 4]);
}

/// A C call's status, with the thread's last error when it is not `LDP_OK`.
fn ok(status: LdpStatus) {
    if status != LdpStatus::LdpOk {
        // SAFETY: the message is a NUL-terminated string the library keeps until the thread's next call.
        let message = unsafe { std::ffi::CStr::from_ptr(ldp_client::ffi::ldp_last_error_message()) };
        panic!("{status:?}: {}", message.to_string_lossy());
    }
}

/// The bytes of a report of `values` (a C measurement) for the leader's and the helper's encoded configs, made with
/// `ldp_dap_report`, or with `ldp_dap_report_with_random` (the nonce `[9; 16]` and `rand`).
fn c_report(
    prio3: *mut LdpPrio3,
    values: &[u64],
    task_id: &[u8; 32],
    configs: [&[u8]; 2],
    rand: Option<&[u8]>,
) -> Vec<u8> {
    let [leader, helper] = configs;
    let mut report: *mut LdpDapReport = std::ptr::null_mut();
    let (mut bytes, mut len): (*const u8, usize) = (std::ptr::null(), 0);
    // SAFETY: live handles and buffers of the given lengths; the report is freed once its bytes are copied.
    unsafe {
        match rand {
            None => ok(ldp_dap_report(
                prio3,
                values.as_ptr(),
                values.len(),
                task_id.as_ptr(),
                32,
                1_700_000_123,
                3600,
                leader.as_ptr(),
                leader.len(),
                helper.as_ptr(),
                helper.len(),
                &mut report,
            )),
            Some(rand) => ok(ldp_dap_report_with_random(
                prio3,
                values.as_ptr(),
                values.len(),
                task_id.as_ptr(),
                32,
                1_700_000_123,
                3600,
                leader.as_ptr(),
                leader.len(),
                helper.as_ptr(),
                helper.len(),
                [9u8; 16].as_ptr(),
                16,
                rand.as_ptr(),
                rand.len(),
                &mut report,
            )),
        }
        ok(ldp_dap_report_bytes(report, &mut bytes, &mut len));
        let copy = std::slice::from_raw_parts(bytes, len).to_vec();
        ldp_dap_report_free(report);
        copy
    }
}

/// Reports of `measurements` (integers, as C takes them) through the C API: from the OS generator, checked and
/// aggregated; and one with given randomness, the Rust API's bytes.
fn c_reports<V: Prio3Vdaf>(
    vdaf: &V,
    prio3: *mut LdpPrio3,
    typ: Prio3Type,
    measurements: &[(Vec<u64>, Measurement)],
    i: usize,
) -> V::AggregateResult {
    let task_id = [i as u8 + 0x40; 32];
    let keys = keypairs(i + 1);
    let [leader, helper] = [0, 1].map(|k| keys[k].config().encode().unwrap());
    let verify_key = [0x11; 32];
    let mut outputs = Vec::new();
    for (values, m) in measurements {
        let encoded = c_report(prio3, values, &task_id, [&leader, &helper], None);
        outputs.push(check_report(vdaf, &verify_key, &task_id, &encoded, &keys, 1_699_999_200));

        // With given randomness: the Rust API's bytes.
        let builder = ReportBuilder::new(
            Prio3Client::new(typ, CTX).unwrap(),
            task_id,
            keys[0].config().clone(),
            keys[1].config().clone(),
        )
        .unwrap()
        .with_time_precision(3600)
        .unwrap();
        let rand = vec![0x42; builder.rand_len()];
        let want = builder.build_with_random(m, 1_700_000_123, &[9; 16], &rand).unwrap().encode().unwrap();
        let got = c_report(prio3, values, &task_id, [&leader, &helper], Some(&rand));
        assert_eq!(got, want, "C's report with given randomness is not the Rust API's");
        outputs.push(check_report(vdaf, &verify_key, &task_id, &got, &keys, 1_699_999_200));
    }
    // SAFETY: a live handle, freed once.
    unsafe { ldp_prio3_free(prio3) };
    unshard(vdaf, outputs)
}

#[test]
fn c_reports_decode_with_janus_open_and_verify() {
    let mut p: *mut LdpPrio3 = std::ptr::null_mut();
    // SAFETY: the context and the out pointer are valid for each call.
    unsafe { ok(ldp_prio3_new_count(CTX.as_ptr(), CTX.len(), &mut p)) };
    let count = [(vec![1], Measurement::Count(true)), (vec![1], Measurement::Count(true))];
    assert_eq!(c_reports(&Prio3Count::new_count(2).unwrap(), p, Prio3Type::Count, &count, 0), 4);

    unsafe { ok(ldp_prio3_new_sum(100, CTX.as_ptr(), CTX.len(), &mut p)) };
    let sum = [(vec![99], Measurement::Sum(99)), (vec![3], Measurement::Sum(3))];
    let typ = Prio3Type::Sum { max_measurement: 100 };
    assert_eq!(c_reports(&Prio3Sum::new_sum(2, 100).unwrap(), p, typ, &sum, 1), 204);

    unsafe { ok(ldp_prio3_new_sum_vec(7, 2, 0, CTX.as_ptr(), CTX.len(), &mut p)) };
    let typ = Prio3Type::sum_vec(7, 2);
    let Prio3Type::SumVec { chunk_length, .. } = typ else { unreachable!() };
    let vec = [(vec![7, 1], Measurement::SumVec(vec![7, 1]))];
    assert_eq!(c_reports(&Prio3SumVec::new_sum_vec(2, 7, 2, chunk_length).unwrap(), p, typ, &vec, 2), vec![14, 2]);

    unsafe { ok(ldp_prio3_new_histogram(3, 0, CTX.as_ptr(), CTX.len(), &mut p)) };
    let typ = Prio3Type::histogram(3);
    let Prio3Type::Histogram { chunk_length, .. } = typ else { unreachable!() };
    let hist = [(vec![2], Measurement::Histogram(2)), (vec![0], Measurement::Histogram(0))];
    assert_eq!(c_reports(&Prio3Histogram::new_histogram(2, 3, chunk_length).unwrap(), p, typ, &hist, 3), vec![2, 0, 2]);
}

/// A report built Janus's way (its messages, sealed through hpke-dispatch) from the client's shares decodes and
/// opens through `ldp_client::dap`, as the aggregators' binding does.
#[test]
fn janus_made_reports_open_through_the_client() {
    let keys = keypairs(0);
    let task_id = [0x77; 32];
    let client = Prio3Client::new(Prio3Type::histogram(4), CTX).unwrap();
    let shares = client.shard(&Measurement::Histogram(1)).unwrap();
    let metadata = JanusMetadata::new(ReportId::from(shares.nonce), Time::from_seconds_since_epoch(1_700_000_000));
    let aad =
        InputShareAad::new(TaskId::from(task_id), metadata.clone(), shares.public_share.clone()).get_encoded().unwrap();
    let seal = |k: usize, role: Role| {
        let c = keys[k].config();
        let plaintext = JanusPlaintext::new(Vec::new(), shares.input_shares[k].clone()).get_encoded().unwrap();
        let suite = DispatchConfig::try_from_ids(c.aead_id, c.kdf_id, c.kem_id).unwrap();
        let sealed = base_mode_seal(&suite, &c.public_key, &info(role), &plaintext, &aad).unwrap();
        JanusCiphertext::new(HpkeConfigId::from(c.id), sealed.encapped_key, sealed.ciphertext)
    };
    let janus = JanusReport::new(metadata, shares.public_share.clone(), seal(0, Role::Leader), seal(1, Role::Helper));
    let report = Report::decode(&janus.get_encoded().unwrap()).unwrap();
    assert_eq!(report.metadata.report_id, shares.nonce);
    assert_eq!(report.encode().unwrap(), janus.get_encoded().unwrap());
    for (k, aggregator) in [DapAggregator::Leader, DapAggregator::Helper].into_iter().enumerate() {
        let c = report.encrypted_input_share(aggregator);
        let payload =
            open_input_share(&keys[k], aggregator, &task_id, &report.metadata, &report.public_share, c).unwrap();
        assert_eq!(payload, shares.input_shares[k]);
    }
}

#[test]
fn hpke_configs_are_janus_encodings_both_ways() {
    let mut configs: Vec<HpkeConfig> = suites()
        .iter()
        .enumerate()
        .map(|(i, s)| HpkeKeypair::generate(i as u8 + 10, *s).unwrap().config().clone())
        .collect();
    // A suite the client does not seal with (P-384) still decodes, as DAP-09 lists may carry it.
    configs.push(HpkeConfig { id: 99, kem_id: 0x0011, kdf_id: 0x0002, aead_id: 0x0002, public_key: vec![4; 97] });
    for c in &configs {
        let ours = c.encode().unwrap();
        let janus = JanusConfig::get_decoded(&ours).expect("janus_messages decodes the HpkeConfig");
        assert_eq!(u8::from(*janus.id()), c.id);
        assert_eq!(u16::from(*janus.kem_id()), c.kem_id);
        assert_eq!(u16::from(*janus.kdf_id()), c.kdf_id);
        assert_eq!(u16::from(*janus.aead_id()), c.aead_id);
        assert_eq!(janus.public_key().as_ref(), c.public_key.as_slice());
        assert_eq!(janus.get_encoded().unwrap(), ours);
        // Janus's own construction encodes as the client decodes.
        let made = JanusConfig::new(
            HpkeConfigId::from(c.id),
            HpkeKemId::from(c.kem_id),
            HpkeKdfId::from(c.kdf_id),
            HpkeAeadId::from(c.aead_id),
            HpkePublicKey::from(c.public_key.clone()),
        );
        assert_eq!(&HpkeConfig::decode(&made.get_encoded().unwrap()).unwrap(), c);
    }
    let list = HpkeConfigList(configs.clone()).encode().unwrap();
    let janus = JanusConfigList::get_decoded(&list).expect("janus_messages decodes the HpkeConfigList");
    assert_eq!(janus.hpke_configs().len(), configs.len());
    assert_eq!(janus.get_encoded().unwrap(), list);
    let decoded = HpkeConfigList::decode(&janus.get_encoded().unwrap()).unwrap();
    assert_eq!(decoded.0, configs);
    assert_eq!(decoded.first_supported(), Some(&configs[0]));
}
