//! A two-aggregator report's upload to its task's leader (Python's `ldp/client/dap_upload.py`): the request's media
//! type, the leader's refusal codes, and what each answer means ([`DapReply::classify`]), for the built-in uploader
//! and for an app that sends [`DapUpload`](super::DapUpload)s with its own HTTP stack.

use serde_json::Value;

use super::parse_retry_after;

/// The media type of a DAP report upload (`Content-Type` of `PUT {leader}/tasks/{task_id}/reports`).
pub const DAP_MEDIA_TYPE: &str = "application/dap-report";

/// Refusal codes after which no retry can make the leader store the report: it is deleted and counted by code (the
/// report is malformed for the task, too old, its window already collected, sealed to a key the aggregator no
/// longer has, or does not open; `report_rejected`, `outdated_config` and `invalid_message` are what a DAP-09 leader
/// of another implementation answers for the same cases).
pub const DAP_GONE: [&str; 8] = [
    "invalid_message",
    "report_too_late",
    "batch_collected",
    "hpke_unknown_config_id",
    "hpke_decrypt_error",
    "report_rejected",
    "outdated_config",
    "vdaf_invalid",
];

/// The DAP problem types' prefix (DAP-09 §3.2).
const DAP_TYPE: &str = "urn:ietf:params:ppm:dap:error:";

/// The refusal code of a leader's problem document: `ldp`'s `code` member (1 to 40 of `a-z` and `_`), else the DAP
/// problem `type`'s name (1 to 40 ASCII letters) in snake case (`reportTooEarly`: `report_too_early`); `None` when
/// the body says neither (Python's `refusal_code`).
pub fn dap_refusal_code(body: &[u8]) -> Option<String> {
    let doc: Value = serde_json::from_slice(body).ok()?;
    let doc = doc.as_object()?;
    if let Some(code) = doc.get("code").and_then(Value::as_str) {
        if (1..=40).contains(&code.len()) && code.bytes().all(|c| c.is_ascii_lowercase() || c == b'_') {
            return Some(code.to_string());
        }
    }
    let name = doc.get("type")?.as_str()?.strip_prefix(DAP_TYPE)?;
    if !(1..=40).contains(&name.len()) || !name.bytes().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let mut out = String::with_capacity(name.len() + 8);
    for (i, c) in name.chars().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    Some(out)
}

/// What the leader's answer to one report means.
#[derive(Debug, Clone, PartialEq)]
pub enum DapReply {
    /// 2xx: stored ([`Outbox::acknowledge_dap_report`](super::Outbox::acknowledge_dap_report), counted accepted).
    Stored,
    /// 409 `report_replayed`: stored before, the answer lost on the way back (acknowledge, counted a duplicate).
    Replayed,
    /// 400 with a code of [`DAP_GONE`]: no retry can change it (acknowledge, counted rejected by this code).
    Gone(String),
    /// 400 `report_too_early`: the device's clock is ahead of the leader's; keep the report for a later call.
    Later,
    /// 429 or 503 with a usable `Retry-After`: retry after these seconds (cap them).
    RetryAfter(f64),
    /// No answer, 408, 429/503 without `Retry-After`, another 5xx: retry with back-off and jitter.
    Backoff,
    /// Anything else (401, 404 `unrecognized_task`, 415, a redirect, …): the task or the leader's URL is wrong and
    /// every report would fail alike; keep the report and stop. The HTTP status and the reason (the refusal code, or
    /// `HTTP <status>`).
    Fail(u16, String),
}

