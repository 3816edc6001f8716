//! Fail closed: a state that is missing beside traces of it, lost, or damaged is refused, nothing deleted.

use super::*;

#[test]
fn a_missing_state_beside_an_outbox_log_is_refused_and_nothing_is_deleted() {
    let dir = temp_dir("fail-closed");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    drop(client);
    std::fs::remove_file(dir.join("state.json")).unwrap();
    let before = snapshot(&dir);
    for attempt in 0..2 {
        let e = open(&dir).expect_err("a missing state beside its outbox opened as a new device");
        let text = e.to_string();
        assert!(matches!(e, Error::Ledger(_)), "{e:?}");
        assert!(
            text.contains("state.json is missing")
                && text.contains("outbox.0.log")
                && text.contains("delete the folder"),
            "attempt {attempt}: {text}"
        );
        assert!(!text.contains("state.reserve"), "the reserve is not a trace: {text}");
        assert_eq!(snapshot(&dir), before, "attempt {attempt}: the refused open changed the folder");
    }
    // A temporary state file alone is a trace too; the lock file alone is not.
    let dir2 = temp_dir("fail-closed-tmp");
    std::fs::write(dir2.join("state.json.7.abc.tmp"), b"{").unwrap();
    let e = open(&dir2).unwrap_err().to_string();
    assert!(e.contains("state.json.7.abc.tmp"), "{e}");
    assert!(dir2.join("state.json.7.abc.tmp").exists());
    let dir3 = temp_dir("fail-closed-lock");
    std::fs::write(dir3.join("lock"), b"").unwrap();
    let fresh = open(&dir3).unwrap();
    assert_eq!(fresh.pending().unwrap(), 0);
    for d in [dir, dir2, dir3] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_state_lost_under_an_open_client_is_refused_and_nothing_is_deleted() {
    let dir = temp_dir("fail-closed-open");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    std::fs::remove_file(dir.join("state.json")).unwrap();
    let before = snapshot(&dir);
    let e = client.record("c", &json!(2)).unwrap_err().to_string();
    assert!(e.contains("state.json is missing"), "{e}");
    assert!(client.pending().unwrap_err().to_string().contains("state.json is missing"));
    assert_eq!(snapshot(&dir), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_state_is_refused_and_says_how_to_start_over() {
    let dir = temp_dir("damaged");
    open(&dir).unwrap().record("c", &json!(1)).unwrap();
    std::fs::write(dir.join("state.json"), b"{\"device\": ").unwrap();
    let before = snapshot(&dir);
    let e = open(&dir).unwrap_err();
    assert!(matches!(e, Error::Ledger(_)) && e.to_string().contains("delete the folder"), "{e}");
    assert_eq!(snapshot(&dir), before);
    let _ = std::fs::remove_dir_all(&dir);
}
