//! Prio3 sharding (feature `prio`) against the VDAF draft 18 test vectors, read from the prio crate's own source
//! (tests/common/prio3.rs says where): every vector of Prio3Count, Prio3Sum, Prio3SumVec and Prio3Histogram.
//!
//! * Each report's `shard` through this crate's API ([`Prio3Client::shard_with_random`] with the vector's nonce
//!   and rand) gives the vector's public share and input shares byte for byte.
//! * The aggregators' side runs through the prio crate (the client API has none): the vector's operations in its
//!   order, `verify_init` with the verify key (the verifier shares), `verifier_shares_to_message` (the messages),
//!   `verify_next` (the output shares), `aggregate` (the aggregate shares) and `unshard` (the result), each output
//!   compared with the vector's; so the whole vector is replayed.
//! * Every negative vector (`*_bad_*`) is refused at the operation the vector says fails, and at no other.
//!
//! Then sharding with the OS generator, aggregated by prio, gives back the sum of the measurements, and bad
//! parameters and measurements are refused by meaning.

#![cfg(feature = "prio")]

mod common;

use std::collections::HashMap;

use common::prio3::{hex, measurement, unhex, vectors, Vector, TYPES};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Shares, Prio3Type, MAX_CTX_LEN, MAX_ENCODED_LEN, NONCE_LEN};
use ldp_client::{json, Error, RefusalCode, RefusalKind, Value};
use prio::codec::{Encode, ParameterizedDecode};
use prio::vdaf::prio3::{Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec};
use prio::vdaf::{Aggregator, Client, Collector, Vdaf, VdafError, VerifyTransition};

/// A VDAF of the client API's types, as the aggregators and the collector run it (through the prio crate).
trait Prio3Vdaf: Client<16> + Aggregator<32, 16> + Collector + Vdaf<AggregationParam = ()> {
    /// The aggregate result as the vectors write it.
    fn result_json(result: &Self::AggregateResult) -> Value;
}

impl Prio3Vdaf for Prio3Count {
    fn result_json(result: &u64) -> Value {
        json!(result)
    }
}

impl Prio3Vdaf for Prio3Sum {
    fn result_json(result: &u64) -> Value {
        json!(result)
    }
}

impl Prio3Vdaf for Prio3SumVec {
    fn result_json(result: &Vec<u128>) -> Value {
        Value::Array(result.iter().map(|x| Value::from(*x)).collect())
    }
}

impl Prio3Vdaf for Prio3Histogram {
    fn result_json(result: &Vec<u128>) -> Value {
        Value::Array(result.iter().map(|x| Value::from(*x)).collect())
    }
}

#[path = "prio3_vectors/replay.rs"]
mod replay;

use replay::replay;

#[test]
fn every_vector_of_the_four_types_replays() {
    let all = vectors();
    let mut per_type: HashMap<&str, (usize, usize)> = HashMap::new();
    let (mut sharded, mut operations) = (0, 0);
    for v in &all {
        let a = v.aggregators();
        let done = match v.prio3_type() {
            Prio3Type::Count => replay(v, &Prio3Count::new_count(a).unwrap()),
            Prio3Type::Sum { max_measurement } => replay(v, &Prio3Sum::new_sum(a, max_measurement).unwrap()),
            Prio3Type::SumVec { max_measurement, length, chunk_length } => {
                replay(v, &Prio3SumVec::new_sum_vec(a, max_measurement, length, chunk_length).unwrap())
            }
            Prio3Type::Histogram { length, chunk_length } => {
                replay(v, &Prio3Histogram::new_histogram(a, length, chunk_length).unwrap())
            }
            other => panic!("{other:?}"),
        };
        let entry = per_type.entry(v.kind).or_default();
        if v.is_bad() {
            let at = done.refused_at.unwrap_or_else(|| panic!("{}: nothing failed", v.name));
            eprintln!("{}: refused at {at}", v.name);
            entry.1 += 1;
        } else {
            assert!(done.refused_at.is_none(), "{}", v.name);
            // A positive vector shards every report, and ends with the aggregate result.
            assert_eq!(done.sharded, v.reports().len(), "{}: every report sharded", v.name);
            entry.0 += 1;
        }
        sharded += done.sharded;
        operations += done.operations;
    }
    // Draft 18's vectors of these types in prio 0.18.1: 3 Count (4 negative), 3 Sum, 2 SumVec, 3 Histogram (4
    // negative). Fewer means the folder moved or the filter broke.
    for t in TYPES {
        let (good, _) = per_type.get(t).copied().unwrap_or_default();
        assert!(good >= 2, "{t}: {good} positive vectors replayed");
    }
    let bad: usize = per_type.values().map(|(_, b)| b).sum();
    assert!(all.len() >= 19 && bad >= 8, "{} vectors, {bad} negative", all.len());
    eprintln!("replayed {} vectors ({bad} negative): {sharded} reports sharded, {operations} operations", all.len());
}

