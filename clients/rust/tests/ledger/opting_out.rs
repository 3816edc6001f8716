//! Opting out: what it deletes and keeps, in a folder and in memory, and opting in again.

use super::*;

#[test]
fn opting_out_deletes_what_it_must_keeps_the_budget_and_opting_in_starts_afresh() {
    let dir = temp_dir("opt-out");
    let client = open(&dir).unwrap();
    let other = open(&dir).unwrap(); // another client of the same folder (another process, say)
                                     // RAPPOR's memoized responses: a value's reports cost 1.074… each until 4.394… in all, then nothing.
    for _ in 0..5 {
        client.record("r", &json!("v0")).unwrap();
    }
    let capped = eps(&client, Some("r"));
    other.record("r", &json!("v0")).unwrap();
    assert_eq!(eps(&client, Some("r")), capped, "the memoized value is paid for");
    client.record("c", &json!(1)).unwrap();
    let pinned = client.next_batch(None).unwrap().unwrap();
    let line = pinned.reports[0].line.clone();
    let doc = state_doc(&dir);
    let (secret, salt) = (doc["device"]["secret"].clone(), doc["device"]["salt"].clone());
    assert!(secret.is_string() && !doc["device"]["cohorts"].as_object().unwrap().is_empty());
    let spent = (eps(&client, None), eps(&client, Some("c")));

    assert!(!client.is_opted_out().unwrap());
    client.opt_out().unwrap();
    for c in [&client, &other] {
        assert_opted_out(c, spent);
    }
    assert_eq!(client.acknowledge_batch(&pinned.id, &pinned.ids()).unwrap(), 0, "the pinned batch is gone");
    assert_forgotten(&dir, &client, &salt, &line);
    // Idempotent: opting out again writes nothing; opting in twice draws one secret.
    let before = snapshot(&dir);
    client.opt_out().unwrap();
    other.opt_out().unwrap();
    assert_eq!(snapshot(&dir), before);

    other.opt_in().unwrap();
    let d = state_doc(&dir)["device"].clone();
    assert_eq!(d["opted_out"], json!(false));
    assert!(d["secret"].is_string() && d["secret"] != secret, "a fresh secret");
    assert_eq!(d["salt"], salt, "the salt kept");
    let before = snapshot(&dir);
    client.opt_in().unwrap();
    assert_eq!(snapshot(&dir), before, "opting in again writes nothing");
    assert!(!client.is_opted_out().unwrap());
    // The client that recorded before (its encoders cached) reports for the new device: the memoized value is
    // charged afresh and a cohort drawn anew.
    client.record("r", &json!("v0")).unwrap();
    assert!((eps(&client, Some("r")) - capped - 1.074285864166728).abs() < 1e-9, "charged afresh");
    assert!(!state_doc(&dir)["device"]["cohorts"].as_object().unwrap().is_empty());
    assert_eq!(client.pending().unwrap(), 1);
    assert!(client.next_batch(None).unwrap().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

/// What an opted-out device's client `c` answers: nothing pending or due, the budget `spent` unchanged, every record
/// refused with nothing charged.
fn assert_opted_out(c: &TelemetryClient, spent: (f64, f64)) {
    assert!(c.is_opted_out().unwrap());
    assert_eq!((c.pending().unwrap(), c.pending_bytes().unwrap()), (0, 0));
    assert!(!c.has_pending().unwrap());
    assert_eq!(c.next_batch(None).unwrap(), None, "an upload sends nothing");
    assert_eq!(c.next_upload_at().unwrap(), f64::INFINITY);
    assert_eq!((eps(c, None), eps(c, Some("c"))), spent, "the budget spent stays spent");
    let e = c.record("c", &json!(1)).unwrap_err();
    assert!(matches!(e, Error::OptedOut(_)) && e.python_type() == "OptedOutError", "{e:?}");
    assert!(matches!(c.record_many(&[("c", json!(1))]), Err(Error::OptedOut(_))));
    assert_eq!(eps(c, None), spent.0, "a refused record charged nothing");
}

/// What opting out left in the folder: the marker, no secret, the `salt` kept, the reports discarded and counted,
/// the keyed records deleted, the totals kept, and no report `line` in any file.
fn assert_forgotten(dir: &Path, client: &TelemetryClient, salt: &Value, line: &str) {
    let d = state_doc(dir)["device"].clone();
    assert_eq!(
        (d["opted_out"].clone(), d["secret"].clone(), d["salt"].clone()),
        (json!(true), Value::Null, salt.clone()),
        "the secret is deleted, the salt kept (as every ldp client does)"
    );
    assert_eq!(d["discarded"], json!({"r": 6, "c": 1}), "the reports deleted unsent, per metric");
    let discarded = |n| Counts { reports: n, pending: 0, uploaded: 0, discarded: n };
    let counts = client.counts().unwrap();
    assert_eq!(counts.into_iter().collect::<Vec<_>>(), [("c".into(), discarded(1)), ("r".into(), discarded(6))]);
    for key in ["cohorts", "memo", "changes"] {
        assert_eq!(d[key], json!({}), "{key} kept");
    }
    assert_eq!(d["parts"], json!([]));
    assert!(!d["totals"].as_object().unwrap().is_empty(), "the totals are kept");
    for (name, (bytes, _, _)) in snapshot(dir) {
        assert!(!String::from_utf8_lossy(&bytes).contains(line), "{name} still holds a report");
    }
}

#[test]
fn opting_out_in_memory() {
    let client = client_with(MemoryStore::new(), 0, None).unwrap();
    client.record("c", &json!(1)).unwrap();
    client.opt_out().unwrap();
    assert!(client.is_opted_out().unwrap());
    assert_eq!(client.pending().unwrap(), 0);
    assert!(matches!(client.record("c", &json!(1)), Err(Error::OptedOut(_))));
    client.opt_in().unwrap();
    client.record("c", &json!(1)).unwrap();
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (1, 2.0));
}

#[test]
fn a_state_an_older_client_opted_out_without_its_salt_opts_in_with_a_fresh_one() {
    let dir = temp_dir("opt-out-legacy");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    client.opt_out().unwrap();
    drop(client);
    // The state as this client wrote it before it kept the salt and counted what opting out deleted.
    let mut doc = state_doc(&dir);
    let device = doc["device"].as_object_mut().unwrap();
    device.insert("salt".into(), Value::Null);
    device.remove("discarded");
    std::fs::write(dir.join("state.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    every_query(&client);
    assert!(client.is_opted_out().unwrap());
    assert!(client.counts().unwrap().is_empty(), "nothing counted as discarded then");
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");
    client.opt_in().unwrap();
    let d = state_doc(&dir)["device"].clone();
    assert!(d["secret"].is_string() && d["salt"].is_string(), "{d}");
    client.record("c", &json!(2)).unwrap();
    assert_eq!(client.next_batch(None).unwrap().unwrap().reports.len(), 1);
    // A state without the opted_out marker or the discarded counts (a collecting device, written before) reads too.
    let mut doc = state_doc(&dir);
    let device = doc["device"].as_object_mut().unwrap();
    device.remove("opted_out");
    device.remove("discarded");
    std::fs::write(dir.join("state.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let client = open(&dir).unwrap();
    assert!(!client.is_opted_out().unwrap());
    let want = Counts { reports: 1, pending: 1, uploaded: 0, discarded: 0 };
    assert_eq!(client.counts().unwrap().into_iter().collect::<Vec<_>>(), [("c".to_string(), want)]);
    let _ = std::fs::remove_dir_all(&dir);
}
