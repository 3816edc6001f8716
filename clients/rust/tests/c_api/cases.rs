//! Case files and what the C program must print: each vector file written as the line-based records
//! `tests/c/vectors.c` reads, and each line the program prints checked against the vector's.

use super::surrogates::{has_lone, json_with_escapes, nonfinite_refusals, wtf8};
use super::*;

/// One line the C program must print.
pub(super) enum Want {
    Exact(String),
    Charge(Value),
    /// A refusal checked by status, type, code and fields (the message is this client's own: not empty).
    Refused {
        status: i32,
        ty: String,
        code: String,
        fields: Value,
    },
    /// A refusal checked by status, type and the message's beginning (lone surrogates).
    RefusedLike {
        status: i32,
        ty: &'static str,
        prefix: &'static str,
    },
}

pub(super) struct Expected {
    pub(super) what: String,
    pub(super) want: Want,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the case file of one vector file; what the C program must print for it.
pub(super) fn case_file(name: &str, doc: &Value, path: &Path) -> Vec<Expected> {
    let mut file = CaseFile { name, records: Vec::new(), want: Vec::new() };
    file.records.push(format!("spec\t{}", serde_json::to_string(&doc["spec"]).unwrap()));
    file.expect("spec".into(), Want::Exact(format!("fingerprint\t{}", doc["spec_fingerprint"].as_str().unwrap())));
    for (i, c) in doc["cases"].as_array().unwrap().iter().enumerate() {
        // A case whose value holds a lone surrogate cannot reach a Rust string (tests/vectors.rs says why); its
        // value's refusal at the boundary is checked with the refusals below.
        if c["reports"].as_array().unwrap().iter().any(|r| has_lone(&r["value"])) {
            continue;
        }
        file.case(i, c);
    }
    let spec = CollectionSpec::from_value(&doc["spec"], "spec").unwrap();
    let refusals = doc.get("refusals").and_then(|r| r.get("values")).and_then(Value::as_array);
    for (i, item) in refusals.into_iter().flatten().enumerate() {
        file.refusal(i, item, &spec);
    }
    file.nonfinite(doc);
    let mut text = file.records.join("\n");
    text.push('\n');
    assert!(!text.contains('\r'), "{name}: a record holds a carriage return");
    std::fs::write(path, text).unwrap();
    file.want
}

/// A case file being written: its records, and what the C program must print for them.
struct CaseFile<'a> {
    /// The vector file's name.
    name: &'a str,
    records: Vec<String>,
    want: Vec<Expected>,
}

impl CaseFile<'_> {
    fn expect(&mut self, what: String, want: Want) {
        self.want.push(Expected { what: format!("{}: {what}", self.name), want });
    }

    /// Case `i` of the vector file: its metric, window, secret, cohort and draws, then each report's charge and
    /// line.
    fn case(&mut self, i: usize, c: &Value) {
        let draws: Vec<String> = c["draws"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| format!("{}:{}", d[0].as_u64().unwrap(), d[1].as_str().unwrap()))
            .collect();
        self.records.push(format!(
            "case\t{}\t{}\t{}\t{}\t{}",
            c["metric"].as_str().unwrap(),
            c["window"].as_u64().unwrap(),
            c.get("metric_secret").and_then(Value::as_str).unwrap_or("-"),
            c.get("cohort").and_then(Value::as_u64).map_or(-1, |x| x as i64),
            draws.join(",")
        ));
        self.expect(format!("case {i}"), Want::Exact("case\tok".into()));
        // The ledger's epoch of a charge-on-change protocol, as tests/vectors.rs computes it: it starts at 0 and
        // moves on each time the change value differs from the last one.
        let mut epoch: i64 = -1;
        let mut last: Option<String> = None;
        for (j, r) in c["reports"].as_array().unwrap().iter().enumerate() {
            let charge = &r["charge"];
            let report_epoch = match charge.get("change_value").and_then(Value::as_str) {
                Some(v) => {
                    if last.as_deref() != Some(v) {
                        epoch += 1;
                    }
                    last = Some(v.to_string());
                    epoch
                }
                None => -1,
            };
            self.records.push(format!("report\t{}\t{report_epoch}", serde_json::to_string(&r["value"]).unwrap()));
            let what = format!("case {i} report {j} (value {})", r["value"]);
            self.expect(format!("{what}: charge"), Want::Charge(charge.clone()));
            self.expect(format!("{what}: line"), Want::Exact(format!("line\t{}", r["line"].as_str().unwrap())));
        }
    }

    /// Refusal `i` of the vector file (`item`, of a metric of `spec`): refused with the vector's status, type, code
    /// and fields.
    fn refusal(&mut self, i: usize, item: &Value, spec: &CollectionSpec) {
        let metric = item["metric"].as_str().unwrap();
        let m = spec.metric(metric).unwrap();
        let protocol = m.protocol();
        let secret = if protocol.needs_secret { "73" } else { "-" };
        let cohort = if protocol.assigned_cohorts(m.params.as_ref()) > 0 { 0 } else { -1 };
        let value = &item["value"];
        let what = format!("refusal {i} (value {})", json_with_escapes(value));
        if has_lone(value) {
            let target = format!("{metric}\t{secret}\t{cohort}");
            self.lone_refusal(&what, metric, &target, value);
            return;
        }
        self.records.push(format!("refuse\t{metric}\t{secret}\t{cohort}\t{}", serde_json::to_string(value).unwrap()));
        let error = &item["error"];
        let ty = error["type"].as_str().unwrap().to_string();
        let status = match ty.as_str() {
            "ValueError" => LDP_VALUE_ERROR,
            "TypeError" => LDP_TYPE_ERROR,
            other => panic!("{} {what}: a refusal of type {other}", self.name),
        };
        let code = error["code"].as_str().unwrap().to_string();
        self.expect(what, Want::Refused { status, ty, code, fields: error["fields"].clone() });
    }

    /// The one documented divergence from Python: a value holding a lone surrogate (`target`: the metric, secret
    /// and cohort of its record). Python refuses it with its own text (a TypeError or ValueError of the protocol, or
    /// "value is not encodable as UTF-8"); through C it cannot even arrive as a string: as a JSON escape serde_json
    /// refuses the lone surrogate, and as bytes (WTF-8) it is not UTF-8. Either way the call is an
    /// LDP_INVALID_ARGUMENT, never a report.
    fn lone_refusal(&mut self, what: &str, metric: &str, target: &str, value: &Value) {
        let refused = |prefix| Want::RefusedLike { status: LDP_INVALID_ARGUMENT, ty: "ValueError", prefix };
        self.records.push(format!("refuse\t{target}\t{}", json_with_escapes(value)));
        self.expect(format!("{what} as a JSON escape"), refused("the value is not one JSON document: "));
        self.records.push(format!("refusehex\t{target}\t{}", hex(&wtf8(&serde_json::to_string(value).unwrap()))));
        self.expect(format!("{what} as WTF-8 in JSON"), refused("the value is not valid UTF-8"));
        if let Value::String(s) = value {
            self.records.push(format!("recordhex\t{metric}\t{}", hex(&wtf8(s))));
            self.expect(
                format!("{what} as WTF-8 bytes to ldp_client_record_string"),
                refused("the value is not valid UTF-8"),
            );
        }
    }

    /// NaN and ±inf, which no vector file holds (strict JSON): Python's refusals of them for every metric
    /// (tests/data/nonfinite_refusals.py writes them), replayed through ldp_client_record_double.
    fn nonfinite(&mut self, doc: &Value) {
        let name = self.name;
        let nonfinite = &nonfinite_refusals()[name];
        assert_eq!(
            nonfinite["spec_fingerprint"], doc["spec_fingerprint"],
            "{name}: rerun tests/data/nonfinite_refusals.py"
        );
        let items = nonfinite["refusals"].as_array().unwrap();
        let metrics = doc["spec"]["metrics"].as_object().unwrap().len();
        assert_eq!(items.len(), 3 * metrics, "{name}: NaN, inf, -inf per metric");
        for item in items {
            let (metric, value, error) =
                (item["metric"].as_str().unwrap(), item["value"].as_str().unwrap(), &item["error"]);
            self.records.push(format!("recorddouble\t{metric}\t{value}"));
            let ty = error["type"].as_str().unwrap().to_string();
            let status = if ty == "TypeError" { LDP_TYPE_ERROR } else { LDP_VALUE_ERROR };
            let code = error["code"].as_str().unwrap().to_string();
            self.expect(
                format!("{metric}: ldp_client_record_double({value})"),
                Want::Refused { status, ty, code, fields: error["fields"].clone() },
            );
        }
    }
}

