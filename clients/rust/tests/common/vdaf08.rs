//! The aggregators' side of VDAF draft 08 (prio 0.16.8, `prio08`), for the tests of draft 08 reports: two or more
//! aggregators verify each report's shares with a fresh verify key, aggregate the output shares, and the collector
//! unshards the aggregate result.
//!
//! Only `std`, `getrandom` and `prio08`: the integration tests use it (`mod common`), and so do the draft 08 unit
//! tests inside the crate (`src/prio3/draft08/tests.rs`, through `#[path]`).

use prio08::codec::ParameterizedDecode;
use prio08::vdaf::{Aggregator, Collector, PrepareTransition, Vdaf, VdafError};

/// One report as the aggregators receive it: the nonce, the public share and each aggregator's input share
/// (encoded).
pub type Report<'a> = (&'a [u8; 16], &'a [u8], &'a [Vec<u8>]);

/// The aggregate result of `reports` under `vdaf`, or the first refusal (a share that does not decode is a panic:
/// the tests only give shares of the right type).
pub fn aggregate<V>(vdaf: &V, reports: &[Report]) -> Result<V::AggregateResult, VdafError>
where
    V: Aggregator<16, 16> + Collector + Vdaf<AggregationParam = ()>,
{
    let mut verify_key = [0u8; 16];
    getrandom::fill(&mut verify_key).unwrap();
    let n = vdaf.num_aggregators();
    let mut outs: Vec<Vec<V::OutputShare>> = vec![Vec::new(); n];
    for (nonce, public_share, input_shares) in reports {
        assert_eq!(input_shares.len(), n, "one input share per aggregator");
        let public = V::PublicShare::get_decoded_with_param(vdaf, public_share).expect("the public share decodes");
        let mut states = Vec::new();
        let mut prepare_shares = Vec::new();
        for (agg, bytes) in input_shares.iter().enumerate() {
            let input = V::InputShare::get_decoded_with_param(&(vdaf, agg), bytes).expect("the input share decodes");
            let (state, share) = vdaf.prepare_init(&verify_key, agg, &(), nonce, &public, &input)?;
            states.push(state);
            prepare_shares.push(share);
        }
        let message = vdaf.prepare_shares_to_prepare_message(&(), prepare_shares)?;
        for (agg, state) in states.into_iter().enumerate() {
            match vdaf.prepare_next(state, message.clone())? {
                PrepareTransition::Finish(out) => outs[agg].push(out),
                PrepareTransition::Continue(..) => panic!("Prio3 prepares in one round"),
            }
        }
    }
    let agg_shares = outs.into_iter().map(|o| vdaf.aggregate(&(), o)).collect::<Result<Vec<_>, _>>()?;
    vdaf.unshard(&(), agg_shares, reports.len())
}
