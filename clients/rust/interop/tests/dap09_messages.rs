//! DAP-09's messages as `ldp`'s aggregators encode them (`conformance/dap/dap09-messages.json`, written by
//! `conformance/dap_vectors.py` from `ldp.aggregators`), against Janus's own definitions (`janus_messages` 0.7.145):
//! for each entry, Janus decodes the bytes, re-encodes them byte for byte, and builds the same message from the
//! entry's fields with its own constructors, to the same bytes. So an `ldp` aggregator and a Janus aggregator (or
//! `janus_collector`) read each other's aggregation jobs, answers, aggregate shares and collections.

use std::path::PathBuf;

use janus_messages::codec::{Decode, Encode};
use janus_messages::query_type::TimeInterval;
use janus_messages::{
    AggregateShare, AggregateShareAad, AggregateShareReq, AggregationJobInitializeReq, AggregationJobResp,
    BatchSelector, Collection, CollectionReq, Duration, HpkeCiphertext, HpkeConfigId, Interval, PartialBatchSelector,
    PrepareError, PrepareInit, PrepareResp, PrepareStepResult, Query, ReportId, ReportIdChecksum, ReportMetadata,
    ReportShare, TaskId, Time,
};
use prio08::topology::ping_pong::PingPongMessage;
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../conformance/dap/dap09-messages.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).expect("the vectors are JSON");
    assert_eq!(doc["draft"], "draft-ietf-ppm-dap-09");
    doc["messages"].as_array().expect("a list of messages").clone()
}

fn bytes(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex")).expect("hex")
}

fn array<const N: usize>(v: &Value) -> [u8; N] {
    bytes(v).try_into().expect("a fixed-size field")
}

fn uint(v: &Value) -> u64 {
    v.as_u64().expect("an integer")
}

fn ciphertext(v: &Value) -> HpkeCiphertext {
    HpkeCiphertext::new(
        HpkeConfigId::from(u8::try_from(uint(&v["config_id"])).expect("a config id")),
        bytes(&v["encapsulated_key"]),
        bytes(&v["payload"]),
    )
}

fn interval(v: &Value) -> Interval {
    Interval::new(Time::from_seconds_since_epoch(uint(&v["start"])), Duration::from_seconds(uint(&v["duration"])))
        .expect("an interval")
}

fn job(v: &Value) -> AggregationJobInitializeReq<TimeInterval> {
    let inits = v["prepare_inits"].as_array().expect("prepare_inits").iter().map(|p| {
        let metadata = ReportMetadata::new(
            ReportId::from(array::<16>(&p["report_id"])),
            Time::from_seconds_since_epoch(uint(&p["time"])),
        );
        let share = ReportShare::new(metadata, bytes(&p["public_share"]), ciphertext(&p["ciphertext"]));
        PrepareInit::new(share, PingPongMessage::Initialize { prep_share: bytes(&p["prep_share"]) })
    });
    AggregationJobInitializeReq::new(Vec::new(), PartialBatchSelector::new_time_interval(), inits.collect())
}

fn resp(v: &Value) -> AggregationJobResp {
    let resps = v["prepare_resps"].as_array().expect("prepare_resps").iter().map(|r| {
        let result = if let Some(msg) = r.get("continue") {
            PrepareStepResult::Continue { message: PingPongMessage::Finish { prep_msg: bytes(msg) } }
        } else if let Some(code) = r.get("reject") {
            PrepareStepResult::Reject(PrepareError::try_from(u8::try_from(uint(code)).unwrap()).expect("a code"))
        } else {
            PrepareStepResult::Finished
        };
        PrepareResp::new(ReportId::from(array::<16>(&r["report_id"])), result)
    });
    AggregationJobResp::new(resps.collect())
}

/// Janus's decoding of `data` as `T`, re-encoded: the same bytes; and `built` (Janus's constructors on the
/// entry's fields): the same bytes too.
fn check<T: Decode + Encode>(data: &[u8], built: T, name: &str) {
    let decoded = T::get_decoded(data).unwrap_or_else(|e| panic!("janus_messages cannot decode {name}: {e}"));
    assert_eq!(decoded.get_encoded().unwrap(), data, "{name}: janus_messages re-encodes other bytes");
    assert_eq!(built.get_encoded().unwrap(), data, "{name}: janus_messages builds other bytes from the fields");
}

#[test]
fn every_message_ldp_encodes_is_janus_messages_own_byte_for_byte() {
    let mut seen = std::collections::BTreeSet::new();
    for v in vectors() {
        let name = v["message"].as_str().expect("a message name");
        let data = bytes(&v["hex"]);
        match name {
            "AggregationJobInitializeReq" => check(&data, job(&v), name),
            "AggregationJobResp" => check(&data, resp(&v), name),
            "AggregateShareReq" => check(
                &data,
                AggregateShareReq::<TimeInterval>::new(
                    BatchSelector::new_time_interval(interval(&v)),
                    Vec::new(),
                    uint(&v["report_count"]),
                    ReportIdChecksum::from(array::<32>(&v["checksum"])),
                ),
                name,
            ),
            "AggregateShare" => check(&data, AggregateShare::new(ciphertext(&v["ciphertext"])), name),
            "CollectionReq" => check(
                &data,
                CollectionReq::<TimeInterval>::new(Query::new_time_interval(interval(&v)), Vec::new()),
                name,
            ),
            "Collection" => check(
                &data,
                Collection::<TimeInterval>::new(
                    PartialBatchSelector::new_time_interval(),
                    uint(&v["report_count"]),
                    interval(&v),
                    ciphertext(&v["leader"]),
                    ciphertext(&v["helper"]),
                ),
                name,
            ),
            "AggregateShareAad" => check(
                &data,
                AggregateShareAad::<TimeInterval>::new(
                    TaskId::from(array::<32>(&v["task_id"])),
                    Vec::new(),
                    BatchSelector::new_time_interval(interval(&v)),
                ),
                name,
            ),
            other => panic!("an entry of an unknown message: {other}"),
        }
        seen.insert(name.to_string());
    }
    assert_eq!(seen.len(), 7, "every message of the vectors is checked: {seen:?}");
}
