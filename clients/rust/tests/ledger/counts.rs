//! Counts: what became of each metric's reports, in both stores, read without writing.

use super::*;

/// Five reports of two metrics: three sent, one deleted by opting out per metric; the counts at each step.
fn check_counts(client: &TelemetryClient) {
    let counts = |c: &TelemetryClient| -> Vec<(String, [u64; 4])> {
        let all = c.counts().unwrap();
        for (m, n) in &all {
            assert_eq!(n.reports, n.pending + n.uploaded + n.discarded, "{m}: {n:?}");
        }
        all.into_iter().map(|(m, n)| (m, [n.reports, n.pending, n.uploaded, n.discarded])).collect()
    };
    assert!(client.counts().unwrap().is_empty());
    for v in 0..3 {
        client.record("c", &json!(v)).unwrap();
    }
    client.record_many(&[("r", json!("a")), ("r", json!("b"))]).unwrap();
    assert_eq!(counts(client), [("c".into(), [3, 3, 0, 0]), ("r".into(), [2, 2, 0, 0])]);
    let batch = client.next_batch(None).unwrap().unwrap(); // c, c, c, r: a pinned batch is still pending
    assert_eq!(counts(client), [("c".into(), [3, 3, 0, 0]), ("r".into(), [2, 2, 0, 0])]);
    client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
    assert_eq!(counts(client), [("c".into(), [3, 0, 3, 0]), ("r".into(), [2, 1, 1, 0])]);
    client.record("c", &json!(3)).unwrap();
    client.opt_out().unwrap();
    assert_eq!(counts(client), [("c".into(), [4, 0, 3, 1]), ("r".into(), [2, 0, 1, 1])]);
    client.opt_in().unwrap();
    client.record("c", &json!(0)).unwrap();
    assert_eq!(counts(client), [("c".into(), [5, 1, 3, 1]), ("r".into(), [2, 0, 1, 1])]);
}

#[test]
fn counts_add_up_per_metric_in_both_stores_and_write_nothing() {
    check_counts(&client_with(MemoryStore::new(), 0, None).unwrap());
    let dir = temp_dir("counts");
    check_counts(&open(&dir).unwrap());
    let before = snapshot(&dir);
    let again = open(&dir).unwrap();
    assert_eq!(again.counts().unwrap()["c"], Counts { reports: 5, pending: 1, uploaded: 3, discarded: 1 });
    assert_eq!(snapshot(&dir), before, "counts wrote to the folder");
    let _ = std::fs::remove_dir_all(&dir);
}
