package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.random.KeyedRandomSource
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold
import java.math.BigDecimal
import java.math.BigInteger

/**
 * A histogram's buckets (`ldp/encoders/histogram_buckets.py`): `edges` strictly increasing finite numbers, bucket `i`
 * is `[edges[i], edges[i+1])`, the last one closed; a number outside `[edges[0], edges[k]]` is refused unless `clip`
 * puts it in the first or last bucket.
 */
internal object Buckets {
    /** Most buckets a histogram may have. */
    public const val MAX_BUCKETS: Int = 1 shl 15

    /** Python's `check_edges`: the edges as doubles, refusing as it does. */
    public fun checkEdges(edges: Any?): List<Double> {
        if (edges !is List<*>) throw Refuse.paramType("edges", "list", edges, "edges must be a list of numbers, got ${Refuse.kind(edges)}")
        if (edges.size !in 3..MAX_BUCKETS + 1) {
            throw Refuse.paramLength("edges", edges.size.toLong(), 3L, MAX_BUCKETS + 1L, "edges must have between 3 and ${MAX_BUCKETS + 1} entries (2 to $MAX_BUCKETS buckets), got ${edges.size}")
        }
        val out = ArrayList<Double>(edges.size)
        for ((i, e) in edges.withIndex()) {
            if (!isReal(e)) throw Refuse.paramType("edges", "float", e, "edges[$i] must be a real number, got ${Refuse.kind(e)}", index = i)
            val f = asDouble(e)
            if (f.isNaN() || f.isInfinite()) throw Refuse.range("edges", e, finite = true, index = i, message = "edges[$i] must be finite, got $e")
            if (out.isNotEmpty() && f <= out.last()) {
                throw Refuse.relation("edges_increasing", listOf("edges"), "edges must be strictly increasing, got ${out.last()} then $f at index $i")
            }
            out.add(f)
        }
        return out
    }

    private fun edgeText(e: Double): String = if (e == Math.rint(e) && Math.abs(e) < 1e16) e.toLong().toString() else PyText.floatRepr(e)

    /** `"[a, b)"` per bucket, `"[a, b]"` for the last. */
    public fun labels(edges: List<Double>): List<String> {
        val k = edges.size - 1
        return (0 until k).map { i -> "[${edgeText(edges[i])}, ${edgeText(edges[i + 1])}${if (i == k - 1) "]" else ")"}" }
    }

    /**
     * [v] against edge [e] as Python compares them: a double by IEEE 754 (`<`, so `-0.0` equals `0.0`; never
     * `Double.compareTo`, which orders `-0.0` below `0.0`), an integer exactly: negative, zero or positive.
     */
    private fun cmp(v: Any, e: Double): Int = when (v) {
        is Double -> if (v < e) -1 else if (v > e) 1 else 0
        else -> BigDecimal(if (v is BigInteger) v else BigInteger.valueOf((v as Number).toLong())).compareTo(BigDecimal(e))
    }

    /** Python's `bucket_index`: the bucket of a real [value], refusing as it does. */
    public fun index(edges: List<Double>, value: Any?, clip: Boolean): Int {
        if (!isReal(value)) throw Refuse.valueType("float", value, "histogram values must be numbers, got ${Refuse.kind(value)}")
        val v: Any = if (value is Float) value.toDouble() else value!!
        if (v is Double && (v.isNaN() || v.isInfinite())) throw Refuse.range(null, v, min = edges[0], max = edges[edges.size - 1], finite = true, message = "histogram values must be finite, got $v")
        val k = edges.size - 1
        val below = cmp(v, edges[0]) < 0
        val above = cmp(v, edges[k]) > 0
        if (!below && !above) {
            var lo = 0
            var hi = edges.size // bisect_right
            while (lo < hi) {
                val mid = (lo + hi) ushr 1
                if (cmp(v, edges[mid]) < 0) hi = mid else lo = mid + 1
            }
            return minOf(lo - 1, k - 1)
        }
        if (clip) return if (below) 0 else k - 1
        throw Refuse.range(
            null, v, min = edges[0], max = edges[k],
            message = "value $v is outside the histogram's range [${edges[0]}, ${edges[k]}] (set clip in the params to clip it)",
        )
    }

}

