package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Refuse

/**
 * RAPPOR with unknown strings (`rappor-ngrams`; Fanti, Pihur & Erlingsson, PoPETs 2016,
 * `ldp/encoders/rappor_ngrams.py`): a string over `alphabet`, padded to `L` characters and cut into `P = L/n`
 * n-grams, is reported as three `"ldp"`-mode RAPPOR reports: the n-grams at a random pair of positions `(a, b)`
 * (`R(P(P−1)/2)`, lexicographic) and the full string, with secrets and cohorts derived from the metric secret.
 * Charged `ε₁(full) + 2ε₁(gram)`, memoized per PRR triple up to `ε∞(full) + 2ε∞(gram)`.
 */
public class RapporNgramsParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** The full string's RAPPOR (Bloom bits, hashes, cohorts, p, q, f), the n-grams' one (`gram_…`), the gram
     * length [n], the string length `L` in characters (a multiple of `n`), the [alphabet], the [pad] character (not
     * in it) and whether a longer string is cut to `L` (else refused). */
    @JvmOverloads
    public constructor(
        numBloombits: Long, numHashes: Long, numCohorts: Long, p: Double, q: Double, f: Double,
        gramBloombits: Long, gramHashes: Long, gramCohorts: Long, gramP: Double, gramQ: Double, gramF: Double,
        n: Long = 2, maxLength: Long = 6, alphabet: String = "abcdefghijklmnopqrstuvwxyz", pad: String = "_", truncate: Boolean = false,
    ) : this(
        linkedMapOf(
            "num_bloombits" to numBloombits, "num_hashes" to numHashes, "num_cohorts" to numCohorts, "p" to p, "q" to q, "f" to f,
            "gram_bloombits" to gramBloombits, "gram_hashes" to gramHashes, "gram_cohorts" to gramCohorts, "gram_p" to gramP,
            "gram_q" to gramQ, "gram_f" to gramF, "n" to n, "max_length" to maxLength, "alphabet" to alphabet, "pad" to pad,
            "truncate" to truncate,
        ),
    )

    override val protocol: String get() = "rappor-ngrams"
    public val n: Int = reader.int("n")
    public val maxLength: Int = reader.int("max_length")
    public val alphabet: IntArray
    public val pad: Int
    public val truncate: Boolean
    public val full: RapporParams
    public val gram: RapporParams

    init {
        if (maxLength % n != 0) throw Refuse.relation("multiple_of_n", listOf("max_length", "n"), "max_length (L=$maxLength) must be a multiple of n=$n")
        val positions = (maxLength / n).toLong()
        if (positions !in 2..MAX_POSITIONS) {
            val message = "positions (L/n) must be in [2, $MAX_POSITIONS], got $positions"
            if (positions < 2) throw Refuse.relation("two_positions", listOf("max_length", "n"), message)
            throw Refuse.limit("positions", positions, MAX_POSITIONS, message)
        }
        val a = values["alphabet"]
        if (a !is String) throw Refuse.paramType("alphabet", "string", a, "alphabet must be a non-empty string, got ${Refuse.kind(a)}", valueError = true)
        if (a.isEmpty()) throw Refuse.paramLength("alphabet", 0, 1L, message = "alphabet must be a non-empty string")
        alphabet = a.codePoints().toArray()
        if (alphabet.toSet().size != alphabet.size) throw Refuse.relation("distinct", listOf("alphabet"), "alphabet must not repeat a character: ${Refuse.quote(a)}")
        val p = values["pad"]
        if (p !is String) throw Refuse.paramType("pad", "string", p, "pad must be one character, got ${Refuse.kind(p)}", valueError = true)
        val padLength = p.codePointCount(0, p.length).toLong()
        if (padLength != 1L) throw Refuse.paramLength("pad", padLength, 1L, 1L, "pad must be one character, got ${Refuse.quote(p)}")
        pad = p.codePointAt(0)
        if (pad in alphabet) throw Refuse.relation("pad_not_in_alphabet", listOf("pad", "alphabet"), "pad ${Refuse.quote(p)} must not be a character of the alphabet")
        truncate = reader.bool("truncate")
        full = RapporParams(linkedMapOf("num_bloombits" to values["num_bloombits"], "num_hashes" to values["num_hashes"], "num_cohorts" to values["num_cohorts"],
            "p" to values["p"], "q" to values["q"], "f" to values["f"], "mode" to "ldp"))
        gram = gramNames {
            RapporParams(linkedMapOf("num_bloombits" to values["gram_bloombits"], "num_hashes" to values["gram_hashes"], "num_cohorts" to values["gram_cohorts"],
                "p" to values["gram_p"], "q" to values["gram_q"], "f" to values["gram_f"], "mode" to "ldp"))
        }
        full.privacyCost // both RAPPORs must be private (finite ε₁)
        gramNames { gram.privacyCost }
        Checks.collectable(protocol, schema, full.numCohorts.toLong() * (full.numBloombits + 1))
    }

    /** [block], a refusal of the n-gram RAPPOR's parameters in their names here (`gram_p`, …). */
    private inline fun <T> gramNames(block: () -> T): T = try {
        block()
    } catch (e: IllegalArgumentException) {
        throw Refuse.restated(e, "", GRAM_NAMES)
    }

    public val positions: Int get() = maxLength / n
    public val pairs: Int get() = positions * (positions - 1) / 2
    override val domainSize: Int? get() = null
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(full.privacyCost.epsilon + 2 * gram.privacyCost.epsilon) }
    override val schema: List<PayloadField>
        get() = listOf(
            PayloadField.uint("cohort", (values["num_cohorts"] as Long)), PayloadField.bits("bits", (values["num_bloombits"] as Long).toInt()),
            PayloadField.uint("gram_cohort", values["gram_cohorts"] as Long), PayloadField.uint("pos_a", positions.toLong()),
            PayloadField.uint("pos_b", positions.toLong()), PayloadField.bits("gram_a", (values["gram_bloombits"] as Long).toInt()),
            PayloadField.bits("gram_b", (values["gram_bloombits"] as Long).toInt()),
        )

    /** The value checked and padded with `pad` to `L` characters (code points). */
    public fun padded(value: Any?): IntArray {
        if (value !is String && value !is ByteArray) throw Refuse.valueType("string_or_bytes", value, "$protocol values must be strings or bytes, got ${Refuse.kind(value)}")
        val text = if (value is ByteArray) {
            try {
                Charsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(value)).toString()
            } catch (e: java.nio.charset.CharacterCodingException) {
                throw Refuse.notEncodable("utf-8", "$protocol values given as bytes must be UTF-8")
            }
        } else {
            value as String
        }
        if (text.isEmpty()) throw Refuse.emptyValue("$protocol values must be non-empty strings")
        var cps = text.codePoints().toArray()
        val bad = cps.filter { it !in alphabet }.toSortedSet()
        if (bad.isNotEmpty()) throw Refuse.notInAlphabet(String(Character.toChars(bad.first())), "$protocol value has characters outside the alphabet: ${Refuse.quote(bad.joinToString("") { String(Character.toChars(it)) })}")
        if (cps.size > maxLength) {
            if (!truncate) throw Refuse.tooLong(cps.size.toLong(), maxLength.toLong(), "characters", "$protocol value of ${cps.size} characters is over max_length=$maxLength (set truncate in the params to cut it)")
            cps = cps.copyOf(maxLength)
        }
        return IntArray(maxLength) { if (it < cps.size) cps[it] else pad }
    }

    public companion object {
        public const val MAX_POSITIONS: Long = 64
        private val GRAM_NAMES = mapOf(
            "num_bloombits" to "gram_bloombits", "num_hashes" to "gram_hashes", "num_cohorts" to "gram_cohorts",
            "p" to "gram_p", "q" to "gram_q", "f" to "gram_f",
        )
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): RapporNgramsParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<RapporNgramsParams> =
            Protocol("rappor-ngrams", "RapporNgramsParams", ::RapporNgramsParams, { p, o -> RapporNgramsEncoder(p, o) }, needsSecret = true)
    }
}