/// The aggregators' side of `reports` (through the prio crate) with a fresh verify key: the aggregate result, or
/// the first refusal (a report that fails verification).
fn aggregate<V: Prio3Vdaf>(vdaf: &V, ctx: &[u8], reports: &[Prio3Shares]) -> Result<V::AggregateResult, VdafError> {
    let mut verify_key = [0u8; 32];
    getrandom::fill(&mut verify_key).unwrap();
    let n = vdaf.num_aggregators();
    let mut outs: Vec<Vec<V::OutputShare>> = vec![Vec::new(); n];
    for shares in reports {
        let public = V::PublicShare::get_decoded_with_param(vdaf, &shares.public_share).expect("decodes");
        let mut states = Vec::new();
        let mut verifier_shares = Vec::new();
        for (agg, bytes) in shares.input_shares.iter().enumerate() {
            let input = V::InputShare::get_decoded_with_param(&(vdaf, agg), bytes).expect("decodes");
            let (state, share) = vdaf.verify_init(&verify_key, ctx, agg, &(), &shares.nonce, &public, &input)?;
            states.push(state);
            verifier_shares.push(share);
        }
        let message = vdaf.verifier_shares_to_message(ctx, &(), verifier_shares)?;
        for (agg, state) in states.into_iter().enumerate() {
            match vdaf.verify_next(ctx, state, message.clone())? {
                VerifyTransition::Finish(out) => outs[agg].push(out),
                VerifyTransition::Continue(..) => panic!("Prio3 verifies in one round"),
            }
        }
    }
    let agg_shares = outs.into_iter().map(|o| vdaf.aggregate(&(), o)).collect::<Result<Vec<_>, _>>()?;
    vdaf.unshard(&(), agg_shares, reports.len())
}

fn shard_all(client: &Prio3Client, measurements: &[Measurement]) -> Vec<Prio3Shares> {
    measurements.iter().map(|m| client.shard(m).unwrap()).collect()
}

/// Sharding from the OS generator, verified and aggregated by two aggregators (the prio crate), gives back the
/// sum; every report has its own nonce; the helper's share is its 32-byte seed (64 bytes with a joint-randomness
/// blind).
#[test]
fn os_randomness_shards_that_two_aggregators_verify_and_sum() {
    let ctx = b"ldp tests: two aggregators";
    let count = Prio3Client::new(Prio3Type::Count, ctx).unwrap();
    let reports = shard_all(&count, &[true, false, true, true].map(Measurement::Count));
    assert_eq!(aggregate(&Prio3Count::new_count(2).unwrap(), ctx, &reports).unwrap(), 3);
    assert!(reports.iter().all(|s| s.public_share.is_empty() && s.helper_share().len() == 32));

    let sum = Prio3Client::new(Prio3Type::Sum { max_measurement: 1000 }, ctx).unwrap();
    let reports = shard_all(&sum, &[0, 1000, 17].map(Measurement::Sum));
    assert_eq!(aggregate(&Prio3Sum::new_sum(2, 1000).unwrap(), ctx, &reports).unwrap(), 1017);

    let typ = Prio3Type::SumVec { max_measurement: 300, length: 3, chunk_length: 3 };
    let sum_vec = Prio3Client::new(typ, ctx).unwrap();
    let reports = shard_all(&sum_vec, &[vec![1, 2, 300], vec![0, 5, 1]].map(Measurement::SumVec));
    assert_eq!(aggregate(&Prio3SumVec::new_sum_vec(2, 300, 3, 3).unwrap(), ctx, &reports).unwrap(), vec![1, 7, 301]);
    assert!(reports.iter().all(|s| s.public_share.len() == 64 && s.helper_share().len() == 64));

    let hist = Prio3Client::new(Prio3Type::Histogram { length: 5, chunk_length: 2 }, ctx).unwrap();
    let reports = shard_all(&hist, &[0, 4, 4, 2].map(Measurement::Histogram));
    assert_eq!(
        aggregate(&Prio3Histogram::new_histogram(2, 5, 2).unwrap(), ctx, &reports).unwrap(),
        vec![1, 0, 1, 0, 2]
    );

    // The same measurement twice: other nonces, other shares.
    let (a, b) = (hist.shard(&Measurement::Histogram(1)).unwrap(), hist.shard(&Measurement::Histogram(1)).unwrap());
    assert!(a.nonce != b.nonce && a.leader_share() != b.leader_share() && a.helper_share() != b.helper_share());

    // Aggregators of another context reject the report (the shares and the proof are bound to it).
    let e = aggregate(&Prio3Histogram::new_histogram(2, 5, 2).unwrap(), b"another task", &[a]).unwrap_err();
    assert_eq!(e.to_string(), "vdaf error: proof verifier check failed");
}

