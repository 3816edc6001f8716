//! Poplar1 (feature `poplar1`) against VDAF draft 18's test vectors (`conformance/dap/poplar1`, copied from the
//! prio crate 0.18.1's `src/vdaf/test_vec/18`):
//!
//! * each report's `shard` through this crate's API ([`Poplar1Client::shard_with_random`] with the vector's nonce
//!   and rand) gives the vector's public share and input shares byte for byte;
//! * the aggregators' side runs through the prio crate (the client API has none), the vector's operations in its
//!   order: `verify_init` for the vector's aggregation parameter (the round 0 verifier shares), both rounds of
//!   `verifier_shares_to_message` and `verify_next` (the messages, round 1's shares, the output shares),
//!   `aggregate` and `unshard`, each compared with the vector's; the negative vector is refused at the operation it
//!   marks, and at no other.
//!
//! Then the DAP-09 report of a Poplar1 measurement ([`Poplar1ReportBuilder`]) opens at each aggregator and verifies
//! through the crate to the measurement's prefix counts, and given randomness makes the same bytes every time.

#![cfg(feature = "poplar1")]

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::poplar1::{verify, Vdaf};
use common::prio3::{hex, unhex};
use ldp_client::dap::{open_input_share, Aggregator as Role, HpkeKeypair, HpkeSuite, Poplar1ReportBuilder};
use ldp_client::poplar1::{Poplar1Client, RAND_LEN};
use ldp_client::Value;
use prio::codec::{Decode, Encode, ParameterizedDecode};
use prio::idpf::IdpfInput;
use prio::vdaf::poplar1::{
    Poplar1AggregationParam, Poplar1FieldVec, Poplar1InputShare, Poplar1PublicShare, Poplar1VerifierMessage,
    Poplar1VerifierState,
};
use prio::vdaf::{Aggregatable, Aggregator, Collector, VerifyTransition};

/// `conformance/dap/poplar1`'s vectors: name and JSON, sorted by name.
fn vectors() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/dap/poplar1");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("Poplar1_") && n.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| (n.clone(), serde_json::from_slice(&std::fs::read(dir.join(&n)).unwrap()).unwrap()))
        .collect()
}

fn bytes(v: &Value) -> Vec<u8> {
    unhex(v.as_str().unwrap_or_else(|| panic!("{v} is no hex string")))
}

/// One vector's replay: the crate's VDAF, the client, the parameter, and what the operations made so far.
struct Replay<'a> {
    doc: &'a Value,
    vdaf: Vdaf,
    client: Poplar1Client,
    param: Poplar1AggregationParam,
    states: HashMap<(usize, usize, usize), Poplar1VerifierState>,
    outs: HashMap<(usize, usize), Poplar1FieldVec>,
    aggs: Vec<Poplar1FieldVec>,
}

impl<'a> Replay<'a> {
    fn new(doc: &'a Value) -> Self {
        let bits = doc["bits"].as_u64().unwrap() as usize;
        let client = Poplar1Client::new(bits, &bytes(&doc["ctx"])).unwrap();
        let param = Poplar1AggregationParam::get_decoded(&bytes(&doc["agg_param"])).unwrap();
        let vdaf = Vdaf::new_turboshake128(bits);
        Replay { doc, vdaf, client, param, states: HashMap::new(), outs: HashMap::new(), aggs: Vec::new() }
    }

