//! TEMPORARY (replaced by the correctly rounded port): platform libm.
use num_bigint::BigInt;
use num_traits::ToPrimitive;
pub(crate) fn exp(x: f64) -> f64 {
    x.exp()
}
pub(crate) fn log(x: f64) -> f64 {
    x.ln()
}
pub(crate) fn log1p(x: f64) -> f64 {
    libm::log1p(x)
}
pub(crate) fn expm1(x: f64) -> f64 {
    libm::expm1(x)
}
pub(crate) fn logistic_tail(x: f64) -> f64 {
    if x < 700.0 {
        1.0 / (1.0 + exp(x))
    } else {
        exp(-x)
    }
}
pub(crate) fn nearest_double(m: &BigInt, e: i32) -> f64 {
    m.to_f64().unwrap_or(f64::INFINITY) * 2f64.powi(e)
}
