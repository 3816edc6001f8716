package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.BitMask
import java.math.BigInteger

/**
 * Hierarchical histograms for range queries (`hh`; Cormode, Kulkarni & Srivastava, PVLDB 2019 §4,
 * `ldp/encoders/range_tree.py`): `[low, high]` cut into `D = branching^depth` equal buckets; a report draws a level
 * of the `B`-ary tree (uniformly, or by `level_weights`) and reports its bucket's node there through that level's
 * oracle at the full ε: GRR or OUE (`"auto"`: the one of smaller null variance). Charged the largest of the oracles'.
 */
public class HHParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** ε of one report, the range `[low, high]` of the values, the tree's [branching] and [depth] (`branching^depth`
     * buckets), the frequency [oracle] of each level (`"auto"`, `"oue"` or `"grr"`), the levels' sampling weights
     * (empty: uniform) and whether a value outside the range is clipped to it (else refused). */
    @JvmOverloads
    public constructor(
        epsilon: Double, low: Double, high: Double, branching: Long = 4, depth: Long = 5, oracle: String = "auto",
        levelWeights: List<Long> = emptyList(), clip: Boolean = false,
    ) : this(
        linkedMapOf(
            "epsilon" to epsilon, "low" to low, "high" to high, "branching" to branching, "depth" to depth, "oracle" to oracle,
            "level_weights" to levelWeights, "clip" to clip,
        ),
    )

    override val protocol: String get() = "hh"
    public val epsilon: Double = reader.double("epsilon")
    public val low: Double = reader.double("low", typeIsValueError = true)
    public val high: Double = reader.double("high", typeIsValueError = true)
    public val branching: Int
    public val depth: Int
    public val oracle: String
    public val clip: Boolean
    public val weights: List<Long>
    private val hasWeights: Boolean

    init {
        if (!(low < high)) throw Refuse.relation("low<high", listOf("low", "high"), "need low < high, got low=$low, high=$high")
        branching = reader.int("branching")
        depth = reader.int("depth")
        if (BigInteger.valueOf(branching.toLong()).pow(depth) > BigInteger.valueOf(MAX_LEAVES)) {
            val leaves = BigInteger.valueOf(branching.toLong()).pow(depth).toLong()
            throw Refuse.limit("leaves", leaves, MAX_LEAVES, "branching^depth = $branching^$depth buckets is over the $MAX_LEAVES allowed")
        }
        oracle = reader.choice("oracle")
        clip = reader.bool("clip")
        val w = values["level_weights"]
        if (w !is List<*>) throw Refuse.paramType("level_weights", "list", w, "level_weights must be a list of ints, got ${Refuse.kind(w)}")
        if (w.isNotEmpty()) {
            if (w.size != depth) throw Refuse.paramLength("level_weights", w.size.toLong(), depth.toLong(), depth.toLong(), "level_weights must have depth=$depth entries (levels 1..$depth), got ${w.size}")
            w.forEachIndexed { i, x -> Checks.int(x, "level_weights", 0, 1L shl 32, index = i) }
            if ((w.last() as Long) == 0L) {
                throw Refuse.relation("leaf_weight", listOf("level_weights"), "level_weights must give the leaf level (the last) a weight > 0: the buckets' counts are estimated from it")
            }
        }
        hasWeights = w.isNotEmpty()
        weights = if (hasWeights) w.map { it as Long } else List(depth) { 1L }
    }

    public val numBuckets: Int = pow(branching, depth)
    override val domainSize: Int get() = numBuckets

    /** `low + (high − low)·i/D`, then `high`. */
    public val edges: List<Double> = (0 until numBuckets).map { low + (high - low) * it / numBuckets } + high
    private val oracles: List<ProtocolParams>

    init {
        if (edges.mapTo(HashSet()) { it + 0.0 }.size != edges.size) { // + 0.0: -0.0 and 0.0 are one edge, as in Python
            throw Refuse.relation("distinct_edges", listOf("low", "high", "branching", "depth"), "[$low, $high] is too narrow for $numBuckets distinct bucket edges")
        }
        oracles = (1..depth).map {
            try {
                levelOracle(pow(branching, it))
            } catch (e: LdpValueException) { // a level's ε too large or too small for its oracle
                if (e.code != RefusalCode.PARAM_RELATION) throw e
                throw Refuse.relation(e.fields["rule"] as String, listOf("epsilon", "branching", "depth", "oracle"), e.message ?: "")
            }
        }
        Checks.collectable(protocol, schema, depth * (numBuckets + 1L))
    }

    private fun levelOracle(m: Int): ProtocolParams {
        val v = linkedMapOf<String, Any?>("epsilon" to epsilon, "domain_size" to m.toLong(), "labels" to null)
        return when (oracle) {
            "grr" -> GRRParams.read(v)
            "oue" -> OUEParams(v)
            else -> {
                val oue = OUEParams(v)
                val grr = try {
                    GRRParams.read(v)
                } catch (e: LdpValueException) {
                    null
                }
                if (grr != null && nullVariance(grr.p, grr.q) < nullVariance(oue.p, oue.q)) grr else oue
            }
        }
    }

    /** The oracle of level `level` (1-based). */
    public fun levelOracleOf(level: Int): ProtocolParams = oracles[level - 1]

    private val kinds: List<Boolean> get() = oracles.map { it is GRRParams } // true: GRR
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(oracles.maxOf { it.privacyCost.epsilon }) }
    override val schema: List<PayloadField>
        get() {
            val out = mutableListOf(PayloadField.uint("level", depth.toLong()))
            val grrSizes = (1..depth).filter { kinds[it - 1] }.map { pow(branching, it).toLong() }
            if (grrSizes.isNotEmpty()) out.add(PayloadField.uint("y", grrSizes.max()))
            if (kinds.any { !it }) out.add(PayloadField.bits("bits", numBuckets))
            return out
        }
    internal val usesGrr: Boolean get() = kinds.any { it }
    internal val usesOue: Boolean get() = kinds.any { !it }
    internal val weighted: Boolean get() = hasWeights

    public fun bucketOf(value: Any?): Int = Buckets.index(edges, value, clip)

    public companion object {
        public const val MAX_LEAVES: Long = 1L shl 16
        public val PROTOCOL: Protocol<HHParams> = Protocol("hh", "HHParams", ::HHParams, { p, o -> HHEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): HHParams = PROTOCOL.params(values)

        private fun pow(b: Int, e: Int): Int {
            var r = 1L
            repeat(e) { r *= b }
            return r.toInt()
        }

        /** `V0 = q(1−q)/(p−q)²`: the variance per report of the count of a value nobody holds. */
        public fun nullVariance(p: Double, q: Double): Double = q * (1.0 - q) / ((p - q) * (p - q))
    }
}