    fn report(&self, i: usize) -> &'a Value {
        &self.doc["reports"][i]
    }

    fn ctx(&self) -> Vec<u8> {
        bytes(&self.doc["ctx"])
    }

    /// Runs one operation: `Err` with the crate's refusal, `Ok` when every output matched.
    fn run(&mut self, op: &Value) -> Result<(), String> {
        let (i, agg, round) = (op["report_index"].as_u64(), op["aggregator_id"].as_u64(), op["round"].as_u64());
        let (i, agg, round) = (i.map(|x| x as usize), agg.map(|x| x as usize), round.map(|x| x as usize));
        match op["operation"].as_str().unwrap() {
            "shard" => self.shard(i.unwrap()),
            "verify_init" => self.init(i.unwrap(), agg.unwrap()),
            "verifier_shares_to_message" => self.message(i.unwrap(), round.unwrap()),
            "verify_next" => self.next(i.unwrap(), round.unwrap(), agg.unwrap()),
            "aggregate" => {
                let mut share = self.vdaf.aggregate_init(&self.param);
                for r in 0..self.doc["reports"].as_array().unwrap().len() {
                    share.accumulate(&self.outs[&(r, agg.unwrap())]).map_err(|e| e.to_string())?;
                }
                assert_eq!(hex(&share.get_encoded().unwrap()), self.doc["agg_shares"][agg.unwrap()]);
                self.aggs.push(share);
                Ok(())
            }
            "unshard" => {
                let n = self.doc["reports"].as_array().unwrap().len();
                let result = self.vdaf.unshard(&self.param, self.aggs.clone(), n).map_err(|e| e.to_string())?;
                assert_eq!(Value::from(result), self.doc["agg_result"]);
                Ok(())
            }
            other => panic!("an operation {other}"),
        }
    }

    fn shard(&self, i: usize) -> Result<(), String> {
        let r = self.report(i);
        let m: Vec<bool> = r["measurement"].as_array().unwrap().iter().map(|b| b.as_bool().unwrap()).collect();
        let nonce: [u8; 16] = bytes(&r["nonce"]).try_into().unwrap();
        let s = self.client.shard_with_random(&m, &nonce, &bytes(&r["rand"])).map_err(|e| e.to_string())?;
        assert_eq!(hex(&s.public_share), r["public_share"]);
        assert_eq!(Value::from(s.input_shares.iter().map(|x| hex(x)).collect::<Vec<_>>()), r["input_shares"]);
        assert_eq!(s.leader_share().len(), self.client.input_share_len());
        Ok(())
    }

    fn init(&mut self, i: usize, agg: usize) -> Result<(), String> {
        let r = self.report(i);
        let public = Poplar1PublicShare::get_decoded_with_param(&self.vdaf, &bytes(&r["public_share"])).unwrap();
        let input =
            Poplar1InputShare::get_decoded_with_param(&(&self.vdaf, agg), &bytes(&r["input_shares"][agg])).unwrap();
        let nonce: [u8; 16] = bytes(&r["nonce"]).try_into().unwrap();
        let key: [u8; 32] = bytes(&self.doc["verify_key"]).try_into().unwrap();
        let (state, share) = self
            .vdaf
            .verify_init(&key, &self.ctx(), agg, &self.param, &nonce, &public, &input)
            .map_err(|e| e.to_string())?;
        assert_eq!(hex(&share.get_encoded().unwrap()), r["verifier_shares"][0][agg]);
        self.states.insert((i, 0, agg), state);
        Ok(())
    }

    fn message(&self, i: usize, round: usize) -> Result<(), String> {
        let r = self.report(i);
        let state = &self.states[&(i, round, 0)];
        let shares = (0..2)
            .map(|a| Poplar1FieldVec::get_decoded_with_param(state, &bytes(&r["verifier_shares"][round][a])).unwrap())
            .collect::<Vec<_>>();
        let message =
            self.vdaf.verifier_shares_to_message(&self.ctx(), &self.param, shares).map_err(|e| e.to_string())?;
        assert_eq!(hex(&message.get_encoded().unwrap()), r["verifier_messages"][round]);
        Ok(())
    }

    fn next(&mut self, i: usize, round: usize, agg: usize) -> Result<(), String> {
        let r = self.report(i);
        let state = self.states[&(i, round - 1, agg)].clone();
        let message =
            Poplar1VerifierMessage::get_decoded_with_param(&state, &bytes(&r["verifier_messages"][round - 1])).unwrap();
        match self.vdaf.verify_next(&self.ctx(), state, message).map_err(|e| e.to_string())? {
            VerifyTransition::Continue(next, share) => {
                assert_eq!(round, 1, "the crate continues after round 0 only");
                assert_eq!(hex(&share.get_encoded().unwrap()), r["verifier_shares"][1][agg]);
                self.states.insert((i, 1, agg), next);
            }
            VerifyTransition::Finish(out) => {
                assert_eq!(round, 2, "the crate finishes after round 1 only");
                assert_eq!(hex(&out.get_encoded().unwrap()), r["out_shares"][agg]);
                self.outs.insert((i, agg), out);
            }
        }
        Ok(())
    }
}

