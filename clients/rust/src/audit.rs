//! The exact privacy audit (Python's `ldp/privacy/audit.py`): run an encoder's real code with a source that
//! enumerates every outcome of every primitive draw (depth first, replaying a prefix of choices), weigh each path by
//! its exact rational probability — a Bernoulli draw with the probability the client really uses,
//! `floor(p·2^64)/2^64` — and report the worst likelihood ratio `max_o ln(max_x Pr[o|x] / min_x Pr[o|x])`. No
//! sampling error; only small configurations are enumerable.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use num_bigint::BigUint;
use num_integer::Integer;
use num_traits::{One, Zero};

use crate::error::{Error, Result};
use crate::pymath;
use crate::random::{threshold, BitMask, RandomSource};
use crate::Value;

/// An exact probability `num/den`, reduced.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Prob {
    num: BigUint,
    den: BigUint,
}

impl Prob {
    fn new(num: BigUint, den: BigUint) -> Self {
        let g = num.gcd(&den);
        if g > BigUint::one() {
            Prob { num: num / &g, den: den / g }
        } else {
            Prob { num, den }
        }
    }
    fn zero() -> Self {
        Prob { num: BigUint::zero(), den: BigUint::one() }
    }
    fn one() -> Self {
        Prob { num: BigUint::one(), den: BigUint::one() }
    }
    fn mul(&self, o: &Prob) -> Prob {
        Prob::new(&self.num * &o.num, &self.den * &o.den)
    }
    fn add(&self, o: &Prob) -> Prob {
        Prob::new(&self.num * &o.den + &o.num * &self.den, &self.den * &o.den)
    }
    fn lt(&self, o: &Prob) -> bool {
        &self.num * &o.den < &o.num * &self.den
    }
}

/// What an audit found: the worst ε over the outputs, where it is attained, and the number of distinct outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditResult {
    /// The worst log-likelihood ratio (infinite if an output is impossible for some input and possible for another).
    pub epsilon: f64,
    /// The output attaining it.
    pub worst_output: String,
    /// The inputs (most and least likely to give it).
    pub worst_inputs: (Value, Value),
    /// The number of distinct outputs.
    pub outputs: usize,
}

impl AuditResult {
    /// Whether `epsilon` equals `claimed` to a relative `1e-9` (Python's `AuditResult.matches`).
    pub fn matches(&self, claimed: f64) -> bool {
        if self.epsilon.is_infinite() || claimed.is_infinite() {
            return self.epsilon == claimed;
        }
        (self.epsilon - claimed).abs() <= (1e-9 * self.epsilon.abs().max(claimed.abs())).max(1e-12)
    }
}

#[derive(Default)]
struct Path {
    choices: Vec<usize>,
    arities: Vec<usize>,
    prob: Option<Prob>,
}

/// The enumerating source an audited mechanism draws from. Clones share one path, so an encoder's report source
/// and its permanent-response source can both be this one.
#[derive(Clone)]
pub struct AuditSource(Arc<Mutex<Path>>);

fn two64() -> BigUint {
    BigUint::one() << 64usize
}

fn threshold_big(p: f64) -> Result<BigUint> {
    Ok(match threshold(p)? {
        None => two64(),
        Some(t) => BigUint::from(t),
    })
}

impl AuditSource {
    fn choose(&self, arity: usize, weight: impl Fn(usize) -> Prob) -> Result<usize> {
        let mut p = self.0.lock().map_err(|_| Error::Internal("poisoned".into()))?;
        let depth = p.arities.len();
        if depth == p.choices.len() {
            p.choices.push(0);
        }
        p.arities.push(arity);
        let c = p.choices[depth];
        let w = weight(c);
        p.prob = Some(p.prob.take().unwrap_or_else(Prob::one).mul(&w));
        Ok(c)
    }
}

impl RandomSource for AuditSource {
    fn bits(&mut self, _: u32) -> Result<u64> {
        Err(Error::Internal("encoders must draw through bernoulli/bernoulli_bits/randbelow, not randbits".into()))
    }

    fn wide_bits(&mut self, _: u32, _: &mut [u64]) -> Result<()> {
        Err(Error::Internal("encoders must draw through bernoulli/bernoulli_bits/randbelow, not randbits".into()))
    }

    fn token_bytes(&mut self, _: usize) -> Result<Vec<u8>> {
        Err(Error::Internal("token_bytes (secrets) cannot be enumerated; audit with a fixed secret".into()))
    }

    fn bernoulli(&mut self, p: f64) -> Result<bool> {
        let t = threshold_big(p)?;
        let c =
            self.choose(2, |c| if c == 1 { Prob::new(t.clone(), two64()) } else { Prob::new(two64() - &t, two64()) })?;
        Ok(c == 1)
    }

