//! The projective space `PG(t−1, q)` as Projective Geometry Response uses it (`ldp/encoders/projective_space.py`;
//! Feldman, Nelson, Nguyen & Talwar, ICML 2022, §3).
//!
//! A point is a line through the origin of `F_q^t` (`q` prime), named by its **canonical vector**: the nonzero
//! vector on the line whose first nonzero coordinate is 1. There are `P_t = (q^t − 1)/(q − 1)` points
//! ([`points`]), numbered by where the leading 1 sits, rightmost first: a canonical vector whose leading 1 is at
//! position `ℓ` (0-based, of `t`) has index `P_{t−1−ℓ}` plus its coordinates after `ℓ` read as a base-`q` number,
//! most significant first ([`point_vector`], [`point_index`]). Index 0 is `(0, …, 0, 1)`.
//!
//! A point `v` is also the hyperplane `S_v = {u : ⟨u, v⟩ = 0}` of `P_{t−1}` points; [`hyperplane_point`] numbers
//! them by a linear bijection `F_q^{t−1} → v^⊥`, so that a uniform `r` in `[0, P_{t−1})` is a uniform point of
//! `S_v`.
//!
//! All arithmetic is exact: coordinates are below `q ≤` [`MAX_FIELD`] `< 2^16`, so a product of two stays below
//! 2^32 and a sum of `t ≤ 64` such products fits a `u64`.

use std::sync::OnceLock;

/// The largest field order `q` taken: the largest prime below 2^16.
pub const MAX_FIELD: u64 = 65521;

/// `P_m = (q^m − 1)/(q − 1) = 1 + q + … + q^(m−1)`: the points of `PG(m−1, q)` (0 for `m = 0`), saturating at
/// `u64::MAX` (never reached by the layouts of this client, whose `P_t` stay below 2^49).
pub fn points(q: u64, m: u32) -> u64 {
    (0..m).fold(0u64, |p, _| p.saturating_mul(q).saturating_add(1))
}

/// Whether `q` is prime (trial division).
pub fn is_prime(q: u64) -> bool {
    q >= 2 && (2..).take_while(|k| k * k <= q).all(|k| !q.is_multiple_of(k))
}

/// The primes up to [`MAX_FIELD`], increasing (a sieve of Eratosthenes, made once).
pub fn primes() -> &'static [u64] {
    static PRIMES: OnceLock<Vec<u64>> = OnceLock::new();
    PRIMES.get_or_init(|| {
        let limit = MAX_FIELD as usize;
        let mut sieve = vec![true; limit + 1];
        sieve[0] = false;
        sieve[1] = false;
        let mut k = 2;
        while k * k <= limit {
            if sieve[k] {
                (k * k..=limit).step_by(k).for_each(|i| sieve[i] = false);
            }
            k += 1;
        }
        (0..=limit).filter(|&i| sieve[i]).map(|i| i as u64).collect()
    })
}

/// The primes `≤ limit` (at most [`MAX_FIELD`]), increasing.
pub fn primes_up_to(limit: u64) -> &'static [u64] {
    let all = primes();
    &all[..all.partition_point(|&p| p <= limit)]
}

/// Writes into `out` the canonical vector of point `index` of `PG(out.len() − 1, q)` (`index < P_{out.len()}`).
pub(crate) fn write_point(mut index: u64, q: u64, out: &mut [u64]) {
    let t = out.len();
    // The leading 1's position, from the right; `size` points have it there: q^(t−1−lead).
    let (mut lead, mut size) = (t - 1, 1u64);
    while index >= size {
        index -= size;
        lead -= 1;
        size *= q;
    }
    out[..lead].fill(0);
    out[lead] = 1;
    for c in out[lead + 1..].iter_mut().rev() {
        *c = index % q;
        index /= q;
    }
}

/// The canonical vector (`t` coordinates) of point `index` in `[0, P_t)`.
///
/// ```
/// use ldp_client::protocols::projective_space::point_vector;
/// assert_eq!(point_vector(0, 3, 3), [0, 0, 1]);
/// assert_eq!(point_vector(1, 3, 3), [0, 1, 0]);
/// assert_eq!(point_vector(4, 3, 3), [1, 0, 0]);
/// assert_eq!(point_vector(12, 3, 3), [1, 2, 2]);
/// ```
pub fn point_vector(index: u64, q: u64, t: usize) -> Vec<u64> {
    let mut out = vec![0; t];
    write_point(index, q, &mut out);
    out
}

/// The index of a canonical vector (its first nonzero coordinate 1).
pub fn point_index(vec: &[u64], q: u64) -> u64 {
    let lead = vec.iter().position(|&c| c != 0).expect("a canonical vector is nonzero");
    let rest = vec[lead + 1..].iter().fold(0, |acc, &c| acc * q + c);
    points(q, (vec.len() - 1 - lead) as u32) + rest
}

/// `base^exp mod m`.
fn pow_mod(mut base: u64, mut exp: u64, m: u64) -> u64 {
    let mut acc = 1 % m;
    base %= m;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc * base % m;
        }
        base = base * base % m;
        exp >>= 1;
    }
    acc
}

/// Divides the nonzero vector `vec` by its first nonzero coordinate, in place (its inverse by Fermat: `q` is
/// prime).
pub(crate) fn canonicalize(vec: &mut [u64], q: u64) {
    let lead = vec.iter().position(|&c| c != 0).expect("a point's vector is nonzero");
    let inverse = pow_mod(vec[lead], q - 2, q);
    for c in &mut vec[lead..] {
        *c = *c * inverse % q;
    }
}

/// Writes into `u` (as long as `v`) the canonical vector of the `r`-th point of the hyperplane of the canonical
/// vector `v`: the canonical vector `w` of point `r` of `PG(t−2, q)` with a 0 inserted at `v`'s leading position
/// `i`, that coordinate then set to `−Σ_{k>i} v_k·u_k mod q` (so that `⟨u, v⟩ = 0`), and the result canonicalized.
pub(crate) fn write_hyperplane_point(v: &[u64], r: u64, q: u64, u: &mut [u64]) {
    let t = v.len();
    let i = v.iter().position(|&c| c != 0).expect("a canonical vector is nonzero");
    write_point(r, q, &mut u[..t - 1]);
    u.copy_within(i..t - 1, i + 1);
    let dot = v[i + 1..].iter().zip(&u[i + 1..]).fold(0, |acc, (&a, &b)| (acc + a * b) % q);
    u[i] = (q - dot) % q;
    canonicalize(u, q);
}

/// The `r`-th point (`r` in `[0, P_{t−1})`) of the hyperplane `S_v` of the canonical vector `v`, as a canonical
/// vector: `r ↦ point` is a bijection onto `S_v` (a linear bijection of `F_q^{t−1}` onto `v^⊥` maps lines to lines).
///
/// ```
/// use ldp_client::protocols::projective_space::hyperplane_point;
/// // the plane x = 0 of PG(2, 3): the points (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 1, 2)
/// let plane: Vec<Vec<u64>> = (0..4).map(|r| hyperplane_point(&[1, 0, 0], r, 3)).collect();
/// assert_eq!(plane, [[0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]);
/// ```
pub fn hyperplane_point(v: &[u64], r: u64, q: u64) -> Vec<u64> {
    let mut u = vec![0; v.len()];
    write_hyperplane_point(v, r, q, &mut u);
    u
}
