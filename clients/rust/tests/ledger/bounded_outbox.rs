//! The bounded outbox: a report that would not fit is refused before anything is charged.

use super::*;

/// The bytes of the lines waiting, read through the first batch (pinning it): the tests below keep at most
/// `max_batch` reports, so it holds them all.
fn waiting_bytes(client: &TelemetryClient) -> u64 {
    let batch = client.next_batch(None).unwrap().map(|b| b.reports).unwrap_or_default();
    assert_eq!(batch.len() as u64, client.pending().unwrap(), "one batch holds every report");
    batch.iter().map(|r| outbox_bytes(&r.line)).sum()
}

fn check_bounded(client: &TelemetryClient, cap: u64) {
    assert_eq!(client.max_outbox_bytes(), cap);
    let mut kept = 0;
    let refusal = loop {
        match client.record("c", &json!(kept % 4)) {
            Ok(_) => kept += 1,
            Err(e) => break e,
        }
        assert!(kept < 100, "never refused");
    };
    let Error::OutboxFull { pending_bytes, max_bytes, item } = refusal.clone() else { panic!("{refusal:?}") };
    assert_eq!((max_bytes, item), (cap, None));
    assert_eq!(pending_bytes, client.pending_bytes().unwrap());
    assert!(pending_bytes <= cap, "{pending_bytes} bytes kept under a cap of {cap}");
    assert_eq!(refusal.python_type(), "OutboxFull");
    assert!(refusal.to_string().contains(&format!("{pending_bytes} bytes wait for upload")), "{refusal}");
    assert!(refusal.to_string().contains(&cap.to_string()), "{refusal}");
    // Nothing charged or stored by the refusal.
    assert_eq!(client.pending().unwrap(), kept);
    assert_eq!(eps(client, Some("c")), kept as f64);
    // The count is each pending line plus its newline, pinned batches included.
    assert_eq!(waiting_bytes(client), pending_bytes);
    assert_eq!(client.pending_bytes().unwrap(), pending_bytes, "pinning changes nothing");
    // Uploading makes room.
    let batch = client.next_batch(None).unwrap().unwrap();
    client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
    assert!(client.pending_bytes().unwrap() < pending_bytes);
    client.record("c", &json!(0)).unwrap();
}

#[test]
fn the_outbox_is_bounded_and_refuses_before_charging() {
    // Envelope lines of this GRR are about 120 bytes: room for 3.
    let cap = 400;
    check_bounded(&client_with(MemoryStore::new(), 0, Some(cap)).unwrap(), cap);
    let dir = temp_dir("bounded");
    check_bounded(&client_with(FileStore::open(&dir).unwrap(), 0, Some(cap)).unwrap(), cap);
    // Across a reopen the count is the same.
    let again = client_with(FileStore::open(&dir).unwrap(), 0, Some(cap)).unwrap();
    let bytes = again.pending_bytes().unwrap();
    assert_eq!(waiting_bytes(&again), bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_cap_is_one_mebibyte_and_zero_is_refused() {
    assert_eq!(DEFAULT_MAX_OUTBOX_BYTES, 1_048_576);
    assert_eq!(client_with(MemoryStore::new(), 0, None).unwrap().max_outbox_bytes(), 1_048_576);
    let e = client_with(MemoryStore::new(), 0, Some(0)).unwrap_err();
    assert_eq!(e, Error::Value("max_outbox_bytes must be a positive integer, got 0".into()));
}

#[test]
fn record_many_is_all_or_nothing_and_names_the_item_that_did_not_fit() {
    // Every line of metric c has the same length: room for three.
    let one = client_with(MemoryStore::new(), 0, None).unwrap();
    one.record("c", &json!(0)).unwrap();
    let line = one.pending_bytes().unwrap();
    let client = client_with(MemoryStore::new(), 0, Some(3 * line + line / 2)).unwrap();
    client.record("c", &json!(0)).unwrap();
    let items: Vec<(&str, Value)> = vec![("c", json!(1)), ("c", json!(2)), ("c", json!(3)), ("c", json!(0))];
    let e = client.record_many(&items).unwrap_err();
    let Error::OutboxFull { item, pending_bytes, .. } = e.clone() else { panic!("{e:?}") };
    assert_eq!(item, Some(2), "room for two more: item 2 is the first that does not fit");
    assert!(e.to_string().starts_with("record_many item 2 does not fit: the outbox is full"), "{e}");
    assert_eq!(pending_bytes, client.pending_bytes().unwrap());
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (1, 1.0), "nothing of the batch kept");
    let ids = client.record_many(&items[..2]).unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (3, 3.0));
    // A bad value names its item, with nothing written; so does a budget refusal.
    let e = client.record_many(&[("c", json!(1)), ("c", json!(7))]).unwrap_err();
    assert!(e.to_string().starts_with("record_many item 1 (\"c\"): "), "{e}");
    let Error::Item { index: 1, metric, error } = &e else { panic!("{e:?}") };
    assert_eq!(metric, "c");
    assert!(matches!(error.as_ref(), Error::Refusal(_)), "{e:?}");
    assert_eq!(e.refusal().map(|r| r.code), Some(ldp_client::RefusalCode::ValueRange));
    assert_eq!(e.python_type(), "ValueError");
    let roomy = client_with(MemoryStore::new(), 0, None).unwrap();
    let e = roomy.record_many(&[("two", json!(1)), ("two", json!(2)), ("two", json!(3))]).unwrap_err();
    assert!(matches!(e, Error::BudgetExceeded { .. }), "{e:?}");
    assert_eq!((roomy.pending().unwrap(), eps(&roomy, None)), (0, 0.0));
    assert_eq!(roomy.record_many::<&str>(&[]).unwrap(), Vec::<u64>::new());
}

#[test]
fn a_state_written_before_the_cap_counts_its_reports_bytes() {
    let dir = temp_dir("legacy-cursor");
    let client = open(&dir).unwrap();
    for i in 0..3 {
        client.record("c", &json!(i)).unwrap();
    }
    let bytes = client.pending_bytes().unwrap();
    drop(client);
    // The cursor as the client wrote it before the cap existed: five numbers.
    let mut doc = state_doc(&dir);
    let cursor = doc["outbox"].as_array_mut().unwrap();
    assert_eq!(cursor.len(), 6);
    assert_eq!(cursor[5], json!(bytes));
    cursor.pop();
    std::fs::write(dir.join("state.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    assert_eq!(client.pending_bytes().unwrap(), bytes);
    assert_eq!(snapshot(&dir), before);
    client.record("c", &json!(3)).unwrap();
    assert_eq!(state_doc(&dir)["outbox"].as_array().unwrap().len(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}
