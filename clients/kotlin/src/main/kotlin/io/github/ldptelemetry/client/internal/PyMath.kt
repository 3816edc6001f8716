package io.github.ldptelemetry.client.internal

import java.math.BigInteger

/**
 * `math.exp`, `math.log`, `math.log1p` and `math.expm1` as CPython computes them on the platform the Python client
 * runs on (glibc), so that derived probabilities and costs are the same doubles in every client
 * (docs/conformance.md section 5).
 *
 * glibc's `exp` and `log` are within about 0.502 ulp, so nearly always correctly rounded; `java.lang.Math`'s may be
 * 1 ulp off, and `StrictMath`'s (fdlibm) are too in a few percent of arguments. `exp` and `log` here are correctly
 * rounded: fixed-point arithmetic on [BigInteger] with [P] fractional bits, then one rounding half to even. They
 * cost microseconds, and run for parameters, never per report. glibc's `log1p` and `expm1` are fdlibm's: those are
 * `StrictMath`'s, as they are.
 */
internal object PyMath {
    private const val P = 256
    private val ONE: BigInteger = BigInteger.ONE.shiftLeft(P)

    /** ln 2 with P fractional bits: Σ_{k>=1} 1/(k·2^k), summed with 32 guard bits. */
    private val LN2: BigInteger = run {
        val one = BigInteger.ONE.shiftLeft(P + 32)
        var sum = BigInteger.ZERO
        for (k in 1 until P + 64) sum += one / BigInteger.valueOf(k.toLong()).shiftLeft(k)
        sum.shiftRight(32)
    }
    private val HALF_LN2: BigInteger = LN2.shiftRight(1)
    private val SQRT2: BigInteger = BigInteger.valueOf(2).shiftLeft(2 * P).sqrtFloor()

    private fun BigInteger.sqrtFloor(): BigInteger {
        if (this < BigInteger.valueOf(2)) return this
        var x = BigInteger.ONE.shiftLeft((bitLength() + 1) / 2)
        while (true) {
            val y = (x + this / x).shiftRight(1)
            if (y >= x) return x
            x = y
        }
    }

    private fun mul(a: BigInteger, b: BigInteger): BigInteger = (a * b) / ONE

    /** The exact value of a finite double: x = m·2^e. */
    private fun decompose(x: Double): Pair<BigInteger, Int> {
        val bits = java.lang.Double.doubleToRawLongBits(x)
        val biased = ((bits ushr 52) and 0x7ff).toInt()
        var m = bits and 0xfffffffffffffL
        val e: Int
        if (biased == 0) {
            e = -1074
        } else {
            m = m or (1L shl 52)
            e = biased - 1075
        }
        val big = BigInteger.valueOf(m)
        return (if (bits < 0) big.negate() else big) to e
    }

    private fun toFixed(x: Double): BigInteger {
        val (m, e) = decompose(x)
        val s = e + P
        return if (s >= 0) m.shiftLeft(s) else m.shiftRight(-s)
    }

    /** The double nearest to m·2^e, half to even, with subnormals and overflow (m·2^e exactly, rounded once). */
    fun nearestDouble(m: BigInteger, e: Int): Double {
        if (m.signum() == 0) return 0.0
        val neg = m.signum() < 0
        val a = m.abs()
        val top = a.bitLength() - 1 + e
        if (top > 1023) return if (neg) Double.NEGATIVE_INFINITY else Double.POSITIVE_INFINITY
        val lsb = maxOf(top - 52, -1074)
        val shift = lsb - e
        var q: BigInteger
        if (shift > 0) {
            q = a.shiftRight(shift)
            val rem = a - q.shiftLeft(shift)
            val half = BigInteger.ONE.shiftLeft(shift - 1)
            val c = rem.compareTo(half)
            if (c > 0 || (c == 0 && q.testBit(0))) q += BigInteger.ONE
        } else {
            q = a.shiftLeft(-shift)
        }
        val r = Math.scalb(q.toDouble(), lsb) // q <= 2^53: exact; scalb exact unless it overflows
        return if (neg) -r else r
    }

    private fun expSmall(r: BigInteger): BigInteger {
        var term = ONE
        var sum = ONE
        var n = 1L
        while (term.signum() != 0) {
            term = mul(term, r) / BigInteger.valueOf(n)
            sum += term
            n++
        }
        return sum
    }

    /** Python's `math.exp(x)`, correctly rounded. */
    @JvmStatic
    fun exp(x: Double): Double {
        if (x.isNaN()) return Double.NaN
        if (x == Double.POSITIVE_INFINITY) return Double.POSITIVE_INFINITY
        if (x == Double.NEGATIVE_INFINITY) return 0.0
        if (x > 709.8) return Double.POSITIVE_INFINITY
        if (x < -745.2) return 0.0
        if (Math.abs(x) < Math.scalb(1.0, -60)) return 1.0 + x
        val fx = toFixed(x)
        var k = fx / LN2
        var r = fx - k * LN2
        if (r > HALF_LN2) {
            r -= LN2
            k += BigInteger.ONE
        } else if (r < HALF_LN2.negate()) {
            r += LN2
            k -= BigInteger.ONE
        }
        return nearestDouble(expSmall(r), k.toInt() - P)
    }

    private fun logNear1(v: BigInteger): BigInteger {
        val s = (v - ONE).shiftLeft(P) / (v + ONE)
        val s2 = mul(s, s)
        var power = s
        var sum = BigInteger.ZERO
        var k = 1L
        while (power.signum() != 0) {
            sum += power / BigInteger.valueOf(k)
            power = mul(power, s2)
            k += 2
        }
        return sum.shiftLeft(1)
    }

    /** Python's `math.log(x)` of a float, correctly rounded; NaN for x < 0 or NaN (Python raises there). */
    @JvmStatic
    fun log(x: Double): Double {
        if (x.isNaN() || x < 0) return Double.NaN
        if (x == 0.0) return Double.NEGATIVE_INFINITY
        if (x == Double.POSITIVE_INFINITY) return Double.POSITIVE_INFINITY
        if (x == 1.0) return 0.0
        val (m, e) = decompose(x)
        val len = m.bitLength()
        var v = if (len - 1 > P) m.shiftRight(len - 1 - P) else m.shiftLeft(P - (len - 1))
        var k = len - 1 + e
        if (v > SQRT2) {
            v = v.shiftRight(1)
            k += 1
        }
        return nearestDouble(BigInteger.valueOf(k.toLong()) * LN2 + logNear1(v), -P)
    }

    /** Python's `math.log1p(x)` (glibc's is fdlibm's: `StrictMath.log1p`). */
    @JvmStatic
    fun log1p(x: Double): Double = StrictMath.log1p(x)

    /** Python's `math.expm1(x)` (glibc's is fdlibm's: `StrictMath.expm1`). */
    @JvmStatic
    fun expm1(x: Double): Double = StrictMath.expm1(x)

    /** `logistic_tail(x) = 1/(1 + e^x)`, with `e^-x` once `e^x` would overflow (x >= 700). */
    @JvmStatic
    fun logisticTail(x: Double): Double = if (x < 700.0) 1.0 / (1.0 + exp(x)) else exp(-x)
}
