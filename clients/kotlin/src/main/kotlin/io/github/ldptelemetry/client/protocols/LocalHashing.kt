package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold

/**
 * Local hashing (`ldp/encoders/local_hashing.py`; Wang, Blocki, Li & Jha, USENIX Security 2017): a report is a
 * random `seed` and a GRR over `[0, g)` of `h_seed(v) = MurmurHash3_x86_32(uint32_LE(v), seed) mod g`, kept with
 * `p = realized(1/(1 + (g − 1)·e^−ε))`. Optimized (`olh`): `g = floor(e^ε + 1/2) + 1`; binary (`blh`): `g = 2`.
 * Draws: `R(seed_range)`, `B(p)`, then `R(g − 1)` if false.
 */
public abstract class LocalHashingParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {

    /** The hash range: reports carry `y` in `[0, g)`. */
    public abstract val g: Long
    public val epsilon: Double get() = asDouble(values["epsilon"])
    override val domainSize: Int get() = (values["domain_size"] as Long).toInt()
    public val seedRange: Long get() = values["seed_range"] as Long
    public var labels: List<String>? = null
        private set

    /** Pr[y = h_seed(v)], as the client realizes it. */
    public val p: Double by lazy { Threshold.realized(1.0 / (1.0 + (g - 1) * PyMath.exp(-epsilon))) }

    /** Pr[y = u] for one given u ≠ h_seed(v). */
    public val q: Double get() = (1.0 - p) / (g - 1)

    /** Python's `_check`, in its order. */
    protected fun checkLocalHashing() {
        val eps = reader.double("epsilon")
        val d = reader.long("domain_size")
        reader.long("seed_range")
        val g = g
        if (g > (1L shl 32)) {
            throw Refuse.relation("hash_range", listOf("epsilon"), "epsilon=$eps is too large for $protocol: g = $g exceeds 2^32, the range of a 32-bit hash")
        }
        if (p >= 1.0) {
            throw Refuse.relation("epsilon_too_large", listOf("epsilon"), "epsilon=$eps is too large for $protocol: the keep probability rounds to 1 at the client's resolution, so reports would not be private")
        }
        if (p <= q) {
            throw Refuse.relation("epsilon_too_small", listOf("epsilon"), "epsilon=$eps is too small for $protocol: the keep probability rounds to 1/g, so reports would carry no information")
        }
        labels = reader.labels(d)
        Checks.collectable(protocol, schema, d)
    }

    /** The ε of the realized GRR over `[0, g)`. */
    public val effectiveEpsilon: Double get() = PyMath.log(p * (g - 1) / (1.0 - p))

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("seed", values["seed_range"] as Long), PayloadField.uint("y", g))

    /** The index of a label or an int index. */
    public fun indexOf(value: Any?): Int = domainIndexOf(protocol, domainSize, labels, value)

    public companion object {
        /** The default (and largest) seed range: a 32-bit seed. */
        public const val SEED_RANGE: Long = 1L shl 32

        /** `lh_hash`: `MurmurHash3_x86_32(uint32_LE(key), seed) mod g` (OLH, BLH and PEM's OLH groups). */
        @JvmStatic
        public fun hash(key: Long, seed: Long, g: Long): Long = Bytes.murmur3(Bytes.uint32LE(key), seed) % g

        /** OLH's `g = floor(e^ε + 1/2) + 1`, refused beyond a 32-bit hash's range. */
        @JvmStatic
        public fun olhWidth(epsilon: Double): Long {
            if (epsilon > 32.0) {
                throw Refuse.relation("hash_range", listOf("epsilon"), "epsilon=$epsilon is too large for olh: g = round(e^ε) + 1 exceeds 2^32, the range of a 32-bit hash")
            }
            return Math.floor(PyMath.exp(epsilon) + 0.5).toLong() + 1
        }

        /** One local-hashing report of [index]: `[seed, y]`. */
        @JvmStatic
        public fun draw(rng: RandomSource, seedRange: Long, g: Long, p: Double, index: Long): LongArray {
            val seed = rng.randbelow(seedRange)
            val x = hash(index, seed, g)
            if (rng.bernoulli(p)) return longArrayOf(seed, x)
            val other = rng.randbelow(g - 1)
            return longArrayOf(seed, other + if (other >= x) 1 else 0)
        }
    }
}

/** Optimized local hashing (`olh`). */
public class OLHParams internal constructor(values: Map<String, Any?>) : LocalHashingParams(values) {
    /** ε of one report, the number of values `d`, their names (null: values are indices) and the number of hash
     * seeds a report draws from. */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null, seedRange: Long = SEED_RANGE) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels, "seed_range" to seedRange))

    override val protocol: String get() = "olh"
    override val g: Long by lazy { olhWidth(reader.double("epsilon")) }

    init {
        checkLocalHashing()
    }

    public companion object {
        public val PROTOCOL: Protocol<OLHParams> = Protocol("olh", "OLHParams", ::OLHParams, { p, o -> LocalHashingEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): OLHParams = PROTOCOL.params(values)
    }
}

/** Binary local hashing (`blh`). */
public class BLHParams internal constructor(values: Map<String, Any?>) : LocalHashingParams(values) {
    /** ε of one report, the number of values `d`, their names (null: values are indices) and the number of hash
     * seeds a report draws from. */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null, seedRange: Long = SEED_RANGE) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels, "seed_range" to seedRange))

    override val protocol: String get() = "blh"
    override val g: Long get() = 2

    init {
        checkLocalHashing()
    }

    public companion object {
        public val PROTOCOL: Protocol<BLHParams> = Protocol("blh", "BLHParams", ::BLHParams, { p, o -> LocalHashingEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): BLHParams = PROTOCOL.params(values)
    }
}

/** The `olh` and `blh` encoder: values are labels or indices in `[0, d)`. */
public class LocalHashingEncoder<P : LocalHashingParams>(params: P, options: EncoderOptions) : Encoder<P, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)

    override fun draw(value: Int): Report {
        val r = LocalHashingParams.draw(rng, params.seedRange, params.g, params.p, value.toLong())
        return report("seed" to r[0], "y" to r[1])
    }
}