#[test]
fn every_poplar1_vector_replays() {
    let all = vectors();
    assert_eq!(all.len(), 7, "draft 18's Poplar1 vectors: six positive, one negative");
    let mut sharded = 0;
    for (name, doc) in &all {
        let mut replay = Replay::new(doc);
        let ops = doc["operations"].as_array().unwrap();
        for (k, op) in ops.iter().enumerate() {
            let done = replay.run(op);
            if op["success"].as_bool().unwrap() {
                done.unwrap_or_else(|e| panic!("{name}: {op} refused: {e}"));
                sharded += usize::from(op["operation"] == "shard");
            } else {
                let e = done.expect_err(&format!("{name}: {op} succeeded"));
                assert!(name.contains("_bad_") && k == ops.len() - 1, "{name}: {op} refused ({e})");
                eprintln!("{name}: refused at {op} ({e})");
            }
        }
    }
    assert_eq!(sharded, 6, "every positive vector's report sharded through the client API");
}

#[test]
fn a_dap_report_opens_and_counts_its_string() {
    let task_id = [9u8; 32];
    let (leader, helper) =
        (HpkeKeypair::generate(1, HpkeSuite::DEFAULT).unwrap(), HpkeKeypair::generate(2, HpkeSuite::DEFAULT).unwrap());
    let client = Poplar1Client::new(16, &task_id).unwrap();
    let builder = Poplar1ReportBuilder::new(client.clone(), task_id, leader.config().clone(), helper.config().clone())
        .unwrap()
        .with_time_precision(3600)
        .unwrap();
    let m = client.measurement_from_bytes(b"hi").unwrap();
    let report = builder.build(&m, 1_700_000_123).unwrap();
    assert_eq!(report.metadata.time, 1_699_999_200);
    let open = |key: &HpkeKeypair, role| {
        let ct = report.encrypted_input_share(role);
        open_input_share(key, role, &task_id, &report.metadata, &report.public_share, ct).unwrap()
    };
    let (l, h) = (open(&leader, Role::Leader), open(&helper, Role::Helper));
    let vdaf = Vdaf::new_turboshake128(16);
    let prefixes = [b"hh", b"hi", b"ih"].iter().map(|s| IdpfInput::from_bytes(*s)).collect();
    let param = Poplar1AggregationParam::try_from_prefixes(prefixes).unwrap();
    let outs = verify(&vdaf, &task_id, &param, &report.metadata.report_id, &report.public_share, [&l, &h]);
    assert_eq!(vdaf.unshard(&param, outs, 1).unwrap(), vec![0, 1, 0]);
    // One level up: the first bit of "h" (0x68) is 0.
    let param = Poplar1AggregationParam::try_from_prefixes(vec![
        IdpfInput::from_bools(&[false]),
        IdpfInput::from_bools(&[true]),
    ])
    .unwrap();
    let outs = verify(&vdaf, &task_id, &param, &report.metadata.report_id, &report.public_share, [&l, &h]);
    assert_eq!(vdaf.unshard(&param, outs, 1).unwrap(), vec![1, 0]);
}

#[test]
fn given_randomness_makes_the_same_report_and_is_checked() {
    let (leader, helper) = (
        HpkeKeypair::derive(1, HpkeSuite::DEFAULT, &[1; 32]).unwrap(),
        HpkeKeypair::derive(2, HpkeSuite::DEFAULT, &[2; 32]).unwrap(),
    );
    let client = Poplar1Client::new(8, b"ctx").unwrap();
    let builder =
        Poplar1ReportBuilder::new(client.clone(), [1; 32], leader.config().clone(), helper.config().clone()).unwrap();
    assert_eq!(builder.rand_len(), RAND_LEN + 64);
    let rand = vec![5u8; builder.rand_len()];
    let m = vec![true; 8];
    let a = builder.build_with_random(&m, 10, &[4; 16], &rand).unwrap().encode().unwrap();
    let b = builder.build_with_random(&m, 10, &[4; 16], &rand).unwrap().encode().unwrap();
    assert_eq!(a, b);
    let shares = client.shard_with_random(&m, &[4; 16], &rand[..RAND_LEN]).unwrap();
    let report = ldp_client::dap::Report::decode(&a).unwrap();
    assert_eq!(report.public_share, shares.public_share);
    assert!(builder.build_with_random(&m, 10, &[4; 16], &rand[1..]).is_err());
    assert!(builder.build_with_random(&m[1..], 10, &[4; 16], &rand).is_err());
    assert!(Poplar1ReportBuilder::new(client, [1; 32], leader.config().clone(), leader.config().clone()).is_err());
}
