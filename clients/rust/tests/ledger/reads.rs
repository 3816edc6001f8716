//! Reads write nothing: opening a store and every query leave the folder as they found it, a read-only
//! folder too.

use super::*;

#[test]
fn opening_a_store_and_every_query_write_nothing() {
    let dir = temp_dir("reads");
    {
        let client = open(&dir).unwrap();
        for i in 0..6 {
            client.record("c", &json!(i % 4)).unwrap();
        }
        client.next_batch(None).unwrap().unwrap(); // a batch of 4 pinned, 2 more waiting
    }
    let before = snapshot(&dir);
    assert!(before.contains_key("state.json") && before.contains_key("outbox.0.log"), "{:?}", before.keys());
    // Opening it again, every query, and the next batch (the pinned one, returned again).
    let client = open(&dir).unwrap();
    every_query(&client);
    let pinned = client.next_batch(None).unwrap().unwrap();
    assert_eq!(pinned.reports.len(), 4);
    assert_eq!(client.next_batch(Some(1)).unwrap(), Some(pinned.clone()), "the pinned part comes back");
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");

    // Nothing due (the upload interval): next_batch answers None without writing.
    client.acknowledge_batch(&pinned.id, &pinned.ids()).unwrap();
    drop(client);
    let waiting = client_with(FileStore::open(&dir).unwrap(), 3600, None).unwrap();
    let before = snapshot(&dir);
    assert_eq!(waiting.next_batch(None).unwrap(), None, "the upload interval has not passed");
    every_query(&waiting);
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");
    // A change that changes nothing (acknowledging an unknown batch, splitting one) writes nothing either.
    assert_eq!(waiting.acknowledge_batch("0123", &[1]).unwrap(), 0);
    assert_eq!(waiting.split_batch("0123").unwrap(), 0);
    assert_eq!(snapshot(&dir), before, "a transaction that changed nothing wrote");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reads_leave_a_killed_process_leftovers_for_the_next_write_to_repair() {
    let dir = temp_dir("leftovers");
    let client = open(&dir).unwrap();
    client.record("c", &json!(1)).unwrap();
    drop(client);
    // What a killed process leaves: a temporary state file, and a torn tail on the log.
    std::fs::write(dir.join("state.json.123.deadbeef.tmp"), b"{half a state").unwrap();
    let log = dir.join("outbox.0.log");
    let committed = std::fs::metadata(&log).unwrap().len();
    let mut torn = std::fs::read(&log).unwrap();
    torn.extend_from_slice(b"99\tc\t{\"half");
    std::fs::write(&log, &torn).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(client.pending().unwrap(), 1, "the torn tail is not a report");
    assert_eq!(snapshot(&dir), before, "a read repaired something");
    // The first write repairs both.
    client.record("c", &json!(2)).unwrap();
    assert!(!dir.join("state.json.123.deadbeef.tmp").exists(), "the temporary file is swept by a write");
    let lines = std::fs::read_to_string(&log).unwrap();
    assert!(!lines.contains("half"), "the torn tail is cut: {lines:?}");
    assert!(std::fs::metadata(&log).unwrap().len() > committed);
    assert_eq!(client.pending().unwrap(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The read-only child: opens the store in `LDP_READONLY_CHILD` (a folder it cannot write), queries it, and checks
/// that a record fails. Run by `a_read_only_folder_opens_and_answers_every_query`.
#[test]
fn readonly_child() {
    let Some(dir) = std::env::var_os("LDP_READONLY_CHILD") else { return };
    let dir = PathBuf::from(dir);
    assert!(std::fs::write(dir.join("probe"), b"x").is_err(), "the folder is writable: the test tests nothing");
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(client.pending().unwrap(), 3);
    assert!(client.pending_bytes().unwrap() > 0);
    assert_eq!(eps(&client, None), 3.0);
    let batch = client.next_batch(None).unwrap().expect("the pinned batch");
    assert_eq!(batch.reports.len(), 3);
    match client.record("c", &json!(1)) {
        Err(Error::Ledger(_)) => {}
        other => panic!("a record in a read-only folder: {other:?}"),
    }
    println!("READONLY-OK");
}

/// A folder the app cannot write (a read-only mount, a full disk's cousin) still opens and answers every query. As
/// root, permissions do not bind, so the child runs as user and group 65534 (nobody).
#[cfg(unix)]
#[test]
fn a_read_only_folder_opens_and_answers_every_query() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = temp_dir("readonly");
    {
        let client = open(&dir).unwrap();
        for i in 0..3 {
            client.record("c", &json!(i)).unwrap();
        }
        client.next_batch(None).unwrap().unwrap();
    }
    for name in names(&dir) {
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = snapshot(&dir);
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["--exact", "reads::readonly_child", "--nocapture", "--test-threads=1"]).env("LDP_READONLY_CHILD", &dir);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        // The test binary must be readable and runnable by nobody: copy it where it is.
        let copy = dir.parent().unwrap().join(format!("ldp-ledger-readonly-exe-{}", std::process::id()));
        std::fs::copy(&exe, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        cmd = std::process::Command::new(&copy);
        cmd.args(["--exact", "reads::readonly_child", "--nocapture", "--test-threads=1"])
            .env("LDP_READONLY_CHILD", &dir)
            .uid(65534)
            .gid(65534)
            .current_dir("/");
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("READONLY-OK"),
        "the read-only child failed (as root: {root}):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(&dir), before);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if root {
        let _ =
            std::fs::remove_file(dir.parent().unwrap().join(format!("ldp-ledger-readonly-exe-{}", std::process::id())));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