    fn bernoulli_bits(&mut self, p: f64, n: usize) -> Result<BitMask> {
        if n > 20 {
            return Err(Error::Internal(format!("bernoulli_bits with n={n} has too many outcomes to enumerate")));
        }
        let t = threshold_big(p)?;
        let den = two64().pow(n as u32);
        let m = self.choose(1 << n, |mask| {
            let j = mask.count_ones();
            Prob::new(t.pow(j) * (two64() - &t).pow(n as u32 - j), den.clone())
        })?;
        Ok(BitMask::from_u64(n, m as u64))
    }

    fn randbelow(&mut self, n: u64) -> Result<u64> {
        if n > 1 << 20 {
            return Err(Error::Internal(format!("randbelow({n}) has too many outcomes to enumerate")));
        }
        Ok(self.choose(n as usize, |_| Prob::new(BigUint::one(), BigUint::from(n)))? as u64)
    }
}

/// The exact distribution of `run(source)` over all of its random paths, by output.
fn output_distribution(
    max_paths: usize,
    run: &mut dyn FnMut(AuditSource) -> Result<String>,
) -> Result<BTreeMap<String, Prob>> {
    let mut dist: BTreeMap<String, Prob> = BTreeMap::new();
    let mut prefix: Vec<usize> = Vec::new();
    for i in 0.. {
        if i >= max_paths {
            return Err(Error::Internal(format!("more than {max_paths} random paths")));
        }
        let src = AuditSource(Arc::new(Mutex::new(Path { choices: prefix.clone(), arities: Vec::new(), prob: None })));
        let out = run(src.clone())?;
        let path = std::mem::take(&mut *src.0.lock().map_err(|_| Error::Internal("poisoned".into()))?);
        let prob = path.prob.unwrap_or_else(Prob::one);
        if !prob.num.is_zero() {
            let e = dist.entry(out).or_insert_with(Prob::zero);
            *e = e.add(&prob);
        }
        prefix = path.choices[..path.arities.len()].to_vec();
        while let Some(&last) = prefix.last() {
            if last + 1 >= path.arities[prefix.len() - 1] {
                prefix.pop();
            } else {
                break;
            }
        }
        match prefix.last_mut() {
            None => break,
            Some(last) => *last += 1,
        }
    }
    let total = dist.values().fold(Prob::zero(), |a, b| a.add(b));
    if total != Prob::one() {
        return Err(Error::Internal("path probabilities do not sum to 1 (the draws are not enumerable)".into()));
    }
    Ok(dist)
}

/// ln of a positive integer, to double precision.
fn ln(x: &BigUint) -> f64 {
    let shift = x.bits().saturating_sub(60);
    let top: u64 = (x >> shift).try_into().unwrap_or(u64::MAX);
    pymath::log(top as f64) + shift as f64 * pymath::log(2.0)
}

/// Audits a mechanism `run(input, source) -> output text` over `inputs` (at least two): the worst ε over every
/// output and pair of inputs, exactly. `run` must draw only from the source it is given (clones of it may serve
/// several roles). At most `max_paths` random paths per input are followed.
pub fn audit(
    inputs: &[Value],
    max_paths: usize,
    mut run: impl FnMut(&Value, AuditSource) -> Result<String>,
) -> Result<AuditResult> {
    if inputs.len() < 2 {
        return Err(Error::value("an audit needs at least two inputs"));
    }
    let mut dists = Vec::with_capacity(inputs.len());
    for x in inputs {
        dists.push(output_distribution(max_paths, &mut |src| run(x, src))?);
    }
    let mut outputs: Vec<&String> = dists.iter().flat_map(|d| d.keys()).collect();
    outputs.sort();
    outputs.dedup();
    let zero = Prob::zero();
    let (mut worst, mut worst_out, mut worst_hi, mut worst_lo) = (-1.0f64, String::new(), 0, 0);
    for o in &outputs {
        let at = |k: usize| dists[k].get(*o).unwrap_or(&zero);
        let (mut hi, mut lo) = (0, 0);
        for k in 1..inputs.len() {
            if at(hi).lt(at(k)) {
                hi = k;
            }
            if at(k).lt(at(lo)) {
                lo = k;
            }
        }
        let (a, b) = (at(hi), at(lo));
        let eps = if b.num.is_zero() { f64::INFINITY } else { ln(&(&a.num * &b.den)) - ln(&(&b.num * &a.den)) };
        if eps > worst {
            worst = eps;
            worst_out = (*o).clone();
            worst_hi = hi;
            worst_lo = lo;
        }
    }
    Ok(AuditResult {
        epsilon: worst,
        worst_output: worst_out,
        worst_inputs: (inputs[worst_hi].clone(), inputs[worst_lo].clone()),
        outputs: outputs.len(),
    })
}
