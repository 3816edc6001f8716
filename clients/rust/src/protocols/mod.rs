//! Every protocol this client implements, by the name a spec gives it.
//!
//! A protocol of the Python client that is not here is listed in [`NOT_YET`] (docs/native-client.md prints it),
//! and a spec naming it is refused with a clear error.

pub(crate) mod memoized;
pub mod rr;
pub mod unary;

use crate::encoder::Protocol;

static ALL: &[&Protocol] = &[&rr::RR, &rr::GRR, &unary::SUE, &unary::OUE, &unary::LOUE];

/// The protocols of the Python client this client does not implement yet (docs/native-client.md prints it).
pub const NOT_YET: &[&str] = &[
    "blh", "bucket-grr", "bucket-oue", "cms", "dbitflip", "duchi", "hcms", "hh", "hr", "hr-block", "hybrid", "lgrr",
    "memo-dbitflip", "memo-mean", "multi", "olh", "pem", "piecewise", "rappor", "rappor-ngrams", "sfp",
    "ss", "thresh",
];

/// The protocol called `name`, if this client implements it.
pub fn get(name: &str) -> Option<&'static Protocol> {
    ALL.iter().copied().find(|p| p.name == name)
}

/// The names of every protocol implemented here, sorted.
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = ALL.iter().map(|p| p.name).collect();
    v.sort_unstable();
    v
}
