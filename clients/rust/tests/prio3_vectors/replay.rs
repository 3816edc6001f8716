//! Replaying one vector: each report's `shard` through the client API, every other operation through the prio
//! crate, each output compared with the vector's, in the vector's order.

use super::*;

fn encoded(item: &impl Encode) -> String {
    hex(&item.get_encoded().expect("prio encodes it"))
}

fn nonce_of(report: &Value) -> [u8; NONCE_LEN] {
    unhex(report["nonce"].as_str().unwrap()).try_into().expect("a 16-byte nonce")
}

/// What the replay of one vector did.
#[derive(Default)]
pub(super) struct Replayed {
    pub(super) sharded: usize,
    pub(super) operations: usize,
    pub(super) refused_at: Option<String>,
}

/// Replays vector `v` through the client API (shard) and `vdaf` (everything else), operation by operation.
pub(super) fn replay<V: Prio3Vdaf>(v: &Vector, vdaf: &V) -> Replayed {
    let name = &v.name;
    let client = Prio3Client::with_aggregators(v.prio3_type(), v.aggregators(), &v.ctx())
        .unwrap_or_else(|e| panic!("{name}: the client API refuses the vector's parameters: {e}"));
    assert_eq!(client.aggregators(), vdaf.num_aggregators(), "{name}");
    let mut replay = Replay {
        v,
        vdaf,
        client,
        ctx: v.ctx(),
        verify_key: unhex(v.doc["verify_key"].as_str().unwrap()).try_into().unwrap(),
        states: HashMap::new(),
        out_shares: HashMap::new(),
        agg_shares: vec![None; vdaf.num_aggregators()],
        done: Replayed::default(),
    };
    let reports = v.reports();
    for op in v.doc["operations"].as_array().unwrap() {
        let what = op["operation"].as_str().unwrap();
        let want_success = op["success"].as_bool().unwrap();
        let index = |k: &str| op[k].as_u64().map(|x| x as usize);
        let (r, agg, round) = (index("report_index"), index("aggregator_id"), index("round"));
        let label = format!("{name}: {what} (report {r:?}, aggregator {agg:?}, round {round:?})");
        let op = Op { label, r, agg, round, report: r.map(|r| &reports[r]) };
        // Each operation: Ok(()) when it succeeded (its outputs checked against the vector), Err(why) when it
        // failed.
        let result: Result<(), String> = match what {
            "shard" => replay.shard(&op),
            "verify_init" => replay.verify_init(&op),
            "verifier_shares_to_message" => replay.verifier_shares_to_message(&op),
            "verify_next" => replay.verify_next(&op),
            "aggregate" => replay.aggregate(&op),
            "unshard" => replay.unshard(&op),
            other => panic!("{name}: an operation {other} this test does not know"),
        };
        let (done, label) = (&mut replay.done, &op.label);
        done.operations += 1;
        match (result, want_success) {
            (Ok(()), true) => {}
            (Err(e), true) => panic!("{label} failed, the vector says it succeeds: {e}"),
            (Ok(()), false) => panic!("{label} succeeded, the vector says it fails"),
            (Err(e), false) => {
                assert!(done.refused_at.is_none(), "{name}: a second failing operation, {label}");
                done.refused_at = Some(format!("{what}: {e}"));
            }
        }
    }
    replay.done
}

/// One operation of a vector: its label for messages, the report, aggregator and round it names.
struct Op<'a> {
    label: String,
    r: Option<usize>,
    agg: Option<usize>,
    round: Option<usize>,
    report: Option<&'a Value>,
}

impl Op<'_> {
    /// The report's `k`, entry `i`, decoded from hex.
    fn input(&self, k: &str, i: usize) -> Vec<u8> {
        unhex(self.report.unwrap()[k][i].as_str().unwrap())
    }
}

/// A vector being replayed: the client, the aggregators' states and shares so far, and what was done.
struct Replay<'a, V: Prio3Vdaf> {
    v: &'a Vector,
    vdaf: &'a V,
    client: Prio3Client,
    ctx: Vec<u8>,
    verify_key: [u8; 32],
    states: HashMap<(usize, usize), V::VerifyState>,
    out_shares: HashMap<(usize, usize), V::OutputShare>,
    agg_shares: Vec<Option<V::AggregateShare>>,
    done: Replayed,
}

