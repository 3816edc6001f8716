//! Every C entry point taking bytes or strings, fed arbitrary bytes: each returns a status (an error for bad input),
//! never crashes, never panics across the boundary. The first byte picks the entry point; the rest is its input
//! (NUL-terminated where the entry point takes a C string).
#![no_main]

use std::ffi::CString;
use std::ptr;

use ldp_client::ffi::*;
use libfuzzer_sys::fuzz_target;

const SPEC: &str = r#"{"spec_version":1,"name":"fuzz","budget":{"per_window":10.0,"lifetime":100.0},
  "upload":{"min_interval_seconds":0,"max_batch":16},
  "metrics":{"c":{"protocol":"grr","params":{"epsilon":1.0,"domain_size":4,"labels":["a","b","c","d"]},
  "budget":{"per_report":1.0}},
  "m":{"protocol":"loue","params":{"epsilon_perm":2.0,"epsilon":1.0,"domain_size":4},"budget":{"per_report":2.0}}}}"#;

fn c_string(bytes: &[u8]) -> CString {
    CString::new(bytes.iter().copied().filter(|b| *b != 0).collect::<Vec<u8>>()).unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    unsafe {
        let mut spec = ptr::null_mut();
        assert_eq!(ldp_spec_parse(SPEC.as_ptr(), SPEC.len(), &mut spec), LdpStatus::LdpOk);
        let mut client = ptr::null_mut();
        assert_eq!(ldp_client_open_memory(spec, ptr::null(), &mut client), LdpStatus::LdpOk);
        let text = c_string(rest);
        let mut id = 0u64;
        match which % 9 {
            0 => {
                let mut s = ptr::null_mut();
                let _ = ldp_spec_parse(rest.as_ptr(), rest.len(), &mut s);
                ldp_spec_free(s);
            }
            1 => {
                let _ = ldp_client_record_json(client, c"c".as_ptr(), rest.as_ptr(), rest.len(), &mut id);
            }
            2 => {
                let _ = ldp_client_record_string(client, c"c".as_ptr(), rest.as_ptr(), rest.len(), &mut id);
            }
            3 => {
                let _ = ldp_client_record_int(client, text.as_ptr(), 1, &mut id);
            }
            4 => {
                let mut r = ptr::null_mut();
                let _ = ldp_random_replay(text.as_ptr(), &mut r);
                ldp_random_free(r);
            }
            5 => {
                let mut r = ptr::null_mut();
                let _ = ldp_random_keyed(rest.as_ptr(), rest.len(), rest.as_ptr(), rest.len(), &mut r);
                ldp_random_free(r);
            }
            6 => {
                let mut e = ptr::null_mut();
                let _ = ldp_encoder_new(spec, text.as_ptr(), rest.as_ptr(), rest.len(), -1, ptr::null(), &mut e);
                ldp_encoder_free(e);
                let mut e = ptr::null_mut();
                if ldp_encoder_new(spec, c"m".as_ptr(), b"k".as_ptr(), 1, -1, ptr::null(), &mut e) == LdpStatus::LdpOk {
                    let mut p = ptr::null_mut();
                    if ldp_encoder_prepare(e, rest.as_ptr(), rest.len(), &mut p) == LdpStatus::LdpOk {
                        let mut line = ptr::null_mut();
                        let _ = ldp_encoder_randomize(e, p, -1, 0, &mut line);
                        ldp_string_free(line);
                    }
                    ldp_prepared_free(p);
                }
                ldp_encoder_free(e);
            }
            7 => {
                let mut ids = [0u64; 4];
                let _ = ldp_client_record_many_json(client, rest.as_ptr(), rest.len(), ids.as_mut_ptr(), ids.len());
                let mut counts = ptr::null_mut();
                let _ = ldp_client_counts_json(client, &mut counts);
                ldp_string_free(counts);
            }
            _ => {
                // An upload round with the fuzz input as the collector's reply.
                let _ = ldp_client_record_int(client, c"c".as_ptr(), 2, &mut id);
                let mut req = ptr::null_mut();
                if ldp_client_next_request(client, c"token".as_ptr(), 1, &mut req) == LdpStatus::LdpOk && !req.is_null() {
                    let status = if rest.len() > 1 { 100 + (rest[0] as i32 * 2) % 500 } else { -1 };
                    let mut action = LdpReplyAction::LdpReplyFail;
                    let mut wait = 0.0;
                    let _ = ldp_client_handle_reply(client, req, status, rest.as_ptr(), rest.len(), 0, text.as_ptr(), &mut action, &mut wait);
                    ldp_request_free(req);
                }
            }
        }
        ldp_client_free(client);
        ldp_spec_free(spec);
    }
});
