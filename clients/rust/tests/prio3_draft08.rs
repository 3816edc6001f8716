//! VDAF draft 08 through the Rust API (feature `prio`): [`VdafDraft`], the draft's refusals by meaning (no context
//! string; a Sum or SumVec bound that is no 2^b − 1, with the nearest allowed values), its recommended chunk lengths
//! (prio 0.16.8's), sharding from the OS generator that prio 0.16.8's aggregators verify and sum, and DAP-09 reports
//! of a draft 08 client (`ReportBuilder` unchanged) opened and prepared by prio 0.16.8. The draft's test vectors are
//! replayed by the crate's unit tests (`src/prio3/draft08/tests.rs`), on the client's own VDAF.

#![cfg(feature = "prio")]

mod common;

use common::vdaf08::{aggregate, Report as Shares};
use ldp_client::dap::{open_input_share, Aggregator, HpkeKeypair, HpkeSuite, ReportBuilder};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Shares, Prio3Type, VdafDraft};
use ldp_client::{json, Error, RefusalCode, Value};
use prio08::vdaf::prio3::{optimal_chunk_length, Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};

const D08: VdafDraft = VdafDraft::Draft08;

fn client(typ: Prio3Type) -> Prio3Client {
    Prio3Client::with_draft(D08, typ, b"").unwrap()
}

fn refusal(e: Error) -> ldp_client::Refusal {
    match e {
        Error::Refusal(r) => r,
        other => panic!("not a refusal: {other:?} ({other})"),
    }
}

fn parts(shares: &[Prio3Shares]) -> Vec<Shares<'_>> {
    shares.iter().map(|s| (&s.nonce, s.public_share.as_slice(), s.input_shares.as_slice())).collect()
}

#[test]
fn the_drafts_are_named_and_numbered() {
    assert_eq!(VdafDraft::default(), VdafDraft::Draft18);
    assert_eq!(VdafDraft::from_number(8), Some(D08));
    assert_eq!(VdafDraft::from_number(18), Some(VdafDraft::Draft18));
    assert_eq!(VdafDraft::from_number(9), None);
    assert_eq!((D08.name(), D08.to_string()), ("draft-irtf-cfrg-vdaf-08", "draft-irtf-cfrg-vdaf-08".into()));
    assert_eq!((D08.verify_key_len(), VdafDraft::Draft18.verify_key_len()), (16, 32));
    assert_eq!(Prio3Client::new(Prio3Type::Count, b"x").unwrap().draft(), VdafDraft::Draft18);
    let c = client(Prio3Type::Count);
    assert_eq!((c.draft(), c.verify_key_len(), c.rand_len(), c.ctx()), (D08, 16, 48, &[][..]));
}

