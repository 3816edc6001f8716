package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Refuse

/**
 * Apple's Sequence Fragment Puzzle (`sfp`; "Learning with Privacy at Scale", 2017, `ldp/encoders/sfp.py`): a word
 * over `alphabet` (other characters replaced by `replacement` or refused; cut to `length` when `truncate`) is
 * reported as a CMS/HCMS report of the whole word and one of the fragment record `h ‖ fragment` at a random
 * position `R(L/r)`, `h` a `hash_bits`-bit hash of the word. Charged the sum of the two sketches' ε.
 */
public class SfpParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** The ε of the word's and of the fragment's sketch, the [alphabet] of the words and their [pad] (a symbol not
     * in it), the word [length] `L` and [fragmentLength] `r` in symbols, the bits of the word's hash each fragment
     * carries, each sketch's kind (`"cms"` or `"hcms"`), rows and width, the first hash seed, the symbol a
     * character outside the alphabet becomes (null: such words are refused) and whether a longer word is cut. */
    @JvmOverloads
    public constructor(
        wordEpsilon: Double, fragmentEpsilon: Double, alphabet: String = "abcdefghijklmnopqrstuvwxyz", pad: String = "_",
        length: Long = 10, fragmentLength: Long = 2, hashBits: Long = 8, wordSketch: String = "cms", wordNumHashes: Long = 64,
        wordWidth: Long = 1024, fragmentSketch: String = "cms", fragmentNumHashes: Long = 64, fragmentWidth: Long = 512,
        hashSeed: Long = 0, replacement: String? = null, truncate: Boolean = false,
    ) : this(
        linkedMapOf(
            "word_epsilon" to wordEpsilon, "fragment_epsilon" to fragmentEpsilon, "alphabet" to alphabet, "pad" to pad,
            "length" to length, "fragment_length" to fragmentLength, "hash_bits" to hashBits, "word_sketch" to wordSketch,
            "word_num_hashes" to wordNumHashes, "word_width" to wordWidth, "fragment_sketch" to fragmentSketch,
            "fragment_num_hashes" to fragmentNumHashes, "fragment_width" to fragmentWidth, "hash_seed" to hashSeed,
            "replacement" to replacement, "truncate" to truncate,
        ),
    )

    override val protocol: String get() = "sfp"
    public val wordEpsilon: Double = reader.double("word_epsilon")
    public val fragmentEpsilon: Double = reader.double("fragment_epsilon")

    /** The alphabet's symbols then the pad, as code points (a symbol's index is its position here). */
    public val symbols: IntArray
    public val pad: Int
    public val length: Int
    public val fragmentLength: Int
    public val hashBits: Int
    public val hashSeed: Long
    public val replacement: Int?
    public val truncate: Boolean
    public val wordParams: SketchParams
    public val fragmentParams: SketchParams
    private val index = HashMap<Int, Int>()

    init {
        val alphabet = values["alphabet"]
        symbolsOf(alphabet, "alphabet", 1, null, "alphabet must be a non-empty string of symbols")
        alphabet as String
        val cps = alphabet.codePoints().toArray()
        if (cps.toSet().size != cps.size) throw Refuse.relation("distinct", listOf("alphabet"), "alphabet has repeated symbols: ${Refuse.quote(alphabet)}")
        val padValue = values["pad"]
        val padMessage = "pad must be one symbol that is not in the alphabet, got ${Refuse.show(padValue)}"
        symbolsOf(padValue, "pad", 1, 1, padMessage)
        padValue as String
        if (padValue.codePointAt(0) in cps) throw Refuse.relation("pad_not_in_alphabet", listOf("pad", "alphabet"), padMessage)
        pad = padValue.codePointAt(0)
        if (cps.size > (1 shl 16) - 2) {
            throw Refuse.paramLength("alphabet", cps.size.toLong(), 1L, (1L shl 16) - 2, "alphabet size must be in [1, ${(1 shl 16) - 2}], got ${cps.size}")
        }
        length = reader.int("length")
        fragmentLength = reader.int("fragment_length", dynamicMax = length.toLong())
        if (length % fragmentLength != 0) {
            throw Refuse.relation("multiple_of_fragment_length", listOf("length", "fragment_length"), "length L=$length must be a multiple of fragment_length r=$fragmentLength (fragments are the L/r non-overlapping substrings)")
        }
        hashBits = reader.int("hash_bits")
        val wordSketch = reader.choice("word_sketch")
        val fragmentSketch = reader.choice("fragment_sketch")
        hashSeed = reader.long("hash_seed")
        val wk = reader.long("word_num_hashes")
        val fk = reader.long("fragment_num_hashes")
        if (hashSeed + wk + fk > 0xffffffffL) throw Refuse.relation("hash_seed_room", listOf("hash_seed", "word_num_hashes", "fragment_num_hashes"), "hash_seed leaves no room for the sketches' hash functions below 2^32")
        val rep = values["replacement"]
        if (rep != null) {
            val message = "replacement must be one symbol of the alphabet (or null), got ${Refuse.show(rep)}"
            symbolsOf(rep, "replacement", 1, 1, message)
            if ((rep as String).codePointAt(0) !in cps) throw Refuse.relation("replacement_in_alphabet", listOf("replacement", "alphabet"), message)
        }
        replacement = (rep as String?)?.codePointAt(0)
        truncate = reader.bool("truncate")
        symbols = cps + pad
        symbols.forEachIndexed { i, c -> index[c] = i }
        wordParams = sketch("word", wordSketch, wordEpsilon, wk, values["word_width"], hashSeed)
        fragmentParams = sketch("fragment", fragmentSketch, fragmentEpsilon, fk, values["fragment_width"], hashSeed + wk)
        Checks.collectable(protocol, schema, cells(wordParams) + numPositions * cells(fragmentParams))
    }

    private fun sketch(part: String, kind: String, eps: Double, k: Long, width: Any?, seed: Long): SketchParams {
        val v = linkedMapOf("epsilon" to eps, "num_hashes" to k, "width" to width, "hash_seed" to seed)
        return try {
            if (kind == "cms") CmsParams(v) else HcmsParams(v)
        } catch (e: IllegalArgumentException) {
            throw Refuse.restated(e, "$part sketch: ", listOf("epsilon", "num_hashes", "width").associateWith { "${part}_$it" })
        }
    }

    /** Python's `_check_symbols`: [value] a string of [low] to [high] symbols (code points), else a refusal with
     * [message] (a `ValueError` also for the wrong type, as Python's). */
    private fun symbolsOf(value: Any?, param: String, low: Long, high: Long?, message: String) {
        if (value !is String) throw Refuse.paramType(param, "string", value, message, valueError = true)
        val n = value.codePointCount(0, value.length).toLong()
        if (n < low || (high != null && n > high)) throw Refuse.paramLength(param, n, low, high, message)
    }

    private fun cells(s: SketchParams) = s.numHashes.toLong() * (s.width + 1)

    override val domainSize: Int? get() = null
    public val numPositions: Int get() = length / fragmentLength

    /** Seed of the word hash `h` (after both sketches' seeds). */
    public val wordHashSeed: Long get() = hashSeed + wordParams.numHashes + fragmentParams.numHashes
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(wordParams.privacyCost.epsilon + fragmentParams.privacyCost.epsilon) }
    override val schema: List<PayloadField>
        get() = listOf(PayloadField.uint("position", numPositions.toLong())) +
            wordParams.schema.map { it.copy(name = "word_" + it.name) } + fragmentParams.schema.map { it.copy(name = "fragment_" + it.name) }

    /** A word as the client encodes it: the word (replaced, truncated), padded to L symbols, and its hash. */
    public class PreparedWord(public val word: String, public val padded: IntArray, public val hash: Long, public val data: ByteArray)

    /** Python's `prepare_word`. */
    public fun prepareWord(value: Any?): PreparedWord {
        if (value !is String) throw Refuse.valueType("string", value, "SFP words must be strings, got ${Refuse.kind(value)}")
        if (value.isEmpty()) throw Refuse.emptyValue("SFP cannot encode the empty string")
        var cps = value.codePoints().toArray()
        val ok = { c: Int -> c in index && c != pad }
        if (cps.any { !ok(it) }) {
            val r = replacement ?: run {
                val bad = String(Character.toChars(cps.first { !ok(it) }))
                throw Refuse.notInAlphabet(
                    bad, "character ${Refuse.quote(bad)} of ${Refuse.quote(value)} is not in the alphabet (set replacement to replace such characters)",
                )
            }
            cps = cps.map { if (ok(it)) it else r }.toIntArray()
        }
        val word0 = String(cps, 0, cps.size)
        if (cps.size > length) {
            if (!truncate) throw Refuse.tooLong(cps.size.toLong(), length.toLong(), "characters", "${Refuse.quote(word0)} is longer than length=$length (set truncate in the params to cut it)")
            cps = cps.copyOf(length)
        }
        val word = String(cps, 0, cps.size)
        val padded = IntArray(length) { if (it < cps.size) cps[it] else pad }
        val data = Bytes.utf8(word)
        return PreparedWord(word, padded, Bytes.murmur3(data, wordHashSeed) % (1L shl hashBits), data)
    }

    /** `h ‖ fragment`: `h` big-endian, then each symbol's index (1 or 2 bytes each). */
    public fun fragmentRecord(word: PreparedWord, position: Int): ByteArray {
        val hashBytes = (hashBits + 7) / 8
        val symbolBytes = if (symbols.size <= 256) 1 else 2
        val out = ByteArray(hashBytes + fragmentLength * symbolBytes)
        for (i in 0 until hashBytes) out[i] = (word.hash ushr (8 * (hashBytes - 1 - i))).toByte()
        for (s in 0 until fragmentLength) {
            val idx = index[word.padded[position * fragmentLength + s]]!!
            val at = hashBytes + s * symbolBytes
            if (symbolBytes == 2) {
                out[at] = (idx ushr 8).toByte()
                out[at + 1] = idx.toByte()
            } else {
                out[at] = idx.toByte()
            }
        }
        return out
    }

    public companion object {
        public val PROTOCOL: Protocol<SfpParams> = Protocol("sfp", "SfpParams", ::SfpParams, { p, o -> SfpEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): SfpParams = PROTOCOL.params(values)
    }
}

/** The `sfp` encoder: values are strings. */
public class SfpEncoder(params: SfpParams, options: EncoderOptions) : Encoder<SfpParams, SfpParams.PreparedWord>(params, options) {
    override fun check(value: Any?): SfpParams.PreparedWord = params.prepareWord(value)

    private fun sketch(s: SketchParams, data: ByteArray, prefix: String): List<Pair<String, Any>> = when (s) {
        is CmsParams -> s.draw(rng, data).let { (j, bits) -> listOf("${prefix}hash" to j, "${prefix}bits" to bits) }
        is HcmsParams -> s.draw(rng, data).let { r -> listOf("${prefix}hash" to r[0], "${prefix}row" to r[1], "${prefix}bit" to r[2]) }
        else -> error("unreachable")
    }

    override fun draw(value: SfpParams.PreparedWord): Report {
        val position = rng.randbelow(params.numPositions)
        val word = sketch(params.wordParams, value.data, "word_")
        val fragment = sketch(params.fragmentParams, params.fragmentRecord(value, position), "fragment_")
        return report(listOf<Pair<String, Any>>("position" to position.toLong()) + word + fragment)
    }
}