/** What the histogram protocols' params share: `edges` (checked), `clip`, the bucket labels. */
public abstract class BucketParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    public val epsilon: Double = reader.double("epsilon")
    public val edges: List<Double> = Buckets.checkEdges(values["edges"])
    public val clip: Boolean = reader.bool("clip")
    public val numBuckets: Int get() = edges.size - 1
    override val domainSize: Int get() = numBuckets
    public val labels: List<String> by lazy { Buckets.labels(edges) }

    /** The bucket of a number. */
    public fun bucketOf(value: Any?): Int = Buckets.index(edges, value, clip)
}

/**
 * dBitFlip (`dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017, `ldp/encoders/histogram.py`): each report samples
 * `d` of the `k` buckets uniformly and sends, for each, a bit that is 1 with `p1 = realized(σ(−ε/2))` for the value's
 * bucket, `p0 = realized(σ(ε/2))` otherwise. Charged `max(ε_nominal, ε*)` (module docstring of the Python file).
 */
public class DBitFlipParams internal constructor(values: Map<String, Any?>) : BucketParams(values) {
    /** ε of one report, the bucket edges (strictly increasing: bucket `i` holds `[edges[i], edges[i + 1])`), the number `d` of buckets each report samples and whether a value outside the edges is clipped (else refused). */
    @JvmOverloads
    public constructor(epsilon: Double, edges: List<Double>, d: Long = 1, clip: Boolean = false) :
        this(linkedMapOf("epsilon" to epsilon, "edges" to edges, "d" to d, "clip" to clip))

    override val protocol: String get() = "dbitflip"
    public val d: Int = reader.int("d", dynamicMax = numBuckets.toLong())
    public val p1: Double = Threshold.realized(PyMath.logisticTail(-epsilon / 2))
    public val p0: Double = Threshold.realized(PyMath.logisticTail(epsilon / 2))

    init {
        if (p0 == 0.0 || p1 >= 1.0) {
            throw Refuse.relation("epsilon_too_large", listOf("epsilon"), "epsilon=$epsilon is too large for dBitFlip: 1/(e^(ε/2)+1) rounds to 0 at the client's resolution, so reports would not be private")
        }
        if (p1 <= p0) {
            throw Refuse.relation("epsilon_too_small", listOf("epsilon"), "epsilon=$epsilon is too small for dBitFlip: p0 and p1 are equal at the client's resolution, so reports would carry no information")
        }
        Checks.collectable(protocol, schema, 2L * numBuckets)
    }

    public val effectiveEpsilon: Double
        get() {
            val up = PyMath.log(p1 / p0)
            val down = PyMath.log((1.0 - p0) / (1.0 - p1))
            return if (d >= 2) up + down else maxOf(up, down)
        }
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(if (d >= 2) epsilon else epsilon / 2, effectiveEpsilon)) }
    override val schema: List<PayloadField> get() = sampledBitsSchema(numBuckets)

    /** Every `d`-subset of the buckets in lexicographic order, when there are at most 4,096 (else empty). */
    internal val subsets: List<BitMask> by lazy {
        var count = BigInteger.ONE
        for (i in 0 until d) count = count * BigInteger.valueOf((numBuckets - i).toLong()) / BigInteger.valueOf(i + 1L)
        if (count > BigInteger.valueOf(4096)) return@lazy emptyList()
        val out = ArrayList<BitMask>()
        val idx = IntArray(d) { it }
        while (true) {
            out.add(BitMask(numBuckets).also { m -> idx.forEach { m[it] = true } })
            var i = d - 1
            while (i >= 0 && idx[i] == numBuckets - d + i) i--
            if (i < 0) break
            idx[i]++
            for (j in i + 1 until d) idx[j] = idx[j - 1] + 1
        }
        out
    }

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): DBitFlipParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<DBitFlipParams> = Protocol("dbitflip", "DBitFlipParams", ::DBitFlipParams, { p, o -> DBitFlipEncoder(p, o) })

        internal fun sampledBitsSchema(k: Int) = listOf(PayloadField.bits("sampled", k), PayloadField.bits("bits", k))

        /** A uniform [d]-subset of `[0, k)` by Floyd's algorithm (all of them when `d = k`, nothing drawn). */
        internal fun floydSample(rng: RandomSource, k: Int, d: Int): BitMask =
            if (d == k) BitMask(k).also { m -> (0 until k).forEach { m[it] = true } } else SSParams.floyd(rng, k, d)
    }
}

