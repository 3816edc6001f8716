package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Refuse

/**
 * The spec's `poplar1` metric kind (issue 89, item 3; docs/kotlin-client.md, "Strings over two aggregators"): strings
 * found by the heavy-hitters walk over two aggregators (Poplar1, VDAF draft 18: Boneh, Boyle, Corrigan-Gibbs, Gilboa
 * & Ishai, "Lightweight techniques for private heavy hitters", IEEE S&P 2021). The device shares its exact string,
 * so it has no local randomizer and no local cost ([privacyCost] is 0): a report is charged the spec's
 * `budget.per_report`, and the metric's `trust` must be `two-aggregator`
 * ([io.github.ldptelemetry.client.spec.CollectionSpec] refuses any other).
 *
 * [bits]: the strings' length in bits, a multiple of 8 in [8, 256] (strings of `bits / 8` bytes); [threshold]: the
 * collector's T (a prefix is kept when its noised count is >= T), >= 1; [maxCandidates]: the most candidate prefixes
 * a level of the walk carries, in [2, 2^20]. Not one of [Protocols] (no conformance vectors of reports, no audit):
 * the spec and the client find it by its name.
 */
public class Poplar1Params internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** The three parameters, checked as the Python spec checks them. */
    public constructor(bits: Int, threshold: Long, maxCandidates: Long) :
        this(linkedMapOf("bits" to bits.toLong(), "threshold" to threshold, "max_candidates" to maxCandidates))

    override val protocol: String get() = NAME

    /** The strings' length in bits (a multiple of 8). */
    public val bits: Int = checkBits(values["bits"])

    /** The collector's threshold T. */
    public val threshold: Long = Checks.int(values["threshold"], "threshold", 1)

    /** The most candidate prefixes one level of the walk carries. */
    public val maxCandidates: Long = Checks.int(values["max_candidates"], "max_candidates", 2, MAX_CANDIDATES)

    /** Bytes of one string: `bits / 8`. */
    public val length: Int get() = bits / 8

    /** Nothing is randomized on the device: the report's charge is the spec's `per_report`. */
    override val privacyCost: PrivacyCost get() = PrivacyCost.ZERO

    /** No ingest-service payload: a value goes to the two aggregators only. */
    override val schema: List<PayloadField> get() = emptyList()

    /**
     * The measurement of a record's [value]: its UTF-8 bytes (a [ByteArray] as it is), at most [length] bytes and
     * not ending in a 0x00 byte, right-padded with 0x00 to [length] bytes; bit i of the string is bit `7 - i % 8` of
     * byte `i / 8` (the most significant first: Python's `ldp.prio.poplar1.bits_of`). A trailing NUL is refused
     * because the padding would make `"ab"` and `"ab\u0000"` one string. Anything but a string or bytes is
     * `value_type`; a string with a lone surrogate `not_encodable`; too long `value_too_long`; a trailing NUL
     * `not_in_alphabet`: checked in that order, as Python's `Poplar1Params.measurement_bytes`.
     */
    public fun measurement(value: Any?): ByteArray {
        if (value !is String && value !is ByteArray) {
            throw Refuse.valueType("string_or_bytes", value, "poplar1 values must be strings or bytes, got ${Refuse.kind(value)}")
        }
        val raw = Bytes.valueBytes(value)
        if (raw.size > length) {
            throw Refuse.tooLong(raw.size.toLong(), length.toLong(), "bytes", "poplar1 value of ${raw.size} bytes is over the metric's $length (bits=$bits)")
        }
        if (raw.isNotEmpty() && raw.last() == 0.toByte()) {
            throw Refuse.notInAlphabet("\u0000", "poplar1 values must not end in a NUL byte (the pad: \"ab\" and \"ab\\0\" would be one string)")
        }
        return raw.copyOf(length)
    }

    public companion object {
        /** The metric kind's name in a spec. */
        public const val NAME: String = "poplar1"

        /** The longest strings, in bits (Poplar1's `LDP_POPLAR1_MAX_BITS`: 32 bytes). */
        public const val MAX_BITS: Int = 256

        /** The largest `max_candidates`: 2^20 prefixes a level. */
        public const val MAX_CANDIDATES: Long = 1L shl 20

        /** The fields, in the order the spec names them (all required). */
        internal val FIELDS: List<ParamField> = listOf(
            ParamField("bits", FieldType.INT, null, false),
            ParamField("threshold", FieldType.INT, null, false),
            ParamField("max_candidates", FieldType.INT, null, false),
        )

        /** The kind as the spec and the client runtime see it (its encoder checks a value: [measurement]). */
        public val PROTOCOL: Protocol<Poplar1Params> = Protocol(NAME, "Poplar1Params", ::Poplar1Params, { p, o -> Poplar1Encoder(p, o) })

        /** The parameters of a spec's `params` object (unknown and missing names refused, then each checked). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): Poplar1Params = PROTOCOL.params(values)

        /** `bits`: an int (not a bool, not a float) in [8, [MAX_BITS]] (`param_range`), then a multiple of 8
         * (`param_relation`, rule `whole_bytes`). */
        private fun checkBits(v: Any?): Int {
            val bits = Checks.int(v, "bits", 8, MAX_BITS.toLong())
            if (bits % 8 != 0L) throw Refuse.relation("whole_bytes", listOf("bits"), "bits must be a multiple of 8 (a string of whole bytes), got $bits")
            return bits.toInt()
        }
    }
}

/** The `poplar1` "encoder": [prepare] checks a value into its measurement ([Poplar1Params.measurement]); it makes no
 * randomized report (a [io.github.ldptelemetry.client.TelemetryClient] seals the measurement to the metric's task). */
internal class Poplar1Encoder(params: Poplar1Params, options: EncoderOptions) : Encoder<Poplar1Params, ByteArray>(params, options) {
    override fun check(value: Any?): ByteArray = params.measurement(value)

    override fun draw(value: ByteArray): Report = throw IllegalStateException(
        "poplar1 has no local randomizer: its strings are shared with two aggregators (a TelemetryClient given its task)",
    )
}
