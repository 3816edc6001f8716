//! `ldp_set_log_callback`: the uploader's log lines reach a C callback (its own process: the `log` facade takes one
//! logger per process), at the levels asked for, with the caller's pointer, never with the token; refusals.
#![cfg(feature = "uploader")]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ldp_client::ffi::*;

static LINES: Mutex<Vec<(c_int, String)>> = Mutex::new(Vec::new());
static USER: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn collect(user: *mut c_void, level: c_int, line: *const c_char) {
    assert_eq!(user as *const AtomicUsize, &USER as *const AtomicUsize, "the caller's pointer");
    USER.fetch_add(1, Ordering::SeqCst);
    let text = CStr::from_ptr(line).to_string_lossy().into_owned();
    LINES.lock().unwrap().push((level, text));
}

/// A URL of a loopback port nothing listens on (bound, then closed).
fn dead_url() -> String {
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/reports", dead.local_addr().unwrap());
    drop(dead);
    url
}

#[test]
fn the_uploaders_lines_reach_the_callback_once_installed() {
    let last = || unsafe { CStr::from_ptr(ldp_last_error_message()) }.to_string_lossy().into_owned();
    let user = &USER as *const AtomicUsize as *mut c_void;
    unsafe {
        assert_eq!(ldp_set_log_callback(None, user, 3), LdpStatus::LdpInvalidArgument);
        assert_eq!(ldp_set_log_callback(Some(collect), user, 6), LdpStatus::LdpValueError);
        assert!(last().contains("max_level must be 0 (none) to 5 (trace), got 6"), "{}", last());
        assert_eq!(ldp_set_log_callback(Some(collect), user, 3), LdpStatus::LdpOk, "{}", last());
        assert_eq!(ldp_set_log_callback(Some(collect), user, 3), LdpStatus::LdpValueError);
        assert!(last().contains("already installed"), "{}", last());
    }

    let spec = br#"{"spec_version": 1, "name": "log-test", "budget": {"per_window": 1e6, "lifetime": 1e6},
        "upload": {"min_interval_seconds": 0, "max_batch": 64},
        "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                          "budget": {"per_report": 1.0}}}}"#;
    let (a, b) = (dead_url(), dead_url());
    let (ca, cb) = (CString::new(a.as_str()).unwrap(), CString::new(b.as_str()).unwrap());
    let token = CString::new("log-test-secret-token").unwrap();
    let metric = CString::new("m").unwrap();
    let mut result = LdpUploadResult::default();
    let status = unsafe {
        let mut s = std::ptr::null_mut();
        assert_eq!(ldp_spec_parse(spec.as_ptr(), spec.len(), &mut s), LdpStatus::LdpOk);
        let mut c = std::ptr::null_mut();
        assert_eq!(ldp_client_open_memory(s, std::ptr::null(), &mut c), LdpStatus::LdpOk);
        assert_eq!(ldp_client_record_int(c, metric.as_ptr(), 1, std::ptr::null_mut()), LdpStatus::LdpOk);
        let list = [ca.as_ptr(), cb.as_ptr()];
        let status = ldp_client_upload(c, list.as_ptr(), list.len(), token.as_ptr(), 1.0, 0.5, &mut result);
        ldp_client_free(c);
        ldp_spec_free(s);
        status
    };
    assert!(status == LdpStatus::LdpOk || status == LdpStatus::LdpTransportError, "{status:?}");

    let lines = LINES.lock().unwrap().clone();
    let (host_a, host_b) = (&a[7..a.len() - 11], &b[7..b.len() - 11]);
    assert!(!lines.is_empty() && USER.load(Ordering::SeqCst) == lines.len());
    assert!(lines.iter().all(|(level, _)| (1..=3).contains(level)), "nothing past info: {lines:?}");
    assert!(lines.iter().all(|(_, l)| !l.contains("log-test-secret-token")), "never the token: {lines:?}");
    let switch = format!("upload to {host_a}: ");
    assert!(
        lines.iter().any(|(level, l)| *level == 3
            && l.starts_with(&switch)
            && l.contains(&format!("failing over to {host_b}"))),
        "the switch from the first endpoint to the second: {lines:?}"
    );
}
