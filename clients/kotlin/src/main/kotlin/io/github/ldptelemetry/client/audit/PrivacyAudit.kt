package io.github.ldptelemetry.client.audit

import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold
import java.math.BigInteger

/** The encoder under audit drew in a way that cannot be enumerated, or has too many paths. */
public class AuditException(message: String) : IllegalStateException(message)

/** What an audit found: the worst ε over the outputs, where it is attained, and the number of distinct outputs. */
public data class AuditResult(val epsilon: Double, val worstOutput: String, val worstInputs: Pair<Any?, Any?>, val outputs: Int) {
    /** Whether [epsilon] equals [claimed] to a relative 1e-9 (Python's `AuditResult.matches`). */
    public fun matches(claimed: Double, relTol: Double = 1e-9): Boolean {
        if (epsilon.isInfinite() || claimed.isInfinite()) return epsilon == claimed
        return Math.abs(epsilon - claimed) <= maxOf(relTol * maxOf(Math.abs(epsilon), Math.abs(claimed)), 1e-12)
    }
}

/**
 * The exact privacy audit (Python's `ldp/privacy/audit.py`): run an encoder's real code with a source that
 * enumerates every outcome of every primitive draw (depth first, replaying a prefix of choices), weigh each path by
 * its exact rational probability — a Bernoulli draw with the probability the client really uses, `floor(p·2^64)/2^64`
 * — and report the worst likelihood ratio `max_o ln(max_x Pr[o|x] / min_x Pr[o|x])`. No sampling error; only small
 * configurations are enumerable.
 */
public object PrivacyAudit {
    /** An exact probability `num/den`. */
    private class Rational(num: BigInteger, den: BigInteger) : Comparable<Rational> {
        val num: BigInteger
        val den: BigInteger

        init {
            val g = num.gcd(den)
            this.num = if (g > BigInteger.ONE) num / g else num
            this.den = if (g > BigInteger.ONE) den / g else den
        }

        operator fun times(o: Rational) = Rational(num * o.num, den * o.den)
        operator fun plus(o: Rational) = Rational(num * o.den + o.num * den, den * o.den)
        override fun compareTo(other: Rational): Int = (num * other.den).compareTo(other.num * den)

        companion object {
            val ZERO = Rational(BigInteger.ZERO, BigInteger.ONE)
            val ONE = Rational(BigInteger.ONE, BigInteger.ONE)
        }
    }

    private val TWO64: BigInteger = BigInteger.ONE.shiftLeft(64)

    private fun thresholdOf(p: Double): BigInteger {
        val t = Threshold.of(p)
        return if (t.full) TWO64 else io.github.ldptelemetry.client.internal.Bytes.unsigned(t.value)
    }

    /** Follows a prefix of choices, then the first branch of each new choice, recording each choice's arity. */
    private class EnumeratingSource(val choices: MutableList<Int>) : RandomSource() {
        val arities = ArrayList<Int>()
        var prob: Rational = Rational.ONE

        private fun choose(arity: Int, weight: (Int) -> Rational): Int {
            val depth = arities.size
            if (depth == choices.size) choices.add(0)
            arities.add(arity)
            val c = choices[depth]
            prob *= weight(c)
            return c
        }

        override fun bits(k: Int): Long = throw AuditException("encoders must draw through bernoulli/bernoulliBits/randbelow, not randbits")
        override fun wideBits(k: Int, into: LongArray): Unit = throw AuditException("encoders must draw through bernoulli/bernoulliBits/randbelow, not randbits")
        override fun tokenBytes(n: Int): ByteArray = throw AuditException("tokenBytes (secrets) cannot be enumerated; audit with a fixed secret")

        override fun bernoulli(p: Double): Boolean {
            val t = thresholdOf(p)
            return choose(2) { if (it == 1) Rational(t, TWO64) else Rational(TWO64 - t, TWO64) } == 1
        }

        override fun bernoulliBits(p: Double, n: Int): BitMask {
            if (n > 20) throw AuditException("bernoulliBits with n=$n has too many outcomes to enumerate")
            val t = thresholdOf(p)
            val den = TWO64.pow(n)
            val m = choose(1 shl n) { mask ->
                val j = Integer.bitCount(mask)
                Rational(t.pow(j) * (TWO64 - t).pow(n - j), den)
            }
            return BitMask.ofLong(n, m.toLong())
        }

        override fun randbelow(n: Long): Long {
            if (n > (1L shl 20)) throw AuditException("randbelow($n) has too many outcomes to enumerate")
            return choose(n.toInt()) { Rational(BigInteger.ONE, BigInteger.valueOf(n)) }.toLong()
        }
    }

    /** The exact distribution of `run(source)` over all of its random paths, by output. */
    private fun outputDistribution(maxPaths: Int, run: (RandomSource) -> String): Map<String, Rational> {
        val dist = HashMap<String, Rational>()
        var prefix = ArrayList<Int>()
        var i = 0
        while (true) {
            if (i++ >= maxPaths) throw AuditException("more than $maxPaths random paths")
            val src = EnumeratingSource(prefix)
            val out = run(src)
            if (src.prob.num.signum() != 0) dist[out] = (dist[out] ?: Rational.ZERO) + src.prob
            prefix = ArrayList(src.choices.subList(0, src.arities.size))
            while (prefix.isNotEmpty() && prefix.last() + 1 >= src.arities[prefix.size - 1]) prefix.removeAt(prefix.size - 1)
            if (prefix.isEmpty()) break
            prefix[prefix.size - 1] = prefix.last() + 1
        }
        val total = dist.values.fold(Rational.ZERO) { a, b -> a + b }
        if (total.compareTo(Rational.ONE) != 0) throw AuditException("path probabilities do not sum to 1 (the draws are not enumerable)")
        return dist
    }

    /** ln of a positive integer, to double precision. */
    private fun ln(x: BigInteger): Double {
        val shift = maxOf(0, x.bitLength() - 60)
        return Math.log(x.shiftRight(shift).toDouble()) + shift * Math.log(2.0)
    }

    /**
     * Audits a mechanism `run(input, source) -> output text` over [inputs] (at least two): the worst ε over every
     * output and pair of inputs, exactly. [run] must draw only from the source it is given.
     */
    @JvmStatic
    @JvmOverloads
    public fun audit(inputs: List<Any?>, maxPaths: Int = 1 shl 20, run: (Any?, RandomSource) -> String): AuditResult {
        require(inputs.size >= 2) { "an audit needs at least two inputs" }
        val dists = inputs.map { x -> outputDistribution(maxPaths) { run(x, it) } }
        val outputs = dists.flatMap { it.keys }.toSortedSet()
        var worst = -1.0
        var worstOut = ""
        var worstHi = 0
        var worstLo = 0
        for (o in outputs) {
            var hi = 0
            var lo = 0
            for (k in 1 until inputs.size) {
                if ((dists[k][o] ?: Rational.ZERO) > (dists[hi][o] ?: Rational.ZERO)) hi = k
                if ((dists[k][o] ?: Rational.ZERO) < (dists[lo][o] ?: Rational.ZERO)) lo = k
            }
            val a = dists[hi][o] ?: Rational.ZERO
            val b = dists[lo][o] ?: Rational.ZERO
            val eps = if (b.num.signum() == 0) Double.POSITIVE_INFINITY else ln(a.num * b.den) - ln(b.num * a.den)
            if (eps > worst) {
                worst = eps
                worstOut = o
                worstHi = hi
                worstLo = lo
            }
        }
        return AuditResult(worst, worstOut, inputs[worstHi] to inputs[worstLo], outputs.size)
    }
}
