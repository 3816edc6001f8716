//! VDAF draft 08 against its test vectors: `src/vdaf/test_vec/08/Prio3{Count,Sum,SumVec,Histogram}_{0,1}.json` of
//! prio 0.16.8, read from the package's source (`tests/common/prio_source.rs`, or `$LDP_PRIO08_VECTORS`).
//!
//! prio 0.16.8 has no public sharding with given randomness, so the byte-for-byte replay goes through its public
//! `prio3_test::check_test_vec` (feature `test-util`, a dev-dependency): it shards each report with the vector's
//! nonce and rand, and checks the public share, the input shares, the prepare shares and messages, the output
//! shares, the aggregate shares and the result against the vector. The VDAF it replays is **the very instance a
//! draft 08 [`Prio3Client`] of the vector's parameters shards with** (the vector's `bits` b given to the client as
//! `max_measurement` 2^b − 1). Then the same client shards each report's measurement from the OS generator: the
//! shares have the vector's lengths and the client's `rand_len` is the vector's, and prio 0.16.8's aggregators
//! verify them and aggregate them to the vector's result.

use std::collections::HashMap;

use prio08::vdaf::prio3_test::{check_test_vec, check_test_vec_custom_de};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::Vdaf;
use crate::prio3::{Measurement, Prio3Client, Prio3Type, VdafDraft};

#[path = "../../../tests/common/prio_source.rs"]
mod prio_source;

#[path = "../../../tests/common/vdaf08.rs"]
mod vdaf08;

/// The vector files: the four types of the client API, two each (2 and 3 aggregators).
const FILES: [&str; 8] = [
    "Prio3Count_0",
    "Prio3Count_1",
    "Prio3Sum_0",
    "Prio3Sum_1",
    "Prio3SumVec_0",
    "Prio3SumVec_1",
    "Prio3Histogram_0",
    "Prio3Histogram_1",
];

/// One vector: its name, type and text (`check_test_vec` parses the text itself).
struct Vector {
    name: &'static str,
    kind: &'static str,
    text: String,
    doc: Value,
}