/** The `dbitflip` encoder: values are numbers in the edges' range. */
public class DBitFlipEncoder(params: DBitFlipParams, options: EncoderOptions) : Encoder<DBitFlipParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.bucketOf(value)

    override fun draw(value: Int): Report {
        val k = params.numBuckets
        val d = params.d
        val sampled = when {
            d == k -> DBitFlipParams.floydSample(rng, k, d)
            params.subsets.isNotEmpty() -> params.subsets[rng.randbelow(params.subsets.size)]
            else -> SSParams.floyd(rng, k, d)
        }
        val own = BitMask.single(k, value)
        val bits: BitMask
        if (d > 8) {
            bits = rng.bernoulliBits(params.p0, k) and sampled andNot own
        } else {
            bits = BitMask(k)
            for (j in sampled.setBits()) if (j != value && rng.bernoulli(params.p0)) bits[j] = true
        }
        if (sampled[value] && rng.bernoulli(params.p1)) bits[value] = true
        return report("sampled" to sampled, "bits" to bits)
    }
}

/** GRR over the buckets of `edges` (`bucket-grr`). */
public class BucketGRRParams internal constructor(values: Map<String, Any?>) : BucketParams(values) {
    /** ε of one report, the bucket edges (strictly increasing: bucket `i` holds `[edges[i], edges[i + 1])`) and whether a value outside them is clipped (else refused). */
    @JvmOverloads
    public constructor(epsilon: Double, edges: List<Double>, clip: Boolean = false) :
        this(linkedMapOf("epsilon" to epsilon, "edges" to edges, "clip" to clip))

    override val protocol: String get() = "bucket-grr"
    public val grr: GRRParams = try { // GRR's own checks of epsilon against the number of buckets, in this protocol's names
        GRRParams.read(linkedMapOf("epsilon" to epsilon, "domain_size" to numBuckets.toLong(), "labels" to labels))
    } catch (e: IllegalArgumentException) {
        throw Refuse.restated(e, "", mapOf("domain_size" to "edges"))
    }

    init {
        Checks.collectable(protocol, schema, numBuckets.toLong())
    }

    override val privacyCost: PrivacyCost get() = grr.privacyCost
    override val schema: List<PayloadField> get() = grr.schema

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): BucketGRRParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<BucketGRRParams> = Protocol("bucket-grr", "BucketGRRParams", ::BucketGRRParams, { p, o -> BucketGRREncoder(p, o) })
    }
}

/** The `bucket-grr` encoder. */
public class BucketGRREncoder(params: BucketGRRParams, options: EncoderOptions) : Encoder<BucketGRRParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.bucketOf(value)
    override fun draw(value: Int): Report = report("index" to GRRParams.draw(rng, params.grr.p, params.numBuckets, value).toLong())
}

/** OUE over the buckets of `edges` (`bucket-oue`). */
public class BucketOUEParams internal constructor(values: Map<String, Any?>) : BucketParams(values) {
    /** ε of one report, the bucket edges (strictly increasing: bucket `i` holds `[edges[i], edges[i + 1])`) and whether a value outside them is clipped (else refused). */
    @JvmOverloads
    public constructor(epsilon: Double, edges: List<Double>, clip: Boolean = false) :
        this(linkedMapOf("epsilon" to epsilon, "edges" to edges, "clip" to clip))

    override val protocol: String get() = "bucket-oue"
    public val oue: OUEParams = OUEParams(linkedMapOf("epsilon" to epsilon, "domain_size" to numBuckets.toLong(), "labels" to labels))

    init {
        Checks.collectable(protocol, schema, numBuckets.toLong())
    }

    override val privacyCost: PrivacyCost get() = oue.privacyCost
    override val schema: List<PayloadField> get() = oue.schema

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): BucketOUEParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<BucketOUEParams> = Protocol("bucket-oue", "BucketOUEParams", ::BucketOUEParams, { p, o -> BucketOUEEncoder(p, o) })
    }
}

/** The `bucket-oue` encoder. */
public class BucketOUEEncoder(params: BucketOUEParams, options: EncoderOptions) : Encoder<BucketOUEParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.bucketOf(value)
    override fun draw(value: Int): Report = report("bits" to UnaryEncoding.draw(rng, params.oue.p, params.oue.q, params.numBuckets, value))
}

