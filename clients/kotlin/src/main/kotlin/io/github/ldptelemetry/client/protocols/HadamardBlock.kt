package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.Threshold

/**
 * Blocked Hadamard Response (`hr-block`; Acharya, Sun & Zhang, AISTATS 2019 §5, `ldp/encoders/hadamard_block.py`):
 * the `d` values dealt into `B` blocks (value `x` to block `x mod B`, row `⌊x/B⌋ + 1` of its `b × b` Hadamard matrix,
 * `b` the smallest power of two above `⌈d/B⌉`); a report `j` in `[0, K)`, `K = B·b`, is uniform with
 * `γ = realized(2B/(2B + expm1(ε)))`, else uniform on the `+1` half of the value's row. Charged
 * `max(ε, ln(1 + 2B(1 − γ)/γ))`. Draws: `B(γ)`, then `R(K)` if true, `R(b)` if false.
 */
public class HRBlockParams private constructor(values: Map<String, Any?>, @Suppress("UNUSED_PARAMETER") resolved: Boolean) : ProtocolParams(values) {
    /** ε of one report, the number of values `d`, the number of blocks `B` in `[1, d]` (null: [bestBlocks]) and the
     * values' names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, blocks: Long? = null, labels: List<String>? = null) :
        this(resolve(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "blocks" to blocks, "labels" to labels)), true)

    override val protocol: String get() = "hr-block"
    public val epsilon: Double = reader.double("epsilon")
    private val d: Long = reader.long("domain_size")

    /** `B`, the number of blocks. */
    public val blocks: Long = reader.long("blocks", dynamicMax = d)

    /** `γ`, the realized probability of the uniform branch. */
    public val gamma: Double = Threshold.realized(uniformShare(epsilon, blocks))
    public val labels: List<String>?

    init {
        if (gamma <= 0.0) {
            throw Refuse.relation("epsilon_too_large", listOf("epsilon", "domain_size", "blocks"), "epsilon=$epsilon is too large for hr-block with $blocks blocks: the uniform branch rounds to probability 0 at the client's resolution, so reports would not be private")
        }
        if (gamma >= 1.0) {
            throw Refuse.relation("epsilon_too_small", listOf("epsilon", "domain_size", "blocks"), "epsilon=$epsilon is too small for hr-block with $blocks blocks: the uniform branch rounds to probability 1, so reports would carry no information")
        }
        labels = reader.labels(d)
        Checks.collectable(protocol, schema, order)
    }

    override val domainSize: Int get() = d.toInt()

    /** `b`, a block's Hadamard order. */
    public val blockOrder: Long get() = order(ceilDiv(d, blocks))

    /** `K = B·b`. */
    public val order: Long get() = blocks * blockOrder

    /** `ln(1 + 2B(1 − γ)/γ)` of the realized γ, in exact rationals. */
    public val effectiveEpsilon: Double by lazy {
        val g = Rational.of(gamma)
        val one = Rational.of(1L)
        (one + Rational.of(2 * blocks) * (one - g) / g).logRatio()
    }
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("j", order))

    public fun indexOf(value: Any?): Int = domainIndexOf(protocol, domainSize, labels, value)

    public companion object {
        /** [values] with `blocks` resolved (`null`: [bestBlocks], after the checks that precede it). */
        private fun resolve(values: Map<String, Any?>): Map<String, Any?> {
            if (values["blocks"] != null) return values
            val reader = ParamReader("hr-block", values)
            return LinkedHashMap(values).apply { put("blocks", bestBlocks(reader.double("epsilon"), reader.long("domain_size"))) }
        }

        public val PROTOCOL: Protocol<HRBlockParams> = Protocol("hr-block", "HRBlockParams", { HRBlockParams(resolve(it), true) }, { p, o -> HRBlockEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): HRBlockParams = PROTOCOL.params(values)

        private fun ceilDiv(a: Long, b: Long) = -Math.floorDiv(-a, b)
        private fun order(m: Long) = 1L shl (64 - java.lang.Long.numberOfLeadingZeros(m))

        /** `γ = 2B/(2B + e^ε − 1)` before rounding (0 past ε = 700). */
        public fun uniformShare(epsilon: Double, blocks: Long): Double = if (epsilon > 700.0) 0.0 else 2.0 * blocks / (2.0 * blocks + PyMath.expm1(epsilon))

        private fun rareVariance(gamma: Double, blocks: Long, d: Long): Double {
            val m = ceilDiv(d, blocks)
            return gamma / (blocks * (1.0 - gamma) * (1.0 - gamma)) + (m - 1) / ((d - 1) * (1.0 - gamma))
        }

        /** The `B` in `[1, d]` of least variance for a rare value (Python's `best_blocks`). */
        @JvmStatic
        public fun bestBlocks(epsilon: Double, d: Long): Long {
            val root = Math.sqrt(d.toDouble()).toLong().let { r -> var x = r; while (x * x > d) x--; while ((x + 1) * (x + 1) <= d) x++; x } + 1
            val candidates = sortedSetOf<Long>()
            for (b in 1..minOf(d, 2 * root)) candidates.add(b)
            for (m in 1..root) candidates.add(ceilDiv(d, m))
            var best = 1L
            var bestVar = Double.POSITIVE_INFINITY
            for (b in candidates) {
                val g = uniformShare(epsilon, b)
                if (!(g > 0.0 && g < 1.0)) continue
                val v = rareVariance(g, b, d)
                if (v < bestVar * (1 - 1e-12)) {
                    best = b
                    bestVar = v
                }
            }
            return best
        }
    }
}

/** The `hr-block` encoder. */
public class HRBlockEncoder(params: HRBlockParams, options: EncoderOptions) : Encoder<HRBlockParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)

    override fun draw(value: Int): Report {
        if (rng.bernoulli(params.gamma)) return report("j" to rng.randbelow(params.order))
        val b = params.blockOrder
        val row = value / params.blocks + 1
        var pos = rng.randbelow(b)
        if (java.lang.Long.bitCount(pos and row) and 1 == 1) pos = pos xor (row and -row)
        return report("j" to (value % params.blocks) * b + pos)
    }
}