/** The `hh` encoder: values are numbers in `[low, high]`. */
public class HHEncoder(params: HHParams, options: EncoderOptions) : Encoder<HHParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.bucketOf(value)

    override fun draw(value: Int): Report {
        val pr = params
        val level = if (!pr.weighted) {
            rng.randbelow(pr.depth)
        } else {
            var r = rng.randbelow(pr.weights.sum())
            var l = 0
            while (r >= pr.weights[l]) {
                r -= pr.weights[l]
                l++
            }
            l
        }
        var m = 1
        repeat(level + 1) { m *= pr.branching }
        val node = value / (pr.numBuckets / m)
        val payload = mutableListOf<Pair<String, Any>>("level" to level.toLong())
        when (val oracle = pr.levelOracleOf(level + 1)) {
            is GRRParams -> {
                payload.add("y" to GRRParams.draw(rng, oracle.p, m, node).toLong())
                if (pr.usesOue) payload.add("bits" to BitMask(pr.numBuckets))
            }
            is OUEParams -> {
                val own = UnaryEncoding.draw(rng, oracle.p, oracle.q, m, node)
                if (pr.usesGrr) payload.add("y" to 0L)
                val bits = BitMask(pr.numBuckets)
                for (i in own.setBits()) bits[i] = true
                payload.add("bits" to bits)
            }
            else -> error("unreachable")
        }
        return report(payload)
    }
}