/// The refusal inside `e` (panics with `e` otherwise).
fn refusal(e: Error) -> ldp_client::Refusal {
    match e {
        Error::Refusal(r) => r,
        other => panic!("not a refusal: {other:?} ({other})"),
    }
}

#[test]
fn bad_parameters_are_refused_by_meaning() {
    let param_range = |typ: Prio3Type, param: &str, fields: Value| {
        let r = refusal(Prio3Client::new(typ, b"").unwrap_err());
        assert_eq!((r.kind, r.code), (RefusalKind::Value, RefusalCode::ParamRange), "{typ:?}");
        assert_eq!(r.field("param"), Some(&json!(param)), "{typ:?}");
        for (k, v) in fields.as_object().unwrap() {
            assert_eq!(r.field(k), Some(v), "{typ:?}: field {k} of {r}");
        }
        eprintln!("{typ:?}: {r}");
    };
    param_range(Prio3Type::Sum { max_measurement: 0 }, "max_measurement", json!({"got": 0, "min": 1}));
    // The field's modulus is 2^64 - 2^32 + 1: the largest measurement 2^64 - 2^32.
    param_range(
        Prio3Type::Sum { max_measurement: u64::MAX },
        "max_measurement",
        json!({"got": u64::MAX, "max": 18446744069414584320u64}),
    );
    param_range(Prio3Type::SumVec { max_measurement: 0, length: 1, chunk_length: 1 }, "max_measurement", json!({}));
    param_range(
        Prio3Type::SumVec { max_measurement: u128::MAX, length: 1, chunk_length: 1 },
        "max_measurement",
        json!({}),
    );
    param_range(Prio3Type::SumVec { max_measurement: 1, length: 0, chunk_length: 1 }, "length", json!({"min": 1}));
    param_range(Prio3Type::SumVec { max_measurement: 1, length: 1, chunk_length: 0 }, "chunk_length", json!({}));
    param_range(Prio3Type::Histogram { length: 0, chunk_length: 1 }, "length", json!({"got": 0}));
    param_range(Prio3Type::Histogram { length: 4, chunk_length: 0 }, "chunk_length", json!({"got": 0}));

    let r = refusal(Prio3Client::with_aggregators(Prio3Type::Count, 1, b"").unwrap_err());
    assert_eq!(r.code, RefusalCode::ParamRange);
    assert_eq!(r.fields_json(), r#"{"param":"aggregators","got":1,"min":2,"max":254}"#);
    assert!(Prio3Client::with_aggregators(Prio3Type::Count, 255, b"").is_err());

    // A measurement that would encode into over 2^20 field elements (the largest allowed is fine).
    let r = refusal(
        Prio3Client::new(Prio3Type::Histogram { length: MAX_ENCODED_LEN + 1, chunk_length: 1024 }, b"").unwrap_err(),
    );
    assert_eq!(r.code, RefusalCode::ParamLimit);
    assert_eq!(r.fields_json(), r#"{"limit":"prio3_encoded_length","got":1048577,"max":1048576}"#);
    let typ = Prio3Type::SumVec { max_measurement: u128::from(u32::MAX), length: 32_769, chunk_length: 1024 };
    assert_eq!(refusal(Prio3Client::new(typ, b"").unwrap_err()).field("got"), Some(&json!(32 * 32_769)));
    assert!(Prio3Client::new(Prio3Type::Histogram { length: MAX_ENCODED_LEN, chunk_length: 1024 }, b"").is_ok());

    // The context string: the XOF's domain separation tag holds at most 65,535 bytes (the prio crate panics past it).
    let r = refusal(Prio3Client::new(Prio3Type::Count, &vec![7; MAX_CTX_LEN + 1]).unwrap_err());
    assert_eq!(r.code, RefusalCode::ParamLength);
    assert_eq!(r.fields_json(), r#"{"param":"ctx","got":65528,"min":0,"max":65527}"#);
    let long = Prio3Client::new(Prio3Type::Count, &vec![7; MAX_CTX_LEN]).unwrap();
    long.shard(&Measurement::Count(true)).unwrap();
}

/// The constructors with the recommended chunk length take the prio crate's `optimal_chunk_length` of the encoded
/// length (what the aggregators' binding takes when given none); past the encoding limit the client refuses them.
#[test]
fn recommended_chunk_lengths_are_prios() {
    use prio::vdaf::prio3::optimal_chunk_length;
    for length in [1, 2, 4, 11, 100, 1000, 65_536] {
        let want = Prio3Type::Histogram { length, chunk_length: optimal_chunk_length(length) };
        assert_eq!(Prio3Type::histogram(length), want);
    }
    for (max, bits) in [(1u128, 1), (255, 8), (256, 9), (32_000, 15), (u128::from(u64::MAX), 64)] {
        let want =
            Prio3Type::SumVec { max_measurement: max, length: 10, chunk_length: optimal_chunk_length(10 * bits) };
        assert_eq!(Prio3Type::sum_vec(max, 10), want);
    }
    let too_long = Prio3Type::histogram(usize::MAX);
    assert_eq!(refusal(Prio3Client::new(too_long, b"").unwrap_err()).code, RefusalCode::ParamLimit);
    let too_long = Prio3Type::sum_vec(u128::MAX, usize::MAX);
    assert_eq!(refusal(Prio3Client::new(too_long, b"").unwrap_err()).code, RefusalCode::ParamRange);
    assert!(Prio3Client::new(Prio3Type::sum_vec(0, 10), b"").is_err());
    Prio3Client::new(Prio3Type::sum_vec(255, 10), b"").unwrap().shard(&Measurement::SumVec(vec![255; 10])).unwrap();
}

#[test]
fn bad_measurements_are_refused_before_sharding() {
    let value_range = |client: &Prio3Client, m: Measurement, want: &str| {
        let r = refusal(client.shard(&m).unwrap_err());
        assert_eq!((r.kind, r.code), (RefusalKind::Value, RefusalCode::ValueRange));
        assert_eq!(r.fields_json(), want);
        eprintln!("{m:?}: {r}");
    };
    let sum = Prio3Client::new(Prio3Type::Sum { max_measurement: 255 }, b"").unwrap();
    value_range(&sum, Measurement::Sum(256), r#"{"got":256,"min":0,"max":255}"#);
    sum.shard(&Measurement::Sum(255)).unwrap();

    // A histogram index at or past the length (the prio crate 0.18.1 itself would panic: index out of bounds).
    let hist = Prio3Client::new(Prio3Type::Histogram { length: 4, chunk_length: 2 }, b"").unwrap();
    value_range(&hist, Measurement::Histogram(4), r#"{"got":4,"min":0,"max":3}"#);
    value_range(&hist, Measurement::Histogram(usize::MAX), &format!(r#"{{"got":{},"min":0,"max":3}}"#, usize::MAX));

    let typ = Prio3Type::SumVec { max_measurement: 32_000, length: 3, chunk_length: 7 };
    let sum_vec = Prio3Client::new(typ, b"").unwrap();
    value_range(&sum_vec, Measurement::SumVec(vec![0, 32_001, 5]), r#"{"got":32001,"min":0,"max":32000,"index":1}"#);
    let e = sum_vec.shard(&Measurement::SumVec(vec![1, 2])).unwrap_err();
    assert!(matches!(e, Error::Value(_)), "{e:?}");
    assert_eq!(e.to_string(), "a Prio3SumVec measurement has 3 entries (the type's length), got 2");
    let r = refusal(sum_vec.shard(&Measurement::SumVec(vec![1, 32_001, 2])).unwrap_err());
    assert_eq!(r.to_string(), "entry 1 of the value, 32001, is out of range: must be >= 0 and <= 32000");

    // A measurement of another type.
    let r = refusal(hist.shard(&Measurement::Count(true)).unwrap_err());
    assert_eq!((r.kind, r.code), (RefusalKind::Type, RefusalCode::ValueType));
    assert_eq!(r.fields_json(), r#"{"expected":"Prio3Histogram","got":"Prio3Count"}"#);

    // Caller-given randomness of the wrong length.
    let e = hist.shard_with_random(&Measurement::Histogram(1), &[0; 16], &[0; 64]).unwrap_err();
    assert_eq!(e.to_string(), "Prio3Histogram with 2 aggregators takes 128 bytes of sharding randomness, got 64");
    assert!(hist.shard_with_random(&Measurement::Histogram(1), &[0; 16], &[0; 128]).is_ok());
}