/** The `rappor-ngrams` encoder. */
public class RapporNgramsEncoder(params: RapporNgramsParams, options: EncoderOptions) :
    Encoder<RapporNgramsParams, RapporNgramsEncoder.Prepared>(params, options) {
    /** A checked value: the full string's RAPPOR preparation, its n-grams and the drawn pair. */
    public class Prepared internal constructor(internal val full: io.github.ldptelemetry.client.protocols.Prepared, internal val grams: List<String>, internal val a: Int, internal val b: Int)

    private val secret: ByteArray = (options.secret ?: options.prrRng?.let { "audit".toByteArray() }
        ?: throw IllegalArgumentException("rappor-ngrams needs the metric secret (EncoderOptions.secret)")).copyOf()
    private val fullEncoder: Encoder<RapporParams, *>
    private val gramEncoder: Encoder<RapporParams, *>

    init {
        val prr = options.prrRng
        val cohort = prr?.randbelow(params.full.numCohorts) ?: derivedCohort("cohort", params.full.numCohorts)
        val gramCohort = prr?.randbelow(params.gram.numCohorts) ?: derivedCohort("gram_cohort", params.gram.numCohorts)
        fullEncoder = RapporEncoder(params.full, EncoderOptions(rng = rng, secret = derived("full"), cohort = cohort, prrRng = prr))
        gramEncoder = RapporEncoder(params.gram, EncoderOptions(rng = rng, secret = derived("gram"), cohort = gramCohort, prrRng = prr))
    }

    private fun derived(label: String): ByteArray = Bytes.hmacSha256(secret, SUB_SECRET, Bytes.ascii(label))

    private fun derivedCohort(label: String, m: Int): Int =
        Bytes.unsigned(java.nio.ByteBuffer.wrap(derived(label), 0, 8).long).mod(java.math.BigInteger.valueOf(m.toLong())).toInt()

    override fun check(value: Any?): Prepared {
        val padded = params.padded(value)
        var end = padded.size
        while (end > 0 && padded[end - 1] == params.pad) end--
        val text = String(padded, 0, end)
        val full = fullEncoder.prepare(text)
        var index = rng.randbelow(params.pairs)
        var a = 0
        while (index >= params.positions - 1 - a) {
            index -= params.positions - 1 - a
            a++
        }
        val n = params.n
        val grams = (0 until params.positions).map { String(padded, it * n, n) }
        return Prepared(full, grams, a, a + 1 + index)
    }

    private fun gramPrepared(v: Prepared, pos: Int) = gramEncoder.prepare("$pos|${v.grams[pos]}")

    override fun draw(value: Prepared): Report {
        val ga = gramPrepared(value, value.a).randomize()["bits"]!!
        val gb = gramPrepared(value, value.b).randomize()["bits"]!!
        val full = value.full.randomize()
        val gramCohort = (gramEncoder as RapporEncoder).cohort.toLong()
        return report(
            "cohort" to full["cohort"]!!, "bits" to full["bits"]!!, "gram_cohort" to gramCohort,
            "pos_a" to value.a.toLong(), "pos_b" to value.b.toLong(), "gram_a" to ga, "gram_b" to gb,
        )
    }

    override fun charge(value: Prepared): Charge {
        val parts = listOf(value.full.charge, gramPrepared(value, value.a).charge, gramPrepared(value, value.b).charge)
        if (!parts.all { it is Charge.Memoized }) return Charge.Plain(params.privacyCost)
        val keys = Bytes.concat(*parts.map { (it as Charge.Memoized).key }.toTypedArray())
        val cap = PrivacyCost(params.full.epsilonInf + 2 * params.gram.epsilonInf)
        val one = params.privacyCost
        return Charge.Memoized(Bytes.sha256(SUB_SECRET, Bytes.ascii("triple"), keys), one, one, cap)
    }

    private companion object {
        val SUB_SECRET = Bytes.ascii("ldp/rappor-ngrams/v1/")
    }
}
