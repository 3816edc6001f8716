//! The layout of Projective Geometry Response and its hybrid (`ldp/encoders/projective_layout.py`): the dimension
//! `t` from `q`, the blocks and `d`; the variance of one user's term for a rare value; and the default layout, the
//! one of least variance among the feasible ones.
//!
//! The search is in doubles, each formula computed in Python's order, so that the layout chosen is Python's to the
//! last tie (the fingerprint of parameters left without `q` or `blocks` hashes the resolved ones).

use crate::params::MAX_AGGREGATE_CELLS;
use crate::protocols::projective_space::{points, primes_up_to, MAX_FIELD};
use crate::pymath;

/// The most steps (`K·q·t`, the server decoder's dynamic programme) a decode may take.
pub const MAX_DECODE_WORK: u128 = 1 << 32;

/// `t`: the smallest `t ≥ 2` with `blocks·P_t ≥ d`.
pub fn dimension(q: u64, blocks: u64, domain_size: u64) -> u32 {
    let mut t = 2;
    while blocks.saturating_mul(points(q, t)) < domain_size {
        t += 1;
    }
    t
}

/// `K·q·t` (`K = blocks·P_t`): the steps of the decoder's dynamic programme, up to a constant (beyond 2^64 for the
/// largest fields and domains, hence the `u128`).
pub fn decode_work(q: u64, t: u32, blocks: u64) -> u128 {
    u128::from(blocks) * u128::from(points(q, t)) * u128::from(q) * u128::from(t)
}

/// `γ = K/(K + (e^ε − 1)·s)`, the probability of the uniform branch before rounding (0 past `ε = 700`).
pub fn own_share(epsilon: f64, order: u64, set_size: u64) -> f64 {
    if epsilon > 700.0 {
        0.0
    } else {
        order as f64 / (order as f64 + pymath::expm1(epsilon) * set_size as f64)
    }
}

/// `Var[α·A + β·T]` of one user's report, `A ⊆ T`, from `Pr[A]` and `Pr[T]`.
fn term_variance(a: f64, b: f64, pa: f64, pt: f64) -> f64 {
    a * a * pa * (1.0 - pa) + b * b * pt * (1.0 - pt) + 2.0 * a * b * pa * (1.0 - pt)
}

/// Per-user `Var[ĉ_x]/n` of a value nobody holds in a full block, the other users spread evenly over the other
/// `d − 1` values, at the unrounded `γ` (infinite when `γ` is not strictly inside (0, 1)).
pub fn rare_variance(epsilon: f64, q: u64, t: u32, blocks: u64, domain_size: u64) -> f64 {
    let b = points(q, t);
    let (s, c, k) = (points(q, t - 1), points(q, t - 2), blocks * b);
    let g = own_share(epsilon, k, s);
    if !(g > 0.0 && g < 1.0) {
        return f64::INFINITY;
    }
    let (s, c) = (s as f64, c as f64);
    // The estimator's coefficients: α = 1/((1 − γ)(1 − c/s)), β = −α·c/s.
    let alpha = 1.0 / ((1.0 - g) * (1.0 - c / s));
    let beta = -alpha * c / s;
    // Pr[A] and Pr[T] of a user of another value of x's block, and of a user of another block.
    let (uniform_a, uniform_t) = (g * s / k as f64, g / blocks as f64);
    let same = term_variance(alpha, beta, uniform_a + (1.0 - g) * c / s, uniform_t + 1.0 - g);
    let other = term_variance(alpha, beta, uniform_a, uniform_t);
    let share = (b.min(domain_size) - 1) as f64 / (domain_size - 1) as f64;
    share * same + (1.0 - share) * other
}

/// The field orders a default layout is chosen among: the primes `q ≤ 2(e^ε − 1) + 6` (the best is near
/// `e^ε + 1`), at most [`MAX_FIELD`]: every one of them from `ε ≈ 10.4` on. Python's rule to the bit: the bound
/// `2·expm1(min(ε, 700)) + 6` is compared with `MAX_FIELD` before it is floored.
pub fn field_candidates(epsilon: f64) -> &'static [u64] {
    let bound = 2.0 * pymath::expm1(epsilon.min(700.0)) + 6.0;
    primes_up_to(if bound >= MAX_FIELD as f64 { MAX_FIELD } else { bound.floor() as u64 })
}

/// Whether a layout stays within the aggregate's cells and the decoder's steps.
fn feasible(q: u64, t: u32, blocks: u64) -> bool {
    blocks.saturating_mul(points(q, t)) <= MAX_AGGREGATE_CELLS && decode_work(q, t, blocks) <= MAX_DECODE_WORK
}

