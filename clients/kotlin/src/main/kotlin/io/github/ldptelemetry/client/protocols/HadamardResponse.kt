package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold

/**
 * Hadamard Response, one bit (`hr`; Acharya, Sun & Zhang, AISTATS 2019, `ldp/encoders/hadamard_response.py`): a value
 * `v` is reported as a column `j` of the `K × K` Hadamard matrix (`K` the smallest power of two above `d`), inside
 * `C_v = {j : popcount(j AND (v + 1)) even}` with `p = realized(σ(−ε))`, else outside. Draws: `B(p)`, `R(K)`.
 */
public class HRParams internal constructor(values: Map<String, Any?>) : UnaryParams(values) {
    /** ε of one report, the number of values `d` and their names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels))

    override val protocol: String get() = "hr"
    public val epsilon: Double = reader.double("epsilon")
    override val p: Double = Threshold.realized(PyMath.logisticTail(-epsilon))
    override val q: Double get() = 0.5

    /** K, the Hadamard order: reports are `j` in `[0, K)`. */
    public val order: Long get() = 1L shl (64 - java.lang.Long.numberOfLeadingZeros(d))

    init {
        checkUnary("epsilon=${epsilon}")
        Checks.collectable(protocol, schema, order)
    }

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("j", order))

    public companion object {
        public val PROTOCOL: Protocol<HRParams> = Protocol("hr", "HRParams", ::HRParams, { p, o -> HREncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): HRParams = PROTOCOL.params(values)
    }
}

/** The `hr` encoder. */
public class HREncoder(params: HRParams, options: EncoderOptions) : Encoder<HRParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)

    override fun draw(value: Int): Report {
        val row = value + 1L
        val want = if (rng.bernoulli(params.p)) 0 else 1 // the parity of j AND row: 0 inside C_v
        var j = rng.randbelow(params.order)
        if (java.lang.Long.bitCount(j and row) % 2 != want) j = j xor (row and -row)
        return report("j" to j)
    }
}

/**
 * Subset Selection (`ss`; Ye & Barg 2018, Wang et al. 2016, `ldp/encoders/subset_selection.py`): a report is a subset
 * of `ω = max(1, floor(d·σ(ε) + 1/2))` values holding the value with `p = realized(σ(ln((d − ω)/ω) − ε))`, the others
 * uniform (Floyd's algorithm over the `d − 1` other values). Draws: `B(p)`, then `R(d−ω+o)` … `R(d−1)`.
 */
public class SSParams internal constructor(values: Map<String, Any?>) : UnaryParams(values) {
    /** ε of one report, the number of values `d` and their names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels))

    override val protocol: String get() = "ss"
    public val epsilon: Double = reader.double("epsilon")

    /** ω, the size of every reported subset. */
    public val omega: Long by lazy { maxOf(1L, Math.floor(d * PyMath.logisticTail(epsilon) + 0.5).toLong()) }
    override val p: Double by lazy { Threshold.realized(PyMath.logisticTail(PyMath.log((d - omega).toDouble() / omega) - epsilon)) }
    override val q: Double get() = (omega - p) / (d - 1)

    init {
        checkUnary("epsilon=$epsilon", listOf("epsilon", "domain_size"))
        Checks.collectable(protocol, schema, d)
    }

    /** `ln(p(d − ω)/((1 − p)ω))` of the realized p. */
    override val effectiveEpsilon: Double get() = PyMath.log(p) - PyMath.log1p(-p) + PyMath.log((d - omega).toDouble() / omega)
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }

    public companion object {
        public val PROTOCOL: Protocol<SSParams> = Protocol("ss", "SSParams", ::SSParams, { p, o -> SSEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): SSParams = PROTOCOL.params(values)

        /** Floyd's algorithm: a uniform [k]-subset of `[0, n)`: for `j = n − k .. n − 1`, `t = R(j + 1)`, add `j` if `t`
         * is already in, else `t`. */
        @JvmStatic
        public fun floyd(rng: RandomSource, n: Int, k: Int): BitMask {
            val chosen = BitMask(n)
            for (j in n - k until n) {
                val t = rng.randbelow(j + 1)
                chosen[if (chosen[t]) j else t] = true
            }
            return chosen
        }
    }
}

/** The `ss` encoder. */
public class SSEncoder(params: SSParams, options: EncoderOptions) : Encoder<SSParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)

    override fun draw(value: Int): Report {
        val d = params.domainSize
        val own = rng.bernoulli(params.p)
        val others = SSParams.floyd(rng, d - 1, params.omega.toInt() - if (own) 1 else 0)
        val bits = BitMask(d)
        for (i in others.setBits()) bits[if (i < value) i else i + 1] = true
        bits[value] = own
        return report("bits" to bits)
    }
}
