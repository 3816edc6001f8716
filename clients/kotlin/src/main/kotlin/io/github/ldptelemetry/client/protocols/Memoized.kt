package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.random.KeyedRandomSource
import io.github.ldptelemetry.client.random.RandomSource
import java.math.BigInteger

/**
 * An encoder whose permanent responses derive from the metric secret (Python's `_SecretEncoder`,
 * `ldp/encoders/longitudinal_memo.py`): the response of index `i` is drawn from the keyed stream of
 * `(secret, "ldp/longitudinal/prr/v1\0" ‖ fp ‖ uint32_BE(i))`, the same every time, and the charge is memoized per
 * `i` with `memo_key = HMAC-SHA256(secret, "ldp/longitudinal/memo/v1\0" ‖ fp ‖ uint32_BE(i))` (docs/conformance.md
 * "Memoized protocols"). With [EncoderOptions.prrRng] (audits) each response is drawn from it once and kept.
 */
public abstract class MemoizedEncoder<P : ProtocolParams, V>(params: P, options: EncoderOptions) : Encoder<P, V>(params, options) {
    protected val secret: ByteArray = (options.secret ?: options.prrRng?.let { "audit".toByteArray() }
        ?: throw IllegalArgumentException("${params.protocol} needs the metric secret (EncoderOptions.secret): its permanent responses derive from it")).copyOf()
    /** The audits' source of permanent responses (null: the keyed stream). */
    protected val prrRng: RandomSource? = options.prrRng
    private val memo = HashMap<Long, Any>()
    protected val fp: ByteArray = Bytes.ascii(params.fingerprint)

    protected fun message(index: Long): ByteArray = Bytes.concat(fp, Bytes.uint32BE(index))

    /** The permanent response of [index], drawn by [draw] from the keyed stream (or the audit source once). */
    @Suppress("UNCHECKED_CAST")
    protected fun <T : Any> memoized(index: Long, draw: (RandomSource) -> T): T {
        memo[index]?.let { return it as T }
        val src = prrRng ?: KeyedRandomSource(secret, Bytes.concat(PRR_DOMAIN, message(index)))
        val value = draw(src)
        if (prrRng != null || memo.size < MEMO_ENTRIES) memo[index] = value
        return value
    }

    /** `charging = "min"`: [one] per report, at most [cap] per memo key. */
    protected fun memoizedCharge(index: Long, one: PrivacyCost, cap: PrivacyCost): Charge.Memoized =
        Charge.Memoized(Bytes.hmacSha256(secret, MEMO_DOMAIN, message(index)), one, one, cap)

    public companion object {
        /** Memoized responses kept in memory (each recomputable from the secret). */
        public const val MEMO_ENTRIES: Int = 4096
        private val PRR_DOMAIN = Bytes.ascii("ldp/longitudinal/prr/v1\u0000")
        private val MEMO_DOMAIN = Bytes.ascii("ldp/longitudinal/memo/v1\u0000")

        /** Most reports [memoReportCharge] examines before it falls back to the cap. */
        public const val MAX_CHARGE_REPORTS: Int = 64

        /**
         * The per-report charge of `charging="min"` (Python's `memo_report_charge`): `max_{t<=T} L(t)/t` (at least
         * [one]) with `T` the first `t` at which `t·c >= cap`; [cap] if there is none within [MAX_CHARGE_REPORTS].
         */
        public fun memoReportCharge(one: PrivacyCost, cap: PrivacyCost, leakage: (Int) -> Double): PrivacyCost {
            var c = one.epsilon
            for (t in 1..MAX_CHARGE_REPORTS) {
                c = maxOf(c, leakage(t) / t)
                if (t * c >= cap.epsilon) return PrivacyCost(minOf(c, cap.epsilon))
            }
            return cap
        }

        /** `log(e^a + e^b)` as Python's `_logaddexp`. */
        internal fun logaddexp(a0: Double, b0: Double): Double {
            val a = maxOf(a0, b0)
            val b = minOf(a0, b0)
            return if (b == Double.NEGATIVE_INFINITY) a else a + PyMath.log1p(PyMath.exp(b - a))
        }
    }
}

/** An exact rational (Python's `Fraction`), for the realized ε of composed probabilities. */
internal class Rational private constructor(val num: BigInteger, val den: BigInteger) {
    operator fun plus(o: Rational) = of(num * o.den + o.num * den, den * o.den)
    operator fun minus(o: Rational) = of(num * o.den - o.num * den, den * o.den)
    operator fun times(o: Rational) = of(num * o.num, den * o.den)
    operator fun div(o: Rational) = of(num * o.den, den * o.num)

    /** `float(Fraction)`: correctly rounded (a quotient of 70+ bits with a sticky bit, rounded once). */
    fun toDouble(): Double {
        if (num.signum() == 0) return 0.0
        val shift = maxOf(0, 70 - (num.abs().bitLength() - den.bitLength()))
        val qr = num.abs().shiftLeft(shift).divideAndRemainder(den)
        var q = qr[0].shiftLeft(1)
        if (qr[1].signum() != 0) q = q.or(BigInteger.ONE)
        val r = PyMath.nearestDouble(q, -shift - 1)
        return if (num.signum() < 0) -r else r
    }

    /** `math.log(num) - math.log(den)` of the reduced fraction, as Python computes `log` of two ints. */
    fun logRatio(): Double = PyMath.log(num.toDouble()) - PyMath.log(den.toDouble())

    companion object {
        fun of(n: BigInteger, d: BigInteger): Rational {
            var nn = n
            var dd = d
            if (dd.signum() < 0) {
                nn = nn.negate()
                dd = dd.negate()
            }
            val g = nn.gcd(dd)
            return if (g > BigInteger.ONE) Rational(nn / g, dd / g) else Rational(nn, dd)
        }

        fun of(n: Long): Rational = Rational(BigInteger.valueOf(n), BigInteger.ONE)

        /** The exact value of a double (`Fraction(x)`). */
        fun of(x: Double): Rational {
            val bits = java.lang.Double.doubleToRawLongBits(x)
            val biased = ((bits ushr 52) and 0x7ff).toInt()
            var m = bits and 0xfffffffffffffL
            val e = if (biased == 0) -1074 else (biased - 1075).also { m = m or (1L shl 52) }
            var big = BigInteger.valueOf(m)
            if (bits < 0) big = big.negate()
            return if (e >= 0) of(big.shiftLeft(e), BigInteger.ONE) else of(big, BigInteger.ONE.shiftLeft(-e))
        }
    }
}