/// The feasible `(q, blocks)` of `layouts` of least [`rare_variance`], the first on a near tie (a later one must
/// be lower by a relative 10^−12); the first feasible one when none has a finite variance (ε so large or so small
/// that `γ` is 0 or 1 for every one: its parameters then refuse ε as `epsilon_too_large` or `epsilon_too_small`);
/// `None` when none is feasible.
fn best(epsilon: f64, domain_size: u64, layouts: impl IntoIterator<Item = (u64, u64)>) -> Option<(u64, u64)> {
    let (mut best, mut best_var) = (None, f64::INFINITY);
    for (q, blocks) in layouts {
        let t = dimension(q, blocks, domain_size);
        if !feasible(q, t, blocks) {
            continue;
        }
        let var = rare_variance(epsilon, q, t, blocks, domain_size);
        if best.is_none() || var < best_var * (1.0 - 1e-12) {
            best = Some((q, blocks));
            best_var = var;
        }
    }
    best
}

/// The `(q, 1)` [`best_pgr_field`] chooses among: one for each of [`field_candidates`].
pub fn pgr_layouts(epsilon: f64) -> Vec<(u64, u64)> {
    field_candidates(epsilon).iter().map(|&q| (q, 1)).collect()
}

/// The `(q, blocks)` [`best_hpg_layout`] chooses among, in increasing `q` then `t`: for each candidate `q` (or the
/// given one), the given `blocks`, else `⌈d/P_t⌉` for each `t ≥ 2` with `P_t < d` and `P_t ≤ 2^28`; those with at
/// least 2 blocks. Empty only when `q` is given and not `blocks`, and every block of that field holds the domain.
pub fn hpg_layouts(epsilon: f64, domain_size: u64, q: Option<u64>, blocks: Option<u64>) -> Vec<(u64, u64)> {
    let given = q.map(|q| [q]);
    let qs: &[u64] = given.as_ref().map_or_else(|| field_candidates(epsilon), |q| &q[..]);
    let mut layouts = Vec::new();
    for &q in qs {
        match blocks {
            Some(h) => layouts.push((q, h)),
            None => layouts.extend(
                (2..)
                    .map(|t| points(q, t))
                    .take_while(|&b| b < domain_size && b <= MAX_AGGREGATE_CELLS)
                    .map(|b| (q, domain_size.div_ceil(b))),
            ),
        }
    }
    layouts.retain(|&(_, h)| h >= 2);
    layouts
}

/// `pgr`'s default `q`: the one of [`field_candidates`] of least [`rare_variance`] (the smallest on a near tie)
/// among the feasible ones (the first feasible one when no variance is finite); `None` when none is feasible.
pub fn best_pgr_field(epsilon: f64, domain_size: u64) -> Option<u64> {
    best(epsilon, domain_size, pgr_layouts(epsilon)).map(|(q, _)| q)
}

/// `hpg`'s default `(q, blocks)`: the one of [`hpg_layouts`] of least [`rare_variance`] (the first on a near tie)
/// among the feasible ones (the first feasible one when no variance is finite); `None` when none is feasible.
pub fn best_hpg_layout(epsilon: f64, domain_size: u64, q: Option<u64>, blocks: Option<u64>) -> Option<(u64, u64)> {
    best(epsilon, domain_size, hpg_layouts(epsilon, domain_size, q, blocks))
}

/// The limit a set of layouts, none of them feasible, exceeds by the least (Python's `least_excess`): what the
/// `param_limit` refusal of parameters left without a layout names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeastExcess {
    /// Every layout has more than [`MAX_AGGREGATE_CELLS`] outputs; the fewest `K` of any (limit `aggregate_cells`).
    AggregateCells(u64),
    /// The least decode work `K·q·t` of the layouts within [`MAX_AGGREGATE_CELLS`] outputs (limit `decode_work`).
    DecodeWork(u128),
}

/// [`LeastExcess`] of `layouts` (`(q, blocks)` pairs, none of them feasible) over `domain_size` values; `None`
/// when there are none. (A search chooses none only when no layout is feasible: where every variance is infinite
/// it chooses the first feasible one.)
pub fn least_excess(domain_size: u64, layouts: &[(u64, u64)]) -> Option<LeastExcess> {
    let sizes = layouts.iter().map(|&(q, h)| {
        let t = dimension(q, h, domain_size);
        (h.saturating_mul(points(q, t)), decode_work(q, t, h))
    });
    let within = sizes.clone().filter(|&(k, _)| k <= MAX_AGGREGATE_CELLS).map(|(_, work)| work).min();
    match within {
        Some(work) => Some(LeastExcess::DecodeWork(work)),
        None => sizes.map(|(k, _)| k).min().map(LeastExcess::AggregateCells),
    }
}