/**
 * Memoized dBitFlip (`memo-dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §3–4, `ldp/encoders/dbitflip_memo.py`):
 * a permanent sample of `d` buckets from the secret, a permanent response per value bucket, each report's bits flipped
 * afresh with `γ`. Charged one report's ε per report, capped at the memoized dBitFlip's ε per bucket.
 */
public class MemoDBitFlipParams internal constructor(values: Map<String, Any?>) : BucketParams(values) {
    /** ε of one report, the bucket edges (strictly increasing: bucket `i` holds `[edges[i], edges[i + 1])`), the number `d` of buckets sampled, whether a value outside the edges is clipped (else refused) and the per-report flip probability γ. */
    @JvmOverloads
    public constructor(epsilon: Double, edges: List<Double>, d: Long = 1, clip: Boolean = false, gamma: Double = 0.0) :
        this(linkedMapOf("epsilon" to epsilon, "edges" to edges, "d" to d, "clip" to clip, "gamma" to gamma))

    override val protocol: String get() = "memo-dbitflip"
    public val d: Int = reader.int("d", dynamicMax = numBuckets.toLong())

    /** The per-report flip probability γ, in `[0, 1/2)`. */
    public val gamma: Double = reader.double("gamma")

    /** The memoized responses' dBitFlip. */
    public val memo: DBitFlipParams = DBitFlipParams(linkedMapOf("epsilon" to epsilon, "edges" to edges, "d" to d.toLong(), "clip" to clip))

    init {
        Checks.collectable(protocol, schema, 2L * numBuckets)
    }

    public val gammaRealized: Double get() = Threshold.realized(gamma)
    public val p1: Double get() = gammaRealized + (1.0 - 2.0 * gammaRealized) * memo.p1
    public val p0: Double get() = gammaRealized + (1.0 - 2.0 * gammaRealized) * memo.p0
    public val effectiveEpsilon: Double
        get() {
            val up = PyMath.log(p1 / p0)
            val down = PyMath.log((1.0 - p0) / (1.0 - p1))
            return if (d >= 2) up + down else maxOf(up, down)
        }
    override val privacyCost: PrivacyCost by lazy { if (gammaRealized == 0.0) memo.privacyCost else PrivacyCost(effectiveEpsilon) }
    public val memoCap: PrivacyCost get() = memo.privacyCost
    override val schema: List<PayloadField> get() = DBitFlipParams.sampledBitsSchema(numBuckets)

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): MemoDBitFlipParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<MemoDBitFlipParams> =
            Protocol("memo-dbitflip", "MemoDBitFlipParams", ::MemoDBitFlipParams, { p, o -> MemoDBitFlipEncoder(p, o) }, needsSecret = true)
    }
}

/** The `memo-dbitflip` encoder. */
public class MemoDBitFlipEncoder(params: MemoDBitFlipParams, options: EncoderOptions) : MemoizedEncoder<MemoDBitFlipParams, Int>(params, options) {
    private var sampledMask: BitMask? = null

    /** The device's permanent sample of `d` buckets, from its secret. */
    public val sampled: BitMask
        get() = sampledMask ?: DBitFlipParams.floydSample(
            prrRng ?: KeyedRandomSource(secret, Bytes.concat(Bytes.ascii("ldp/dbitflip-memo/sample/v1\u0000"), fp)), params.numBuckets, params.d,
        ).also { sampledMask = it }

    override fun check(value: Any?): Int = params.bucketOf(value)

    override fun draw(value: Int): Report {
        val s = sampled
        val memoBits = memoized(value.toLong()) { src ->
            val b = BitMask(params.numBuckets)
            for (j in s.setBits()) if (src.bernoulli(if (j == value) params.memo.p1 else params.memo.p0)) b[j] = true
            b
        }
        val bits = memoBits.copy()
        val g = params.gammaRealized
        if (g > 0) for (j in s.setBits()) if (rng.bernoulli(g)) bits.flip(j)
        return report("sampled" to s, "bits" to bits)
    }

    override fun charge(value: Int): Charge = memoizedCharge(value.toLong(), params.privacyCost, params.memoCap)
}
