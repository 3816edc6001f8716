package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.random.KeyedRandomSource
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold

/**
 * RAPPOR (`rappor`; Erlingsson, Pihur & Korolova, CCS 2014, `ldp/encoders/rappor.py`): a string's `h` Bloom bits in
 * `k` (within its cohort), a permanent randomized response (PRR) memoized per value from the metric secret, and an
 * instantaneous one (IRR) per report. `"ldp"` mode hashes with MurmurHash3 and draws the PRR from the keyed stream;
 * `"google"` mode is Google's client: MD5 Bloom bits and the PRR from one HMAC-SHA256 of the Bloom filter
 * (docs/conformance.md `rappor`). Charged ε₁ per report, memoized up to ε∞ per value.
 */
public class RapporParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** The Bloom filter's bits `k`, the hash functions `h` (at most `k`), the cohorts `m`, the IRR's
     * probabilities [p] (of a 0) and [q] (of a 1), the PRR's [f], and the [mode], `"ldp"` or `"google"`. */
    @JvmOverloads
    public constructor(numBloombits: Long, numHashes: Long, numCohorts: Long, p: Double, q: Double, f: Double, mode: String = "ldp") : this(
        linkedMapOf(
            "num_bloombits" to numBloombits, "num_hashes" to numHashes, "num_cohorts" to numCohorts, "p" to p, "q" to q, "f" to f,
            "mode" to mode,
        ),
    )

    override val protocol: String get() = "rappor"
    public val numBloombits: Int = reader.long("num_bloombits").let { minOf(it, Int.MAX_VALUE.toLong()).toInt() }
    public val numHashes: Int = reader.long("num_hashes").let { minOf(it, Int.MAX_VALUE.toLong()).toInt() }
    public val numCohorts: Int = reader.int("num_cohorts")
    public val p: Double
    public val q: Double
    public val f: Double
    public val mode: String

    init {
        val k = values["num_bloombits"] as Long
        val h = values["num_hashes"] as Long
        if (h > k) throw Refuse.relation("h<=k", listOf("num_hashes", "num_bloombits"), "num_hashes (h=$h) must be <= num_bloombits (k=$k)")
        p = Checks.resolvable(reader.double("p"), "p")
        q = Checks.resolvable(reader.double("q"), "q")
        f = Checks.resolvable(reader.double("f"), "f")
        if (!(p < q)) {
            throw Refuse.relation("p<q", listOf("p", "q"), "RAPPOR needs 0 <= p < q <= 1 (a 1 in the PRR must be reported more often), got p=$p, q=$q")
        }
        mode = reader.choice("mode")
        Checks.collectable(protocol, schema, numCohorts.toLong() * (k + 1))
    }

    override val domainSize: Int? get() = null
    override val schema: List<PayloadField>
        get() = listOf(PayloadField.uint("cohort", (values["num_cohorts"] as Long)), PayloadField.bits("bits", minOf(values["num_bloombits"] as Long, Int.MAX_VALUE.toLong()).toInt()))

    /** The PRR's realized f: Google's `ceil(128f)/128`, else `realized(f)`. */
    public val fEffective: Double get() = if (mode == "google") Math.ceil(f * 128) / 128 else Threshold.realized(f)
    public val qStar: Double get() = 0.5 * fEffective * (Threshold.realized(p) + Threshold.realized(q)) + (1.0 - fEffective) * Threshold.realized(q)
    public val pStar: Double get() = 0.5 * fEffective * (Threshold.realized(p) + Threshold.realized(q)) + (1.0 - fEffective) * Threshold.realized(p)

    /** ε₁ of one report: `h·|ln(q*(1 − p*)/(p*(1 − q*)))|`. */
    public val epsilonOne: Double
        get() {
            val ps = pStar
            val qs = qStar
            if (ps <= 0.0 || qs >= 1.0) return Double.POSITIVE_INFINITY
            return numHashes * Math.abs(PyMath.log((qs * (1.0 - ps)) / (ps * (1.0 - qs))))
        }

    /** ε∞ of the PRR (every report of one value): `2h·ln((1 − f/2)/(f/2))`. */
    public val epsilonInf: Double get() = fEffective.let { if (it == 0.0) Double.POSITIVE_INFINITY else 2 * numHashes * PyMath.log((1.0 - it / 2) / (it / 2)) }

    override val privacyCost: PrivacyCost by lazy {
        val e = epsilonOne
        if (e.isInfinite()) throw Refuse.relation("finite_epsilon", listOf("p", "q", "f"), "these RAPPOR parameters give no finite ε₁ (p* = 0 or q* = 1): reports are not private")
        PrivacyCost(e)
    }

    /** Google's client: `k <= 32` and `h <= 16`. */
    internal fun checkGoogleClient() {
        if (mode == "google" && (numBloombits > 32 || numHashes > 16)) {
            throw Refuse.relation(
                "google_client", listOf("num_bloombits", "num_hashes", "mode"),
                "Google's client needs k <= 32 (PRR message is a 32-bit integer) and h <= 16 (one MD5 byte per hash), " +
                    "got k=$numBloombits, h=$numHashes; these parameters can decode Google's files but not encode",
            )
        }
    }

    /** The Bloom filter of a value's bytes in [cohort]. */
    public fun bloom(valueBytes: ByteArray, cohort: Int): BitMask {
        val data = Bytes.concat(Bytes.uint32BE(cohort.toLong()), valueBytes)
        val bloom = BitMask(numBloombits)
        if (mode == "google") {
            val digest = Bytes.md5(data)
            for (j in 0 until numHashes) bloom[(digest[j].toInt() and 0xff) % numBloombits] = true
        } else {
            for (j in 0 until numHashes) bloom[(Bytes.murmur3(data, j.toLong()) % numBloombits).toInt()] = true
        }
        return bloom
    }

    public companion object {
        public const val MAX_COHORTS: Long = 1L shl 16
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): RapporParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<RapporParams> = Protocol(
            "rappor", "RapporParams", ::RapporParams, { p, o -> RapporEncoder(p, o) }, needsSecret = true, cohorts = { it.numCohorts },
        )
    }
}