impl DapReply {
    /// Classifies an answer: `status` (`None`: no answer, the connection failed or timed out), the first bytes of
    /// the body, the `Retry-After` header and the time now (Unix seconds, for an HTTP-date `Retry-After`).
    pub fn classify(status: Option<u16>, body: &[u8], retry_after: Option<&str>, now: f64) -> DapReply {
        let Some(status) = status else { return DapReply::Backoff };
        let code = dap_refusal_code(body);
        match (status, code.as_deref()) {
            (200..=299, _) => DapReply::Stored,
            (409, Some("report_replayed")) => DapReply::Replayed,
            (400, Some(c)) if DAP_GONE.contains(&c) => DapReply::Gone(c.to_string()),
            (400, Some("report_too_early")) => DapReply::Later,
            (429 | 503, _) => parse_retry_after(retry_after, now).map_or(DapReply::Backoff, DapReply::RetryAfter),
            (408 | 500..=599, _) => DapReply::Backoff,
            (_, c) => DapReply::Fail(status, c.map_or_else(|| format!("HTTP {status}"), str::to_string)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (the property tests' inputs).
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }

        fn word(&mut self, alphabet: &[u8], max: u64) -> String {
            (0..=self.below(max)).map(|_| alphabet[self.below(alphabet.len() as u64) as usize] as char).collect()
        }
    }

    fn is_code(c: &str) -> bool {
        (1..=40).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    }

    #[test]
    fn any_body_gives_a_code_of_the_codes_alphabet_or_none() {
        let mut rng = Lcg(0x6461_7020_636f_6465);
        let pieces: [&[u8]; 6] =
            [b"{\"code\":", b"{\"type\":\"urn:ietf:params:ppm:dap:error:", b"\"", b"}", b"aZ_", b"\xff,1"];
        for _ in 0..20_000 {
            let mut body = Vec::new();
            for _ in 0..rng.below(6) {
                body.extend_from_slice(pieces[rng.below(6) as usize]);
                body.extend(rng.word(b"abcXYZ_ -0\"{}", 12).bytes());
            }
            if let Some(code) = dap_refusal_code(&body) {
                assert!(is_code(&code), "{code:?} from {body:?}");
            }
        }
    }

    #[test]
    fn a_dap_type_is_snake_cased_and_an_ldp_code_comes_first() {
        let mut rng = Lcg(7);
        for _ in 0..2_000 {
            let words: Vec<String> = (0..=rng.below(3)).map(|_| rng.word(b"abcdefghijklmnopqrstuvwxyz", 6)).collect();
            let camel: String = words
                .iter()
                .enumerate()
                .map(|(i, w)| if i == 0 { w.clone() } else { w[..1].to_uppercase() + &w[1..] })
                .collect();
            let kind = format!("{DAP_TYPE}{camel}");
            let want = (camel.len() <= 40).then(|| words.join("_"));
            assert_eq!(dap_refusal_code(json_doc(&[("type", &kind)]).as_bytes()), want, "{camel}");
            let code = rng.word(b"abc_", 40);
            let both = json_doc(&[("code", &code), ("type", &kind)]);
            assert_eq!(dap_refusal_code(both.as_bytes()), Some(code.clone()));
            // A code out of the alphabet is no code: the type speaks.
            let upper = json_doc(&[("code", &code.to_uppercase()), ("type", &kind)]);
            let fallback = if code.bytes().any(|b| b.is_ascii_lowercase()) { want.clone() } else { Some(code) };
            assert_eq!(dap_refusal_code(upper.as_bytes()), fallback);
        }
        assert_eq!(
            dap_refusal_code(br#"{"type":"urn:ietf:params:ppm:dap:error:reportTooEarly"}"#).as_deref(),
            Some("report_too_early")
        );
        assert_eq!(dap_refusal_code(br#"{"type":"about:blank","code":"Bad"}"#), None);
        assert_eq!(dap_refusal_code(b"[1]"), None);
    }

    fn json_doc(members: &[(&str, &str)]) -> String {
        Value::Object(members.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect()).to_string()
    }

    #[test]
    fn each_answer_is_classified_as_pythons_dap_lane_does() {
        let code = |c: &str| format!(r#"{{"code":"{c}"}}"#).into_bytes();
        assert_eq!(DapReply::classify(Some(201), b"", None, 0.0), DapReply::Stored);
        assert_eq!(DapReply::classify(Some(409), &code("report_replayed"), None, 0.0), DapReply::Replayed);
        assert_eq!(DapReply::classify(Some(409), b"", None, 0.0), DapReply::Fail(409, "HTTP 409".into()));
        for gone in DAP_GONE {
            assert_eq!(DapReply::classify(Some(400), &code(gone), None, 0.0), DapReply::Gone(gone.into()));
            assert!(matches!(DapReply::classify(Some(403), &code(gone), None, 0.0), DapReply::Fail(403, _)));
        }
        assert_eq!(DapReply::classify(Some(400), &code("report_too_early"), None, 0.0), DapReply::Later);
        assert_eq!(DapReply::classify(Some(503), b"", Some("12"), 0.0), DapReply::RetryAfter(12.0));
        assert_eq!(DapReply::classify(Some(429), b"", None, 0.0), DapReply::Backoff);
        assert_eq!(DapReply::classify(None, b"", None, 0.0), DapReply::Backoff);
        assert_eq!(DapReply::classify(Some(502), b"", None, 0.0), DapReply::Backoff);
        let e = DapReply::classify(Some(404), &code("unrecognized_task"), None, 0.0);
        assert_eq!(e, DapReply::Fail(404, "unrecognized_task".into()));
    }
}