impl<V: Prio3Vdaf> Replay<'_, V> {
    fn shard(&mut self, op: &Op) -> Result<(), String> {
        let label = &op.label;
        let report = op.report.unwrap();
        let rand = unhex(report["rand"].as_str().unwrap());
        assert_eq!(self.client.rand_len(), rand.len(), "{label}: rand_len");
        let m = measurement(self.v.kind, &report["measurement"]);
        self.client.shard_with_random(&m, &nonce_of(report), &rand).map_err(|e| e.to_string()).map(|shares| {
            assert_eq!(hex(&shares.public_share), report["public_share"].as_str().unwrap(), "{label}");
            let want: Vec<&str> =
                report["input_shares"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
            let got: Vec<String> = shares.input_shares.iter().map(|s| hex(s)).collect();
            assert_eq!(got, want, "{label}: input shares");
            assert_eq!(shares.nonce, nonce_of(report), "{label}");
            self.done.sharded += 1;
        })
    }

    fn verify_init(&mut self, op: &Op) -> Result<(), String> {
        let label = &op.label;
        let (r, agg) = (op.r.unwrap(), op.agg.unwrap());
        let report = op.report.unwrap();
        let public =
            V::PublicShare::get_decoded_with_param(self.vdaf, &unhex(report["public_share"].as_str().unwrap()));
        let share = V::InputShare::get_decoded_with_param(&(self.vdaf, agg), &op.input("input_shares", agg));
        match (public, share) {
            (Ok(public), Ok(share)) => self
                .vdaf
                .verify_init(&self.verify_key, &self.ctx, agg, &(), &nonce_of(report), &public, &share)
                .map_err(|e| e.to_string())
                .map(|(state, verifier_share)| {
                    let want = report["verifier_shares"][0][agg].as_str().unwrap();
                    assert_eq!(encoded(&verifier_share), want, "{label}: verifier share");
                    self.states.insert((r, agg), state);
                }),
            (p, s) => Err(format!("decoding: {:?} {:?}", p.err(), s.err())),
        }
    }

    fn verifier_shares_to_message(&mut self, op: &Op) -> Result<(), String> {
        let label = &op.label;
        let (r, round) = (op.r.unwrap(), op.round.unwrap());
        let report = op.report.unwrap();
        let state = &self.states[&(r, 0)];
        let shares: Vec<V::VerifierShare> = report["verifier_shares"][round]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| V::VerifierShare::get_decoded_with_param(state, &unhex(s.as_str().unwrap())).unwrap())
            .collect();
        self.vdaf.verifier_shares_to_message(&self.ctx, &(), shares).map_err(|e| e.to_string()).map(|message| {
            let want = report["verifier_messages"][round].as_str().unwrap();
            assert_eq!(encoded(&message), want, "{label}: verifier message");
        })
    }

    fn verify_next(&mut self, op: &Op) -> Result<(), String> {
        let label = &op.label;
        let (r, agg, round) = (op.r.unwrap(), op.agg.unwrap(), op.round.unwrap());
        let report = op.report.unwrap();
        let state = self.states[&(r, agg)].clone();
        let message = report["verifier_messages"][round - 1].as_str().unwrap();
        match V::VerifierMessage::get_decoded_with_param(&state, &unhex(message)) {
            Err(e) => Err(format!("decoding the verifier message: {e}")),
            Ok(message) => match self.vdaf.verify_next(&self.ctx, state, message) {
                Err(e) => Err(e.to_string()),
                Ok(VerifyTransition::Continue(..)) => panic!("{label}: Prio3 verifies in one round"),
                Ok(VerifyTransition::Finish(out)) => {
                    let want = report["out_shares"][agg].as_str().unwrap();
                    assert_eq!(encoded(&out), want, "{label}: output share");
                    self.out_shares.insert((r, agg), out);
                    Ok(())
                }
            },
        }
    }

    fn aggregate(&mut self, op: &Op) -> Result<(), String> {
        let label = &op.label;
        let agg = op.agg.unwrap();
        let outs: Vec<V::OutputShare> =
            (0..self.v.reports().len()).map(|r| self.out_shares[&(r, agg)].clone()).collect();
        self.vdaf.aggregate(&(), outs).map_err(|e| e.to_string()).map(|share| {
            let want = self.v.doc["agg_shares"][agg].as_str().unwrap();
            assert_eq!(encoded(&share), want, "{label}: aggregate share");
            self.agg_shares[agg] = Some(share);
        })
    }

    fn unshard(&mut self, op: &Op) -> Result<(), String> {
        let label = &op.label;
        let shares: Vec<V::AggregateShare> =
            self.agg_shares.iter().map(|s| s.clone().expect("every aggregate share")).collect();
        self.vdaf.unshard(&(), shares, self.v.reports().len()).map_err(|e| e.to_string()).map(|result| {
            assert_eq!(V::result_json(&result), self.v.doc["agg_result"], "{label}: aggregate result");
        })
    }
}