/**
 * The `rappor` encoder. Values are strings (UTF-8) or bytes. The device's cohort is [EncoderOptions.cohort] (a
 * client draws it once and keeps it), else drawn here. With [EncoderOptions.prrRng] (audits, `"ldp"` mode only)
 * the PRR is drawn from it on every report (a fresh device per audit path).
 */
public class RapporEncoder(params: RapporParams, options: EncoderOptions) : Encoder<RapporParams, RapporEncoder.Prepared>(params, options) {
    /** A checked value: its Bloom filter, its PRR message and (once drawn) its PRR and memo key. */
    public class Prepared internal constructor(internal val bloom: BitMask, internal val message: ByteArray) {
        internal var prr: BitMask? = null
        internal var memoKey: ByteArray? = null
    }

    private val secret: ByteArray
    public val cohort: Int
    private val prrRng: RandomSource? = options.prrRng
    private val fp = Bytes.ascii(params.fingerprint)
    private val memo = object : LinkedHashMap<String, Prepared>(64, 0.75f, true) {
        override fun removeEldestEntry(eldest: MutableMap.MutableEntry<String, Prepared>?): Boolean = size > MEMO_ENTRIES
    }

    init {
        params.checkGoogleClient()
        secret = (options.secret ?: if (prrRng != null) "audit".toByteArray() else null)?.copyOf()
            ?: throw IllegalArgumentException("rappor needs the metric secret (EncoderOptions.secret): its PRR derives from it")
        cohort = options.cohort?.let { Checks.int(it.toLong(), "cohort", 0, params.numCohorts - 1L).toInt() } ?: rng.randbelow(params.numCohorts)
        if (prrRng != null && params.mode == "google") throw IllegalArgumentException("prr_rng replaces the PRR derivation of 'ldp' mode only")
    }

    override fun check(value: Any?): Prepared {
        val memoable = value is String && value.length <= MEMO_MAX_VALUE
        if (memoable) memo[value as String]?.let { return it }
        if (value !is String && value !is ByteArray) throw Refuse.valueType("string_or_bytes", value, "RAPPOR values must be strings or bytes, got ${Refuse.kind(value)}")
        val bytes = Bytes.valueBytes(value)
        val bloom = params.bloom(bytes, cohort)
        val message = if (params.mode == "google") {
            var b = 0L
            for (i in bloom.setBits()) b = b or (1L shl i)
            Bytes.uint32BE(b)
        } else {
            Bytes.concat(PRR_DOMAIN, fp, Bytes.uint32BE(cohort.toLong()), bytes)
        }
        val prepared = Prepared(bloom, message)
        if (memoable) memo[value as String] = prepared
        return prepared
    }

    /** The PRR of a checked value: `(B AND NOT fmask) OR (uniform AND fmask)`. */
    private fun permanentResponse(v: Prepared): BitMask {
        v.prr?.let { if (prrRng == null) return it }
        val k = params.numBloombits
        val uniform: BitMask
        val fmask: BitMask
        if (params.mode == "google") {
            val digest = Bytes.hmacSha256(secret, v.message)
            uniform = BitMask(k)
            fmask = BitMask(k)
            val threshold = params.f * 128
            for (i in 0 until k) {
                val byte = digest[i].toInt() and 0xff
                if (byte and 1 != 0) uniform[i] = true
                if ((byte shr 1) < threshold) fmask[i] = true
            }
        } else {
            val src = prrRng ?: KeyedRandomSource(secret, v.message)
            fmask = src.bernoulliBits(params.f, k)
            uniform = src.bernoulliBits(0.5, k)
        }
        val prr = (v.bloom andNot fmask) or (uniform and fmask)
        if (prrRng == null) v.prr = prr
        return prr
    }

    override fun draw(value: Prepared): Report {
        val prr = permanentResponse(value)
        val pmask = rng.bernoulliBits(params.p, params.numBloombits)
        val qmask = rng.bernoulliBits(params.q, params.numBloombits)
        return report("cohort" to cohort.toLong(), "bits" to ((pmask andNot prr) or (qmask and prr)))
    }

    override fun charge(value: Prepared): Charge {
        val one = params.privacyCost
        val inf = params.epsilonInf
        if (inf.isInfinite()) return Charge.Plain(one)
        val key = value.memoKey ?: Bytes.hmacSha256(secret, MEMO_DOMAIN, value.message).also { value.memoKey = it }
        return Charge.Memoized(key, one, one, PrivacyCost(inf))
    }

    private companion object {
        const val MEMO_ENTRIES = 256
        const val MEMO_MAX_VALUE = 512
        val PRR_DOMAIN = Bytes.ascii("ldp/rappor/prr/v1\u0000")
        val MEMO_DOMAIN = Bytes.ascii("ldp/rappor/memo/v1\u0000")
    }
}
