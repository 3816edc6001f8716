//! Prio3 sharding is fork-safe (feature `prio`): a child made by `fork()` never shards with its parent's nonce or
//! seeds. (The prio crate's own `shard` draws from rand's thread generator, which is not reseeded in a forked child:
//! parent and child would then send reports with the same helper seed, and the leader could subtract one
//! measurement from the other. This crate draws from the OS generator at each call.) Both drafts: in draft 08 the
//! sharding randomness is drawn by prio 0.16.8's own `shard`, from `getrandom`, the OS generator too. The only test
//! of its binary, as tests/fork.rs explains.

#![cfg(all(unix, feature = "prio"))]

use ldp_client::prio3::{Measurement, Prio3Client, Prio3Type, VdafDraft};

const REPORTS: usize = 20;

/// `REPORTS` shards of the same measurement by each client: each one's nonce and helper seed in hex.
fn shards(clients: &[Prio3Client]) -> Vec<String> {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    clients
        .iter()
        .flat_map(|client| {
            (0..REPORTS).map(move |_| {
                let s = client.shard(&Measurement::Histogram(3)).unwrap();
                format!("{} {}", hex(&s.nonce), hex(s.helper_share()))
            })
        })
        .collect()
}

#[test]
fn a_forked_child_never_shards_with_its_parents_randomness() {
    let typ = Prio3Type::Histogram { length: 8, chunk_length: 3 };
    let client =
        [Prio3Client::new(typ, b"fork").unwrap(), Prio3Client::with_draft(VdafDraft::Draft08, typ, b"").unwrap()];
    shards(&client);

    let mut fds = [0; 2];
    // SAFETY: pipe and fork as documented; the child only shards, writes to the pipe and _exits.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let text = shards(&client).join("\n");
        let mut sent = 0;
        while sent < text.len() {
            // SAFETY: writes the bytes of `text` still to send.
            let n = unsafe { libc::write(fds[1], text.as_ptr().add(sent).cast(), text.len() - sent) };
            if n <= 0 {
                break;
            }
            sent += n as usize;
        }
        // SAFETY: ends the child at once, running no test harness code.
        unsafe { libc::_exit(if sent == text.len() { 0 } else { 1 }) };
    }
    // SAFETY: closes the parent's copy of the write end, so that the read sees the child's end of file.
    unsafe { libc::close(fds[1]) };
    let ours = shards(&client);
    let mut theirs = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: reads into `buf`.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        theirs.extend_from_slice(&buf[..n as usize]);
    }
    let mut status = 0;
    // SAFETY: waits for the child made above.
    unsafe {
        libc::close(fds[0]);
        libc::waitpid(pid, &mut status, 0);
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child failed: status {status}");
    let theirs: Vec<String> = String::from_utf8(theirs).unwrap().lines().map(str::to_string).collect();
    assert_eq!(theirs.len(), client.len() * REPORTS);
    let mut all: Vec<&String> = ours.iter().chain(&theirs).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 2 * client.len() * REPORTS, "parent and child sharded with the same nonce and seeds");
}
