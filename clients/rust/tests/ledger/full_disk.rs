//! A full disk: the reserve a record makes, and a full disk that still opens, reads and acknowledges.

use super::*;

fn reserve_len(dir: &Path) -> Option<u64> {
    std::fs::metadata(dir.join("state.reserve")).ok().map(|m| m.len())
}

#[test]
fn a_record_makes_the_reserve_reads_never_do_and_it_is_no_trace() {
    let dir = temp_dir("reserve");
    let client = open(&dir).unwrap();
    assert_eq!(reserve_len(&dir), None, "making the device's state records nothing: no reserve");
    client.record("c", &json!(1)).unwrap();
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "a record makes the reserve");
    assert!(std::fs::read(dir.join("state.reserve")).unwrap().iter().all(|b| *b == 0));
    // Gone (a full disk took it): reads do not make it again, nor do commits that keep no report.
    std::fs::remove_file(dir.join("state.reserve")).unwrap();
    let before = snapshot(&dir);
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(snapshot(&dir), before, "a read wrote to the folder");
    let batch = client.next_batch(None).unwrap().unwrap();
    client.acknowledge_batch(&batch.id, &batch.ids()).unwrap();
    assert_eq!(reserve_len(&dir), None);
    client.record("c", &json!(2)).unwrap();
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "the next record makes it again");
    // Not a trace: beside a missing state.json it is not named, and alone (with its temporary file) it opens as a
    // new device; the temporary file is swept by the first write, the reserve kept.
    let lone = temp_dir("reserve-lone");
    std::fs::write(lone.join("state.reserve"), vec![0; RESERVE_BYTES]).unwrap();
    std::fs::write(lone.join("state.reserve.77.abc.tmp"), b"\0\0").unwrap();
    let fresh = open(&lone).unwrap();
    assert_eq!(fresh.pending().unwrap(), 0);
    fresh.record("c", &json!(0)).unwrap();
    assert_eq!(names(&lone), ["lock", "outbox.0.log", "state.json", "state.reserve"]);
    for d in [dir, lone] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Writes `path` until the disk is full to its last byte: 4096-byte blocks until the disk refuses one, then single
/// bytes until it refuses one.
#[cfg(unix)]
fn fill_to_the_last_byte(path: &Path) {
    use std::io::Write;
    let full = |e: &std::io::Error| e.raw_os_error() == Some(libc::ENOSPC);
    let mut file = std::fs::File::create(path).unwrap();
    for block in [&[0xa5u8; 4096][..], &[0xa5u8][..]] {
        loop {
            match file.write(block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if full(&e) => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
    }
    match file.sync_all() {
        Err(e) if !full(&e) => panic!("{e}"),
        _ => {}
    }
}

/// Free blocks of the file system holding `dir`, as an unprivileged user may use them (`statvfs`'s `f_bavail`).
#[cfg(unix)]
fn blocks_available(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs fills the struct it is given; a zeroed statvfs is a valid value of it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut st) }, 0, "statvfs {}", dir.display());
    st.f_bavail as u64
}

/// The full-disk child: run by `a_full_disk_still_opens_reads_and_acknowledges` in a mount namespace of its own,
/// on a 1 MiB tmpfs mounted at `LDP_FULL_DISK_CHILD`.
#[cfg(unix)]
#[test]
fn full_disk_child() {
    let Some(dir) = std::env::var_os("LDP_FULL_DISK_CHILD") else { return };
    let dir = PathBuf::from(dir);
    {
        let client = open(&dir).unwrap();
        client.record("c", &json!(0)).unwrap();
        client.record("c", &json!(1)).unwrap();
    }
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "the records made the reserve");
    let fill = dir.join("fill");
    fill_to_the_last_byte(&fill);
    assert_eq!(blocks_available(&dir), 0, "the disk is not full");

    // Open, read, and a record refused for lack of room, which leaves the reserve alone.
    let client = open(&dir).unwrap();
    every_query(&client);
    assert_eq!(client.pending().unwrap(), 2);
    let e = client.record("c", &json!(2)).unwrap_err();
    assert!(matches!(&e, Error::Ledger(m) if m.contains("the disk is full")), "{e:?}");
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "a record took the reserve");
    assert_eq!((client.pending().unwrap(), eps(&client, None)), (2, 2.0), "the refused record kept nothing");

    // Pinning the batch and acknowledging it work: the reserve gives its room.
    let batch = client.next_batch(None).unwrap().expect("the batch");
    assert_eq!(batch.reports.len(), 2);
    assert_eq!(client.acknowledge_batch(&batch.id, &batch.ids()).unwrap(), 2);
    assert_eq!(client.pending().unwrap(), 0);
    assert_eq!(client.uploaded().unwrap(), [("c".to_string(), 2)]);
    assert_eq!(reserve_len(&dir), None, "the reserve gave its room");

    // Room again: the next record makes the reserve again.
    std::fs::remove_file(&fill).unwrap();
    client.record("c", &json!(3)).unwrap();
    assert_eq!(reserve_len(&dir), Some(RESERVE_BYTES as u64), "the reserve is back");
    let leftovers: Vec<String> = names(&dir).into_iter().filter(|n| n.ends_with(".tmp")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    println!("FULL-DISK-OK");
}

/// A disk filled to its last byte: the app still opens its store, reads it, and acknowledges what it uploaded (which
/// frees room), thanks to the reserve; a record fails and leaves the reserve. The child runs on a real 1 MiB tmpfs,
/// mounted in a user and mount namespace of its own (`unshare -rm`); where those are not allowed, the test is
/// skipped with a note.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_still_opens_reads_and_acknowledges() {
    use std::process::Command;
    let probe = Command::new("unshare").args(["-rm", "true"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        let why = match probe {
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        println!("skipped: `unshare -rm true` fails ({why}): no user and mount namespace to mount a small tmpfs in");
        return;
    }
    let dir = temp_dir("full-disk");
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c"])
        .arg(
            r#"mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" --exact full_disk::full_disk_child --nocapture --test-threads=1"#,
        )
        .arg("sh")
        .arg(&dir)
        .arg(std::env::current_exe().unwrap())
        .env("LDP_FULL_DISK_CHILD", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("FULL-DISK-OK"),
        "the full-disk child failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(names(&dir).is_empty(), "the tmpfs went with the child's namespace");
    let _ = std::fs::remove_dir_all(&dir);
}