fn vectors() -> Vec<Vector> {
    let dir = prio_source::vectors_dir("0.16.8", "08", "LDP_PRIO08_VECTORS");
    FILES
        .iter()
        .map(|name| {
            let path = dir.join(format!("{name}.json"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let doc = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            Vector { name, kind: name.split('_').next().unwrap(), text, doc }
        })
        .collect()
}

impl Vector {
    fn int(&self, k: &str) -> u64 {
        self.doc[k].as_u64().unwrap_or_else(|| panic!("{}: no {k}", self.name))
    }

    /// The vector's type as the client API takes it: `bits` b as `max_measurement` 2^b − 1.
    fn prio3_type(&self) -> Prio3Type {
        let max = |bits: u64| (1u128 << bits) - 1;
        match self.kind {
            "Prio3Count" => Prio3Type::Count,
            "Prio3Sum" => Prio3Type::Sum { max_measurement: u64::try_from(max(self.int("bits"))).unwrap() },
            "Prio3SumVec" => Prio3Type::SumVec {
                max_measurement: max(self.int("bits")),
                length: self.int("length") as usize,
                chunk_length: self.int("chunk_length") as usize,
            },
            "Prio3Histogram" => Prio3Type::Histogram {
                length: self.int("length") as usize,
                chunk_length: self.int("chunk_length") as usize,
            },
            other => panic!("{other}"),
        }
    }

    /// The draft 08 client of the vector's parameters and number of aggregators (no context string).
    fn client(&self) -> Prio3Client {
        let shares = u8::try_from(self.int("shares")).unwrap();
        Prio3Client::with_draft_and_aggregators(VdafDraft::Draft08, self.prio3_type(), shares, b"")
            .unwrap_or_else(|e| panic!("{}: the client refuses the vector's parameters: {e}", self.name))
    }

    fn reports(&self) -> &[Value] {
        self.doc["prep"].as_array().unwrap()
    }

    /// A report's measurement as the client API takes it.
    fn measurement(&self, report: &Value) -> Measurement {
        let m = &report["measurement"];
        match self.kind {
            "Prio3Count" => Measurement::Count(m.as_u64().unwrap() == 1),
            "Prio3Sum" => Measurement::Sum(m.as_u64().unwrap()),
            "Prio3SumVec" => {
                Measurement::SumVec(m.as_array().unwrap().iter().map(|x| x.as_u64().unwrap().into()).collect())
            }
            "Prio3Histogram" => Measurement::Histogram(m.as_u64().unwrap() as usize),
            other => panic!("{other}"),
        }
    }
}

/// A Prio3Count measurement as the vectors write it (0 or 1), for `check_test_vec_custom_de` (prio's own is private).
#[derive(Clone)]
struct CountMeasurement(u8);

impl<'de> Deserialize<'de> for CountMeasurement {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        u8::deserialize(d).map(CountMeasurement)
    }
}

impl From<CountMeasurement> for bool {
    fn from(m: CountMeasurement) -> bool {
        m.0 != 0
    }
}

/// The client's VDAF, handed to `check_test_vec` for the vector's parameters (which it passes back: checked to be
/// the ones the client was built of).
fn replay(v: &Vector, client: &Prio3Client) {
    let vdaf = client.draft08_vdaf().expect("a draft 08 client");
    let same_params = |params: &HashMap<String, Value>, shares: u8| {
        assert_eq!(usize::from(shares), client.aggregators(), "{}", v.name);
        for (k, want) in params.iter().filter(|(k, _)| ["bits", "length", "chunk_length"].contains(&k.as_str())) {
            assert_eq!(v.doc[k], *want, "{}: {k}", v.name);
        }
    };
    match vdaf {
        Vdaf::Count(p) => check_test_vec_custom_de::<CountMeasurement, bool, _, _, _, 16>(&v.text, |params, n| {
            same_params(params, n);
            p.clone()
        }),
        Vdaf::Sum(p) => check_test_vec(&v.text, |params, n| {
            same_params(params, n);
            p.clone()
        }),
        Vdaf::SumVec(p) => check_test_vec(&v.text, |params, n| {
            same_params(params, n);
            p.clone()
        }),
        Vdaf::Histogram(p) => check_test_vec(&v.text, |params, n| {
            same_params(params, n);
            p.clone()
        }),
    }
}

#[test]
fn every_draft08_vector_replays_on_the_clients_vdaf() {
    let all = vectors();
    let mut reports = 0;
    for v in &all {
        let client = v.client();
        assert_eq!(client.draft(), VdafDraft::Draft08);
        replay(v, &client);
        for r in v.reports() {
            assert_eq!(client.rand_len() * 2, r["rand"].as_str().unwrap().len(), "{}: rand_len", v.name);
            reports += 1;
        }
    }
    assert_eq!(all.len(), 8);
    eprintln!("replayed {} draft 08 vectors ({reports} reports) through prio 0.16.8's check_test_vec", all.len());
}

/// The client's own sharding (from the OS generator) of each report's measurement: the vector's share lengths, and
/// prio 0.16.8's aggregators verify the reports and aggregate them to the vector's result.
#[test]
fn the_clients_shards_have_the_vectors_lengths_and_aggregate_to_its_result() {
    for v in vectors() {
        let client = v.client();
        let mut sharded = Vec::new();
        for r in v.reports() {
            let shares = client.shard(&v.measurement(r)).unwrap();
            let len = |x: &Value| x.as_str().unwrap().len() / 2;
            assert_eq!(shares.public_share.len(), len(&r["public_share"]), "{}: public share", v.name);
            let want: Vec<usize> = r["input_shares"].as_array().unwrap().iter().map(len).collect();
            let got: Vec<usize> = shares.input_shares.iter().map(Vec::len).collect();
            assert_eq!(got, want, "{}: input share lengths", v.name);
            sharded.push(shares);
        }
        let reports: Vec<vdaf08::Report> =
            sharded.iter().map(|s| (&s.nonce, s.public_share.as_slice(), s.input_shares.as_slice())).collect();
        let result = match client.draft08_vdaf().unwrap() {
            Vdaf::Count(p) => Value::from(vdaf08::aggregate(p, &reports).unwrap()),
            Vdaf::Sum(p) => Value::from(vdaf08::aggregate(p, &reports).unwrap()),
            Vdaf::SumVec(p) => Value::from(vdaf08::aggregate(p, &reports).unwrap()),
            Vdaf::Histogram(p) => Value::from(vdaf08::aggregate(p, &reports).unwrap()),
        };
        assert_eq!(result, v.doc["agg_result"], "{}: the aggregate of the client's shards", v.name);
    }
}

/// A draft 08 client refuses to shard with given randomness, saying why.
#[test]
fn shard_with_random_is_refused_in_draft08() {
    let client = Prio3Client::with_draft(VdafDraft::Draft08, Prio3Type::Count, b"").unwrap();
    let e = client.shard_with_random(&Measurement::Count(true), &[0; 16], &[0; 48]).unwrap_err();
    assert!(matches!(e, crate::Error::Value(_)), "{e:?}");
    assert!(e.to_string().contains("cannot shard with given randomness") && e.to_string().contains("0.16.8"), "{e}");
}
