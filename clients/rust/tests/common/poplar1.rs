//! Poplar1's aggregators' side through the prio crate (feature `poplar1`; the client API has none): both
//! aggregators' verification of one report and the prefix counts of DAP-09 reports opened with their keys; a spec
//! with a `poplar1` metric, and its task file as `ldp collect task` writes one.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ldp_client::dap::{open_input_share, Aggregator as Role, HpkeKeypair, HpkeSuite, Report};
use ldp_client::{json, Value};
use prio::codec::ParameterizedDecode;
use prio::idpf::IdpfInput;
use prio::vdaf::poplar1::{Poplar1, Poplar1AggregationParam, Poplar1FieldVec, Poplar1InputShare, Poplar1PublicShare};
use prio::vdaf::xof::XofTurboShake128;
use prio::vdaf::{Aggregator, Collector, VerifyTransition};

/// The prio crate's Poplar1 of VDAF draft 18.
pub type Vdaf = Poplar1<XofTurboShake128, 32>;

/// Both aggregators' verification of one report through the crate (init, then two rounds): each's output share.
pub fn verify(
    vdaf: &Vdaf,
    ctx: &[u8],
    param: &Poplar1AggregationParam,
    nonce: &[u8; 16],
    public: &[u8],
    inputs: [&[u8]; 2],
) -> Vec<Poplar1FieldVec> {
    let key = [3u8; 32];
    let public = Poplar1PublicShare::get_decoded_with_param(vdaf, public).unwrap();
    let (mut states, mut shares) = (Vec::new(), Vec::new());
    for (agg, input) in inputs.iter().enumerate() {
        let input = Poplar1InputShare::get_decoded_with_param(&(vdaf, agg), input).unwrap();
        let (state, share) = vdaf.verify_init(&key, ctx, agg, param, nonce, &public, &input).unwrap();
        states.push(state);
        shares.push(share);
    }
    let message = vdaf.verifier_shares_to_message(ctx, param, shares).unwrap();
    let (mut next, mut shares) = (Vec::new(), Vec::new());
    for state in states {
        let VerifyTransition::Continue(state, share) = vdaf.verify_next(ctx, state, message.clone()).unwrap() else {
            panic!("round 0 finished")
        };
        next.push(state);
        shares.push(share);
    }
    let message = vdaf.verifier_shares_to_message(ctx, param, shares).unwrap();
    next.into_iter()
        .map(|state| match vdaf.verify_next(ctx, state, message.clone()).unwrap() {
            VerifyTransition::Finish(out) => out,
            VerifyTransition::Continue(..) => panic!("round 1 continued"),
        })
        .collect()
}

/// The leader's and the helper's HPKE keys.
pub struct Keys {
    pub leader: HpkeKeypair,
    pub helper: HpkeKeypair,
}

impl Keys {
    pub fn new() -> Self {
        Keys {
            leader: HpkeKeypair::generate(1, HpkeSuite::DEFAULT).unwrap(),
            helper: HpkeKeypair::generate(2, HpkeSuite::DEFAULT).unwrap(),
        }
    }
}

/// The counts of the full-length `candidates` (each `bits / 8` bytes) over `reports` of a task `task_id` of
/// `bits`-bit strings: each report opened with `keys`, verified by both aggregators at the leaf level, the output
/// shares aggregated and unsharded.
pub fn leaf_counts(keys: &Keys, task_id: &[u8; 32], bits: usize, reports: &[Report], candidates: &[&[u8]]) -> Vec<u64> {
    let vdaf = Vdaf::new_turboshake128(bits);
    let prefixes = candidates.iter().map(|c| IdpfInput::from_bytes(c)).collect();
    let param = Poplar1AggregationParam::try_from_prefixes(prefixes).unwrap();
    let mut outs = Vec::new();
    for r in reports {
        let open = |key: &HpkeKeypair, role| {
            let ct = r.encrypted_input_share(role);
            open_input_share(key, role, task_id, &r.metadata, &r.public_share, ct).unwrap()
        };
        let (l, h) = (open(&keys.leader, Role::Leader), open(&keys.helper, Role::Helper));
        let out = verify(&vdaf, task_id, &param, &r.metadata.report_id, &r.public_share, [&l, &h]);
        outs.push(out);
    }
    let shares: Vec<Poplar1FieldVec> =
        (0..2).map(|agg| vdaf.aggregate(&param, outs.iter().map(|o| o[agg].clone())).unwrap()).collect();
    vdaf.unshard(&param, shares, reports.len()).unwrap()
}

/// A spec of a `poplar1` metric, `new_words`, of `bits` bits (100 reports a window), beside a Prio3 one,
/// `dark_mode`.
pub fn spec_doc(bits: u32) -> Value {
    json!({"spec_version": 1, "name": "words_app", "window_seconds": 86400,
        "budget": {"per_window": 100, "lifetime": 1000},
        "metrics": {
            "new_words": {"protocol": "poplar1", "params": {"bits": bits, "threshold": 2, "max_candidates": 16},
                "budget": {"per_report": 0.5, "per_window": 50}, "trust": "two-aggregator"},
            "dark_mode": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75},
                "budget": {"per_report": 1.1}, "trust": "two-aggregator"}}})
}

/// The task file of the `poplar1` metric `metric` of the spec `doc` as `ldp collect task` writes it (Poplar1 with
/// the metric's `bits`, `max_candidates` and `threshold`), its task ID `id` 32 times, its leader at `url`, both
/// configs in it.
pub fn task_doc(doc: &Value, metric: &str, id: u8, url: &str, keys: &Keys) -> Value {
    let s = ldp_client::CollectionSpec::from_value(doc, "spec").unwrap();
    let p = &doc["metrics"][metric]["params"];
    let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
    let config = |k: &HpkeKeypair| b64(&k.config().encode().unwrap());
    json!({"format": "ldp-task/1", "task_id": b64(&[id; 32]), "app": doc["name"], "metric": metric,
        "vdaf": {"type": "Poplar1", "draft": 18, "bits": p["bits"], "max_candidates": p["max_candidates"],
                 "threshold": p["threshold"]},
        "window_seconds": s.window_seconds, "time_precision": 3600, "min_batch_size": 1,
        "noise": {"mechanism": "none"}, "leader_url": url, "helper_url": "http://127.0.0.1:9/helper",
        "collector_hpke_config": "AQ", "local": null, "reports_per_window": s.reports_per_window(metric).unwrap(),
        "hpke_configs": {"leader": config(&keys.leader), "helper": config(&keys.helper)}})
}