#[test]
fn draft08_refuses_a_context_and_bounds_that_are_no_power_of_two_minus_one() {
    let r = refusal(Prio3Client::with_draft(D08, Prio3Type::Count, b"ctx").unwrap_err());
    assert_eq!(r.code, RefusalCode::ParamRelation);
    assert_eq!(r.fields_json(), r#"{"params":["ctx","draft"],"rule":"vdaf08_no_ctx","got":3}"#);
    assert!(r.to_string().contains("no application context string"), "{r}");

    let bits = |typ: Prio3Type, got: Value, nearest: Value| {
        let r = refusal(Prio3Client::with_draft(D08, typ, b"").unwrap_err());
        assert_eq!(r.code, RefusalCode::ParamRelation, "{typ:?}");
        let want =
            json!({"params": ["max_measurement", "draft"], "rule": "vdaf08_bits", "got": got, "nearest": nearest});
        assert_eq!(serde_json::from_str::<Value>(&r.fields_json()).unwrap(), want, "{typ:?}");
        r.to_string()
    };
    let text = bits(Prio3Type::Sum { max_measurement: 1000 }, json!(1000), json!([511, 1023]));
    assert_eq!(
        text,
        "parameters max_measurement, draft break the rule vdaf08_bits: VDAF draft 08 bounds a sum by a number of bits \
         b: max_measurement must be 2^b - 1 (got 1000; nearest allowed: 511, 1023)"
    );
    bits(Prio3Type::Sum { max_measurement: 2 }, json!(2), json!([1, 3]));
    bits(Prio3Type::Sum { max_measurement: u64::MAX - 1 }, json!(u64::MAX - 1), json!([u64::MAX >> 1, u64::MAX]));
    bits(Prio3Type::sum_vec_for(D08, 300, 4), json!(300), json!([255, 511]));
    let max = (1u128 << 127) - 1;
    bits(
        Prio3Type::SumVec { max_measurement: max - 1, length: 1, chunk_length: 1 },
        json!(max - 1),
        json!([max >> 1, max]),
    );

    // Ranges: a bound of 0, and past the most bits prio 0.16.8 takes (64 for a Sum, 127 for a SumVec entry).
    for (typ, max) in [
        (Prio3Type::Sum { max_measurement: 0 }, json!(u64::MAX)),
        (Prio3Type::SumVec { max_measurement: 1 << 127, length: 1, chunk_length: 1 }, json!(max)),
        (Prio3Type::SumVec { max_measurement: u128::MAX, length: 1, chunk_length: 1 }, json!(max)),
    ] {
        let r = refusal(Prio3Client::with_draft(D08, typ, b"").unwrap_err());
        assert_eq!((r.code, r.field("max")), (RefusalCode::ParamRange, Some(&max)), "{typ:?}");
    }
    // Every 2^b − 1 is taken: 1, 2^64 − 1 for a Sum (draft 18 refuses the latter: over Field64), 2^127 − 1 for a
    // SumVec entry.
    for max_measurement in [1, 3, 255, u64::MAX] {
        client(Prio3Type::Sum { max_measurement });
    }
    assert!(Prio3Client::new(Prio3Type::Sum { max_measurement: u64::MAX }, b"").is_err());
    client(Prio3Type::SumVec { max_measurement: max, length: 2, chunk_length: 2 });
    // The encoding limit holds as in draft 18.
    let r = refusal(Prio3Client::with_draft(D08, Prio3Type::histogram_for(D08, (1 << 20) + 1), b"").unwrap_err());
    assert_eq!(r.code, RefusalCode::ParamLimit);
}

/// `sum_vec_for` and `histogram_for` take the chosen draft's prio crate's `optimal_chunk_length`.
#[test]
fn recommended_chunk_lengths_are_the_drafts() {
    for length in [1, 2, 4, 11, 100, 1000, 65_536] {
        let want = Prio3Type::Histogram { length, chunk_length: optimal_chunk_length(length) };
        assert_eq!(Prio3Type::histogram_for(D08, length), want);
        let d18 = prio::vdaf::prio3::optimal_chunk_length(length);
        assert_eq!(Prio3Type::histogram_for(VdafDraft::Draft18, length), Prio3Type::histogram(length));
        assert_eq!(Prio3Type::histogram(length), Prio3Type::Histogram { length, chunk_length: d18 });
    }
    for (max, bits) in [(1u128, 1), (255, 8), (65_535, 16), (u128::from(u64::MAX), 64)] {
        let want =
            Prio3Type::SumVec { max_measurement: max, length: 10, chunk_length: optimal_chunk_length(10 * bits) };
        assert_eq!(Prio3Type::sum_vec_for(D08, max, 10), want);
        client(want);
    }
}

/// Shards from the OS generator, verified and aggregated by prio 0.16.8's aggregators, give back the sum; each
/// report has its own nonce and randomness; the shares have draft 08's lengths (16-byte seeds).
#[test]
fn os_randomness_shards_that_prio_0_16_8_verifies_and_sums() {
    let shard_all =
        |c: &Prio3Client, ms: &[Measurement]| -> Vec<Prio3Shares> { ms.iter().map(|m| c.shard(m).unwrap()).collect() };
    let count = shard_all(&client(Prio3Type::Count), &[true, false, true].map(Measurement::Count));
    assert_eq!(aggregate(&Prio3Count::new_count(2).unwrap(), &parts(&count)).unwrap(), 2);
    assert!(count.iter().all(|s| s.public_share.is_empty() && s.helper_share().len() == 32));

    let sum = client(Prio3Type::Sum { max_measurement: u64::MAX });
    let reports = shard_all(&sum, &[u64::MAX, 1, 0].map(Measurement::Sum));
    assert_eq!(aggregate(&Prio3Sum::new_sum(2, 64).unwrap(), &parts(&reports)).unwrap(), u128::from(u64::MAX) + 1);
    assert!(reports.iter().all(|s| s.public_share.len() == 32 && s.helper_share().len() == 48));

    let sum_vec = client(Prio3Type::SumVec { max_measurement: 7, length: 3, chunk_length: 2 });
    let reports = shard_all(&sum_vec, &[vec![7, 0, 1], vec![1, 2, 3]].map(Measurement::SumVec));
    let vdaf = Prio3SumVec::new_sum_vec(2, 3, 3, 2).unwrap();
    assert_eq!(aggregate(&vdaf, &parts(&reports)).unwrap(), vec![8, 2, 4]);

    let hist = client(Prio3Type::histogram_for(D08, 5));
    let Prio3Type::Histogram { chunk_length, .. } = hist.prio3_type() else { unreachable!() };
    let vdaf = Prio3Histogram::new_histogram(2, 5, chunk_length).unwrap();
    let reports = shard_all(&hist, &[0, 4, 4].map(Measurement::Histogram));
    assert_eq!(aggregate(&vdaf, &parts(&reports)).unwrap(), vec![1, 0, 0, 0, 2]);
    let (a, b) = (&reports[1], &reports[2]);
    assert!(a.nonce != b.nonce && a.leader_share() != b.leader_share() && a.helper_share() != b.helper_share());

    // Measurements are checked as in draft 18, before anything is drawn.
    let r = refusal(hist.shard(&Measurement::Histogram(5)).unwrap_err());
    assert_eq!(r.fields_json(), r#"{"got":5,"min":0,"max":4}"#);
    let r = refusal(sum_vec.shard(&Measurement::SumVec(vec![8, 0, 0])).unwrap_err());
    assert_eq!(r.fields_json(), r#"{"got":8,"min":0,"max":7,"index":0}"#);
}

/// A draft 08 client refuses caller-given randomness (prio 0.16.8 has no public sharding with it), saying why.
#[test]
fn shard_with_random_is_draft_18s_only() {
    let hist = client(Prio3Type::histogram_for(D08, 4));
    assert_eq!(hist.rand_len(), 80);
    let e = hist.shard_with_random(&Measurement::Histogram(1), &[0; 16], &[0; 80]).unwrap_err();
    assert!(matches!(e, Error::Value(_)), "{e:?}");
    assert!(e.to_string().starts_with("a VDAF draft 08 client cannot shard with given randomness: prio 0.16.8"), "{e}");
}

/// `ReportBuilder` takes a draft 08 client unchanged: each aggregator opens its share of the DAP-09 report, and
/// prio 0.16.8's aggregators verify the shares and aggregate them to the measurements. Given randomness is refused
/// as the client refuses it.
#[test]
fn dap_reports_of_a_draft08_client_open_and_aggregate() {
    let (leader, helper) =
        (HpkeKeypair::generate(1, HpkeSuite::DEFAULT).unwrap(), HpkeKeypair::generate(2, HpkeSuite::DEFAULT).unwrap());
    let task_id = [0x08; 32];
    let typ = Prio3Type::histogram_for(D08, 6);
    let builder = ReportBuilder::new(client(typ), task_id, leader.config().clone(), helper.config().clone())
        .unwrap()
        .with_time_precision(3600)
        .unwrap();
    let mut opened = Vec::new();
    for m in [5, 0, 5, 2] {
        let report = builder.build(&Measurement::Histogram(m), 1_700_000_123).unwrap();
        let report = ldp_client::dap::Report::decode(&report.encode().unwrap()).unwrap();
        let md = report.metadata;
        assert_eq!(md.time, 1_699_999_200);
        let open = |kp: &HpkeKeypair, a: Aggregator| {
            open_input_share(kp, a, &task_id, &md, &report.public_share, report.encrypted_input_share(a)).unwrap()
        };
        let inputs = vec![open(&leader, Aggregator::Leader), open(&helper, Aggregator::Helper)];
        opened.push(Prio3Shares {
            nonce: md.report_id,
            public_share: report.public_share.clone(),
            input_shares: inputs,
        });
    }
    let Prio3Type::Histogram { chunk_length, .. } = typ else { unreachable!() };
    let vdaf = Prio3Histogram::new_histogram(2, 6, chunk_length).unwrap();
    assert_eq!(aggregate(&vdaf, &parts(&opened)).unwrap(), vec![1, 0, 1, 0, 0, 2]);

    let e = builder.build_with_random(&Measurement::Histogram(1), 5, &[0; 16], &vec![0; builder.rand_len()]);
    assert!(e.unwrap_err().to_string().contains("cannot shard with given randomness"));
}
