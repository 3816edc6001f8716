//! `tests/data/dap_reports.json`: DAP-09 reports of each Prio3 type made by the Rust API with given randomness
//! (`ReportBuilder::build_with_random`; tests/c_dap.rs shows the C API makes the same bytes), with the keys that
//! open them. The Python binding's tests (tests/prio/test_prio_dap.py) open and verify them, so a report a device
//! makes is checked against the aggregators' side byte for byte. This test fails when the file is not what the API
//! makes now; after a deliberate change, regenerate it in `clients/rust` with
//!
//! ```text
//! LDP_BLESS=1 cargo test --features prio --test dap_fixture
//! ```

#![cfg(feature = "prio")]

mod common;

use common::prio3::hex;
use ldp_client::dap::{HpkeKeypair, HpkeSuite, ReportBuilder, DRAFT, KEM_P256_HKDF_SHA256};
use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type};
use ldp_client::{json, Value};

fn key_json(k: &HpkeKeypair) -> Value {
    json!({"config": hex(&k.config().encode().unwrap()), "private_key": hex(k.private_key())})
}

fn fixture() -> String {
    let task_id = [0xa5; 32];
    let ctx = task_id; // as the aggregators of a task use it
    let leader = HpkeKeypair::derive(1, HpkeSuite::DEFAULT, &[1; 32]).unwrap();
    let p256 = HpkeSuite { kem_id: KEM_P256_HKDF_SHA256, ..HpkeSuite::DEFAULT };
    let helper = HpkeKeypair::derive(2, p256, &[2; 32]).unwrap();
    let cases: [(Prio3Type, Value, Measurement, Value); 4] = [
        (Prio3Type::Count, json!({"type": "Prio3Count"}), Measurement::Count(true), json!(1)),
        (
            Prio3Type::Sum { max_measurement: 1000 },
            json!({"type": "Prio3Sum", "max_measurement": 1000}),
            Measurement::Sum(777),
            json!(777),
        ),
        (
            Prio3Type::SumVec { max_measurement: 15, length: 4, chunk_length: 3 },
            json!({"type": "Prio3SumVec", "max_measurement": 15, "length": 4, "chunk_length": 3}),
            Measurement::SumVec(vec![0, 15, 7, 1]),
            json!([0, 15, 7, 1]),
        ),
        (
            Prio3Type::Histogram { length: 6, chunk_length: 2 },
            json!({"type": "Prio3Histogram", "length": 6, "chunk_length": 2}),
            Measurement::Histogram(4),
            json!(4),
        ),
    ];
    let mut reports = Vec::new();
    for (i, (typ, params, m, m_json)) in cases.into_iter().enumerate() {
        let client = Prio3Client::new(typ, &ctx).unwrap();
        let builder = ReportBuilder::new(client, task_id, leader.config().clone(), helper.config().clone())
            .unwrap()
            .with_time_precision(3600)
            .unwrap();
        let report_id = [i as u8 + 0x10; 16];
        let rand: Vec<u8> = (0..builder.rand_len()).map(|j| (31 * j + i) as u8).collect();
        let report = builder.build_with_random(&m, 1_700_000_000 + i as u64, &report_id, &rand).unwrap();
        let vdaf_rand = &rand[..builder.client().rand_len()];
        reports.push(json!({
            "vdaf": params,
            "measurement": m_json,
            "time": 1_700_000_000 + i as u64,
            "time_precision": 3600,
            "report_id": hex(&report_id),
            "vdaf_rand": hex(vdaf_rand),
            "report": hex(&report.encode().unwrap()),
        }));
    }
    let doc = json!({
        "about": "DAP-09 reports made by ldp_client::dap::ReportBuilder::build_with_random (clients/rust/tests/dap_fixture.rs writes and checks this file); vdaf_rand is the sharding part of the randomness, the rest the HPKE ephemeral key material",
        "draft": DRAFT,
        "task_id": hex(&task_id),
        "ctx": hex(&ctx),
        "leader": key_json(&leader),
        "helper": key_json(&helper),
        "reports": reports,
    });
    serde_json::to_string_pretty(&doc).unwrap() + "\n"
}

#[test]
fn the_fixture_is_what_the_api_makes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dap_reports.json");
    let made = fixture();
    if std::env::var_os("LDP_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &made).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == made,
        "{} is not what the API makes now; regenerate it in clients/rust with: LDP_BLESS=1 cargo test --features prio \
         --test dap_fixture",
        path.display()
    );
}
