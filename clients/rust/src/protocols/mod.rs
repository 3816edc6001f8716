//! Every protocol this client implements, by the name a spec gives it.
//!
//! A protocol of the Python client that is not here is listed in [`NOT_YET`] (docs/native-client.md prints it),
//! and a spec naming it is refused with a clear error.

pub mod hadamard;
pub mod hadamard_block;
pub mod histogram;
pub mod lgrr;
pub mod local_hashing;
pub(crate) mod memoized;
pub mod multi;
pub mod numeric;
pub mod pem;
pub mod range_tree;
pub mod rappor;
pub mod rappor_ngrams;
pub mod rr;
pub mod sfp;
pub mod sketches;
pub mod thresh;
pub mod unary;

use crate::encoder::Protocol;

static ALL: &[&Protocol] = &[
    &rr::RR,
    &rr::GRR,
    &unary::SUE,
    &unary::OUE,
    &unary::LOUE,
    &local_hashing::OLH,
    &local_hashing::BLH,
    &hadamard::HR,
    &hadamard::SS,
    &numeric::DUCHI,
    &numeric::PIECEWISE,
    &numeric::HYBRID,
    &numeric::MEMO_MEAN,
    &sketches::CMS,
    &sketches::HCMS,
    &rappor::RAPPOR,
    &histogram::DBITFLIP,
    &histogram::BUCKET_GRR,
    &histogram::BUCKET_OUE,
    &histogram::MEMO_DBITFLIP,
    &lgrr::LGRR,
    &thresh::THRESH,
    &hadamard_block::HR_BLOCK,
    &range_tree::HH,
    &sfp::SFP,
    &pem::PEM,
    &multi::MULTI,
    &rappor_ngrams::RAPPOR_NGRAMS,
];

/// The protocols of the Python client this client does not implement yet (docs/native-client.md prints it).
pub const NOT_YET: &[&str] = &[];

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
