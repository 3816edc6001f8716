package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold

/**
 * Apple's Count Mean Sketch and its Hadamard variant (`cms`, `hcms`; Apple's "Learning with Privacy at Scale", 2017,
 * `ldp/encoders/cms.py`, `hcms.py`): a string is hashed by one of `k` hash functions (`j = R(k)`) into `[0, m)`.
 * CMS reports the one-hot vector of that bucket with every bit flipped with `σ(ε/2)` (`BB(σ(ε/2), m)`); HCMS reports
 * one random Hadamard coefficient `row = R(m)` of it, flipped with `σ(ε)` (`B(σ(ε))`).
 */
public abstract class SketchParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    public val epsilon: Double = reader.double("epsilon")

    /** The flip probability (not rounded before its draw). */
    public val flipProbability: Double by lazy { flipOf(epsilon) }
    protected abstract fun flipOf(epsilon: Double): Double

    /** How many flips tell two inputs apart: the ε of the realized law is `perFlip·ln((1 − p)/p)`. */
    protected abstract val epsilonPerFlip: Double
    public val numHashes: Int get() = (values["num_hashes"] as Long).toInt()
    public val width: Int get() = (values["width"] as Long).toInt()
    public val hashSeed: Long get() = values["hash_seed"] as Long
    override val domainSize: Int? get() = null

    /** Python's sketch checks, in its order. */
    protected fun checkSketch() {
        val t = Threshold.of(flipProbability)
        if (!t.full && t.value == 0L) {
            throw Refuse.relation("epsilon_too_large", listOf("epsilon"), "epsilon=$epsilon is too large: the flip probability rounds to 0 at the client's 2^-64 resolution, so reports would not be private")
        }
        val k = reader.long("num_hashes")
        val m = reader.long("width")
        reader.long("hash_seed", dynamicMax = 0xffffffffL - k + 1)
        Checks.collectable(protocol, schema, k * (m + 1))
    }

    public val effectiveEpsilon: Double get() = Threshold.realized(flipProbability).let { epsilonPerFlip * PyMath.log((1.0 - it) / it) }
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }

    /** The bucket of hash function [j] of [data]: `MurmurHash3_x86_32(data, hash_seed + j) mod m`. */
    public fun bucket(data: ByteArray, j: Int): Int = (Bytes.murmur3(data, hashSeed + j) % width).toInt()

    public companion object {
        public const val MAX_WIDTH: Long = 1L shl 24

        internal fun sketchBytes(value: Any?, name: String): ByteArray {
            if (value !is String && value !is ByteArray) throw Refuse.valueType("string_or_bytes", value, "$name values must be strings or bytes, got ${Refuse.kind(value)}")
            return Bytes.valueBytes(value)
        }
    }
}

/** Count Mean Sketch parameters. */
public class CmsParams internal constructor(values: Map<String, Any?>) : SketchParams(values) {
    /** ε of one report, the number of hash functions `k` (rows), the width `m` of a row and the hash family's seed. */
    @JvmOverloads
    public constructor(epsilon: Double, numHashes: Long, width: Long, hashSeed: Long = 0) :
        this(linkedMapOf("epsilon" to epsilon, "num_hashes" to numHashes, "width" to width, "hash_seed" to hashSeed))

    override val protocol: String get() = "cms"
    override val epsilonPerFlip: Double get() = 2.0
    override fun flipOf(epsilon: Double): Double = PyMath.logisticTail(epsilon / 2)

    init {
        checkSketch()
    }

    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("hash", values["num_hashes"] as Long), PayloadField.bits("bits", (values["width"] as Long).toInt()))

    /** One CMS report of [data]: `[j, bits]`. */
    public fun draw(rng: RandomSource, data: ByteArray): Pair<Long, BitMask> {
        val j = rng.randbelow(numHashes)
        val h = bucket(data, j)
        val bits = rng.bernoulliBits(flipProbability, width)
        bits.flip(h)
        return j.toLong() to bits
    }

    public companion object {
        public val PROTOCOL: Protocol<CmsParams> = Protocol("cms", "CmsParams", ::CmsParams, { p, o -> CmsEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): CmsParams = PROTOCOL.params(values)
    }
}

/** Hadamard Count Mean Sketch parameters (`width` a power of two). */
public class HcmsParams internal constructor(values: Map<String, Any?>) : SketchParams(values) {
    /** ε of one report, the number of hash functions `k` (rows), the width `m` of a row and the hash family's seed. */
    @JvmOverloads
    public constructor(epsilon: Double, numHashes: Long, width: Long, hashSeed: Long = 0) :
        this(linkedMapOf("epsilon" to epsilon, "num_hashes" to numHashes, "width" to width, "hash_seed" to hashSeed))

    override val protocol: String get() = "hcms"
    override val epsilonPerFlip: Double get() = 1.0
    override fun flipOf(epsilon: Double): Double = PyMath.logisticTail(epsilon)

    init {
        checkSketch()
        if (width and (width - 1) != 0) throw Refuse.relation("power_of_two", listOf("width"), "HCMS width m must be a power of two (Hadamard transform), got $width")
    }

    override val schema: List<PayloadField>
        get() = listOf(PayloadField.uint("hash", values["num_hashes"] as Long), PayloadField.uint("row", values["width"] as Long), PayloadField.uint("bit", 2))

    /** One HCMS report of [data]: `[j, row, bit]`. */
    public fun draw(rng: RandomSource, data: ByteArray): LongArray {
        val j = rng.randbelow(numHashes)
        val row = rng.randbelow(width)
        val odd = Integer.bitCount(bucket(data, j) and row) and 1
        val kept = !rng.bernoulli(flipProbability)
        return longArrayOf(j.toLong(), row.toLong(), (odd xor if (kept) 1 else 0).toLong())
    }

    public companion object {
        public val PROTOCOL: Protocol<HcmsParams> = Protocol("hcms", "HcmsParams", ::HcmsParams, { p, o -> HcmsEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): HcmsParams = PROTOCOL.params(values)
    }
}

/** The `cms` encoder: values are strings (UTF-8) or bytes. */
public class CmsEncoder(params: CmsParams, options: EncoderOptions) : Encoder<CmsParams, ByteArray>(params, options) {
    override fun check(value: Any?): ByteArray = SketchParams.sketchBytes(value, "CMS")

    override fun draw(value: ByteArray): Report {
        val (j, bits) = params.draw(rng, value)
        return report("hash" to j, "bits" to bits)
    }
}

/** The `hcms` encoder: values are strings (UTF-8) or bytes. */
public class HcmsEncoder(params: HcmsParams, options: EncoderOptions) : Encoder<HcmsParams, ByteArray>(params, options) {
    override fun check(value: Any?): ByteArray = SketchParams.sketchBytes(value, "HCMS")

    override fun draw(value: ByteArray): Report {
        val r = params.draw(rng, value)
        return report("hash" to r[0], "row" to r[1], "bit" to r[2])
    }
}
