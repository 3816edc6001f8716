use super::*;
use crate::prio3::{Measurement, Prio3Client, Prio3Type};

fn pair(id: u8) -> HpkeKeypair {
    HpkeKeypair::generate(id, HpkeSuite::DEFAULT).unwrap()
}

#[test]
fn a_report_round_trips_and_opens_for_each_aggregator_only() {
    let (leader, helper) = (pair(1), pair(2));
    let task_id = [9u8; 32];
    let client = Prio3Client::new(Prio3Type::histogram(5), &task_id).unwrap();
    let builder = ReportBuilder::new(client, task_id, leader.config().clone(), helper.config().clone())
        .unwrap()
        .with_time_precision(60)
        .unwrap();
    let report = builder.build(&Measurement::Histogram(3), 1_000_059).unwrap();
    assert_eq!(report.metadata.time, 1_000_020);
    let bytes = report.encode().unwrap();
    assert_eq!(Report::decode(&bytes).unwrap(), report);
    let m = &report.metadata;
    let open_as = |kp: &HpkeKeypair, a: Aggregator, task: &[u8; 32], md: &ReportMetadata| {
        open_input_share(kp, a, task, md, &report.public_share, report.encrypted_input_share(a))
    };
    assert!(open_as(&leader, Aggregator::Leader, &task_id, m).is_ok());
    assert!(open_as(&helper, Aggregator::Helper, &task_id, m).is_ok());
    assert!(open_as(&leader, Aggregator::Helper, &task_id, m).is_err(), "another role's info");
    assert!(open_as(&leader, Aggregator::Leader, &[8u8; 32], m).is_err(), "another task");
    let later = ReportMetadata { time: m.time + 60, ..*m };
    assert!(open_as(&leader, Aggregator::Leader, &task_id, &later).is_err(), "another time");
    let mut truncated = bytes.clone();
    truncated.pop();
    assert!(Report::decode(&truncated).is_err());
    let mut longer = bytes;
    longer.push(0);
    assert!(Report::decode(&longer).unwrap_err().to_string().contains("trailing"));
}

#[test]
fn the_builder_refuses_what_dap_cannot_carry() {
    let (leader, helper) = (pair(1), pair(2));
    let three = Prio3Client::with_aggregators(Prio3Type::Count, 3, b"").unwrap();
    assert!(ReportBuilder::new(three, [0; 32], leader.config().clone(), helper.config().clone()).is_err());
    let count = || Prio3Client::new(Prio3Type::Count, b"").unwrap();
    assert!(ReportBuilder::new(count(), [0; 32], leader.config().clone(), leader.config().clone()).is_err());
    let unknown = HpkeConfig { kem_id: 0x0011, ..leader.config().clone() };
    let e = ReportBuilder::new(count(), [0; 32], unknown, helper.config().clone()).unwrap_err();
    assert!(e.to_string().contains("leader's HPKE config") && e.to_string().contains("0x0011"), "{e}");
    let b = ReportBuilder::new(count(), [0; 32], leader.config().clone(), helper.config().clone()).unwrap();
    assert!(b.clone().with_time_precision(0).is_err());
    assert_eq!(b.rand_len(), 64 + 32 + 32);
    assert!(b.build_with_random(&Measurement::Count(true), 5, &[0; 16], &[0; 10]).is_err());
}