/// What is wrong with the C program's line `got` for `want`, if anything.
pub(super) fn mismatch(want: &Want, got: &str) -> Option<String> {
    match want {
        Want::Exact(w) => (w != got).then(|| format!("want {w:?}")),
        Want::Charge(c) => {
            let fields: Vec<&str> = got.split('\t').collect();
            if fields.len() != 10 || fields[0] != "charge" {
                return Some(format!("want a charge like {c}"));
            }
            let num = |i: usize| fields[i].parse::<f64>().unwrap_or(f64::NAN);
            let cost = |e: usize, d: usize, v: &Value| {
                close_ulps(num(e), f(&v["epsilon"]), 4.0) && close_ulps(num(d), f(&v["delta"]), 4.0)
            };
            let ok = if let Some(key) = c.get("memo_key") {
                fields[1] == "1"
                    && cost(2, 3, &c["then"])
                    && cost(4, 5, &c["first"])
                    && cost(6, 7, &c["cap"])
                    && fields[8] == key.as_str().unwrap()
                    && fields[9] == "-"
            } else if let Some(stream) = c.get("change_stream") {
                fields[1] == "2"
                    && cost(2, 3, &c["cost"])
                    && fields[8] == stream.as_str().unwrap()
                    && fields[9] == c["change_value"].as_str().unwrap()
            } else {
                fields[1] == "0" && cost(2, 3, c) && fields[8] == "-" && fields[9] == "-"
            };
            (!ok).then(|| format!("want the charge {c}"))
        }
        Want::Refused { status, ty, code, fields } => {
            let got: Vec<&str> = got.splitn(6, '\t').collect();
            let have: Option<Value> = got.get(4).and_then(|t| serde_json::from_str(&unescape(t)).ok());
            let same = got.len() == 6
                && got[0] == "refused"
                && got[1] == status.to_string()
                && got[2] == ty
                && got[3] == code
                && have.is_some_and(|h| same_json(fields, &h))
                && !got[5].is_empty();
            (!same).then(|| format!("want \"refused\\t{status}\\t{ty}\\t{code}\\t{fields}\\t…\""))
        }
        Want::RefusedLike { status, ty, prefix } => {
            let fields: Vec<&str> = got.splitn(6, '\t').collect();
            let same = fields.len() == 6
                && fields[0] == "refused"
                && fields[1] == status.to_string()
                && fields[2] == *ty
                && fields[3].is_empty()
                && fields[4].is_empty()
                && unescape(fields[5]).starts_with(prefix);
            (!same).then(|| format!("want \"refused\\t{status}\\t{ty}\\t\\t\\t{prefix}…\""))
        }
    }
}
