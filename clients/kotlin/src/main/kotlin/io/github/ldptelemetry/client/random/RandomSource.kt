package io.github.ldptelemetry.client.random


/**
 * The random choices a client encoder makes (Python's `ldp.randomness.RandomSource`; docs/randomness.md and
 * docs/conformance.md section 3). The only entropy call is `randbits(k)`, a uniform integer in `[0, 2^k)`:
 * [bits] for `k <= 64`, [wideBits] for any `k`. Encoders draw only through [bernoulli], [bernoulliBits], [randbelow]
 * and [tokenBytes], whose `randbits` sequences are Python's, so a source that replays Python's stream makes Python's
 * reports.
 *
 * A source is not thread-safe: give each thread its own, or lock around it (the client's runtime does).
 */
public abstract class RandomSource {
    /** `randbits(k)` for `0 <= k <= 64`: a uniform value in `[0, 2^k)` (all 64 bits for `k = 64`); `k = 0` gives 0 and
     * draws nothing. */
    public abstract fun bits(k: Int): Long

    /** `randbits(k)` for any `k >= 1`, into [into]'s first `ceil(k/64)` words, little-endian, bits above `k` zero.
     * One call is one `randbits(k)` draw, even when `k <= 64`. */
    public abstract fun wideBits(k: Int, into: LongArray)

    /** `B(p)`: true with probability `floor(p·2^64)/2^64`; one `randbits(64)` compared with the threshold, drawn
     * only when the threshold is strictly between 0 and 2^64 (so `p = 0` and `p = 1` draw nothing). */
    public open fun bernoulli(p: Double): Boolean {
        val t = Threshold.of(p)
        if (t.full) return true
        if (t.value == 0L) return false
        return Threshold.unsignedLess(bits(64), t.value)
    }

    /** `BB(p, n)`: an `n`-bit mask of independent `B(p)` lanes by the bit-sliced comparison: one `randbits(n)` per
     * bit plane of the uniform lanes, from plane 63 down, stopping once no lane is tied with the threshold or the
     * threshold's remaining bits are all zero. */
    public open fun bernoulliBits(p: Double, n: Int): BitMask {
        if (n < 0) throw IllegalArgumentException("number of bits must be a non-negative int, got $n")
        val t = Threshold.of(p)
        val out = BitMask(n)
        if (t.value == 0L && !t.full || n == 0) return out
        val w = out.words
        if (t.full) {
            for (i in w.indices) w[i] = -1L
            trim(w, n)
            return out
        }
        val threshold = t.value
        if (n <= 64) {
            val full = if (n == 64) -1L else (1L shl n) - 1
            var below = 0L
            var tied = full
            for (plane in 63 downTo 0) {
                val r = bits(n)
                val bit = 1L shl plane
                if (threshold and bit != 0L) {
                    below = below or (tied and r.inv())
                    tied = tied and r
                } else {
                    tied = tied and r.inv()
                }
                if (tied == 0L || threshold and (bit - 1) == 0L) break
            }
            w[0] = below and full
            return out
        }
        val words = w.size
        val tied = LongArray(words) { -1L }
        trim(tied, n)
        val r = LongArray(words)
        for (plane in 63 downTo 0) {
            wideBits(n, r)
            val bit = 1L shl plane
            var any = 0L
            if (threshold and bit != 0L) {
                for (i in 0 until words) {
                    w[i] = w[i] or (tied[i] and r[i].inv())
                    tied[i] = tied[i] and r[i]
                    any = any or tied[i]
                }
            } else {
                for (i in 0 until words) {
                    tied[i] = tied[i] and r[i].inv()
                    any = any or tied[i]
                }
            }
            if (any == 0L || threshold and (bit - 1) == 0L) break
        }
        trim(w, n)
        return out
    }

    /** `R(n)`: a uniform integer in `[0, n)` by rejection: `randbits(bit_length(n − 1))` until below `n`; nothing
     * is drawn for `n = 1`. `1 <= n <= 2^62`. */
    public open fun randbelow(n: Long): Long {
        if (n < 1 || n > (1L shl 62)) throw IllegalArgumentException("randbelow needs an int n >= 1, got $n")
        if (n == 1L) return 0
        val k = 64 - java.lang.Long.numberOfLeadingZeros(n - 1)
        while (true) {
            val r = bits(k)
            if (r < n) return r
        }
    }

    /** `randbelow` of an `Int` bound. */
    public fun randbelow(n: Int): Int = randbelow(n.toLong()).toInt()

    /** `n` uniform bytes: one `randbits(8n)`, little-endian. */
    public open fun tokenBytes(n: Int): ByteArray {
        if (n <= 0) return ByteArray(0)
        val w = LongArray((8 * n + 63) / 64)
        wideBits(8 * n, w)
        return ByteArray(n) { (w[it / 8] ushr (8 * (it % 8))).toByte() }
    }

    internal companion object {
        fun trim(w: LongArray, n: Int) {
            val rem = n and 63
            if (rem != 0 && w.isNotEmpty()) w[w.size - 1] = w[w.size - 1] and ((1L shl rem) - 1)
        }
    }
}

/** The threshold `T = floor(p·2^64)` of a Bernoulli draw: [full] when `T = 2^64` (p = 1), else [value] as an
 * unsigned 64-bit integer. Scaling a double by 2^64 is exact, and so is its floor below 2^64. */
public class Threshold private constructor(public val value: Long, public val full: Boolean) {
    public companion object {
        private const val TWO_63 = 9.223372036854775807E18 // 2^63 as a double

        /** The threshold of [p], which must be in [0, 1] (NaN refused). */
        public fun of(p: Double): Threshold {
            if (!(p >= 0.0 && p <= 1.0)) throw IllegalArgumentException("p must be in [0, 1], got $p")
            val scaled = Math.scalb(p, 64)
            if (scaled >= 2 * TWO_63) return Threshold(0, true)
            val v = if (scaled >= TWO_63) (scaled - TWO_63).toLong() or Long.MIN_VALUE else scaled.toLong()
            return Threshold(v, false)
        }

        internal fun unsignedLess(a: Long, b: Long): Boolean = (a xor Long.MIN_VALUE) < (b xor Long.MIN_VALUE)

        /** The probability a client's `B(p)` really has: `floor(p·2^64)/2^64` (`realized_probability`). */
        public fun realized(p: Double): Double {
            val t = of(p)
            if (t.full) return 1.0
            val v = t.value
            val asDouble = if (v < 0) (v ushr 1).toDouble() * 2.0 + (v and 1L).toDouble() else v.toDouble()
            return Math.scalb(asDouble, -64)
        }
    }
}
