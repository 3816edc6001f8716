//! The OS generator is fork-safe: a child made by `fork()` never draws the bytes its parent draws, although it
//! inherits the parent's pool of random bytes. (Before, parent and child made identical reports: 20 of 20 GRR
//! reports alike.) The only test of its binary: the child of a `fork()` in a process running other tests' threads
//! would inherit their locks.

#![cfg(unix)]

use ldp_client::random::{OsRandomSource, RandomSource};
use ldp_client::{json, protocols, CollectionSpec, EncoderOptions};

const REPORTS: usize = 20;

/// `REPORTS` GRR reports (domain 1024, ε = 0.1: almost uniform) and as many 64-bit draws from `rng`'s pool.
fn draws(encoder: &mut ldp_client::Encoder, rng: &mut OsRandomSource) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..REPORTS {
        let report = encoder.encode(&json!(i % 1024)).unwrap();
        out.push(report.to_json());
        out.push(format!("{:016x}", rng.bits(64).unwrap()));
    }
    out
}

#[test]
fn a_forked_child_never_draws_its_parents_bytes() {
    let spec = CollectionSpec::from_value(
        &json!({"spec_version": 1, "name": "fork", "budget": {"per_window": 10.0, "lifetime": 10.0},
                "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 0.1, "domain_size": 1024},
                                  "budget": {"per_report": 0.1}}}}),
        "spec",
    )
    .unwrap();
    let m = spec.metric("m").unwrap();
    let options = EncoderOptions { rng: Some(Box::new(OsRandomSource::new())), ..Default::default() };
    let mut encoder = protocols::get("grr").unwrap().encoder(m.params.clone(), options).unwrap();
    let mut rng = OsRandomSource::new();
    // Draw first: both pools are filled, 4 KiB each, and most of them is left for after the fork.
    draws(&mut encoder, &mut rng);

    let mut fds = [0; 2];
    // SAFETY: pipe and fork as documented; the child only draws, writes to the pipe and _exits.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let text = draws(&mut encoder, &mut rng).join("\n");
        let sent = write_all(fds[1], text.as_bytes());
        // SAFETY: ends the child at once, running no test harness code.
        unsafe { libc::_exit(if sent { 0 } else { 1 }) };
    }
    // SAFETY: closes the parent's copy of the write end, so that the read sees the child's end of file.
    unsafe { libc::close(fds[1]) };
    let ours = draws(&mut encoder, &mut rng);
    let theirs = read_all(fds[0]);
    let mut status = 0;
    // SAFETY: waits for the child made above.
    unsafe {
        libc::close(fds[0]);
        libc::waitpid(pid, &mut status, 0);
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child failed: status {status}");
    let theirs: Vec<String> = String::from_utf8(theirs).unwrap().lines().map(str::to_string).collect();
    assert_eq!(theirs.len(), ours.len());
    let same_reports = ours.iter().zip(&theirs).step_by(2).filter(|(a, b)| a == b).count();
    let same_words = ours.iter().zip(&theirs).skip(1).step_by(2).filter(|(a, b)| a == b).count();
    // By chance, a GRR report of ε = 0.1 over 1024 values matches another with probability about 1/1000, a 64-bit
    // word never: a copied pool made all of them match.
    assert_eq!(same_words, 0, "the child drew its parent's 64-bit words");
    assert!(same_reports <= 2, "{same_reports} of {REPORTS} reports alike in parent and child");
}

/// Writes all of `bytes` to the file descriptor `fd`; whether it could.
fn write_all(fd: i32, bytes: &[u8]) -> bool {
    let mut sent = 0;
    while sent < bytes.len() {
        // SAFETY: writes the bytes of `bytes` still to send.
        let n = unsafe { libc::write(fd, bytes.as_ptr().add(sent).cast(), bytes.len() - sent) };
        if n <= 0 {
            break;
        }
        sent += n as usize;
    }
    sent == bytes.len()
}

/// Reads the file descriptor `fd` to its end (or an error).
fn read_all(fd: i32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: reads into `buf`.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
    out
}
