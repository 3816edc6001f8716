package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Refuse
import java.math.BigInteger

/**
 * The Prefix Extending Method (`pem`; Wang, Li, Jha et al., IEEE TDSC 2021, `ldp/encoders/pem.py`): a string of up
 * to `max_length` bytes, NUL-padded and read as one big-endian integer of `L = 8·max_length` bits; a report draws
 * its group `R(G)` and reports the group's `b_j`-bit prefix through OLH (its 32-bit key) or GRR over the whole prefix
 * domain (`oracle`: `"olh"`, `"grr"` or `"auto"`, per group the one of smaller null variance).
 */
public class PEMParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** ε of one report, the longest value in bytes, the bits of the first prefix and of each round's extension,
     * the candidates kept per round, each group's frequency [oracle] (`"olh"`, `"grr"` or `"auto"`), whether a
     * value over [maxLength] is cut to it (else refused), and the number of OLH hash seeds. */
    @JvmOverloads
    public constructor(
        epsilon: Double, maxLength: Long = 10, startBits: Long = 8, stepBits: Long = 8, topK: Long = 32, oracle: String = "olh",
        truncate: Boolean = false, seedRange: Long = LocalHashingParams.SEED_RANGE,
    ) : this(
        linkedMapOf(
            "epsilon" to epsilon, "max_length" to maxLength, "start_bits" to startBits, "step_bits" to stepBits, "top_k" to topK,
            "oracle" to oracle, "truncate" to truncate, "seed_range" to seedRange,
        ),
    )

    override val protocol: String get() = "pem"
    public val epsilon: Double = reader.double("epsilon")
    public val maxLength: Int = reader.int("max_length")
    public val startBits: Int = reader.int("start_bits", dynamicMax = minOf(MAX_START_BITS, 8L * maxLength))
    public val stepBits: Int = reader.int("step_bits")
    public val topK: Int = reader.int("top_k")
    public val seedRange: Long = reader.long("seed_range")
    public val oracle: String = reader.choice("oracle")
    public val truncate: Boolean = reader.bool("truncate")
    public val totalBits: Int get() = 8 * maxLength

    /** `G = 1 + ceil((L − start_bits)/step_bits)`. */
    public val groups: Int get() = 1 + (totalBits - startBits + stepBits - 1) / stepBits

    /** The OLH oracle of the OLH groups. */
    public val olh: OLHParams by lazy { OLHParams(linkedMapOf("epsilon" to epsilon, "domain_size" to 2L, "labels" to null, "seed_range" to seedRange)) }
    private val grrs = HashMap<Int, GRRParams>()

    /** Each group's oracle, `"olh"` or `"grr"`. */
    public val oracles: List<String>

    init {
        if (groups !in 1..(1 shl 16)) {
            throw Refuse.limit("groups", groups.toLong(), 1L shl 16, "groups (1 + ceil((8·max_length − start_bits)/step_bits)) must be in [1, ${1 shl 16}], got $groups")
        }
        if (oracle == "grr" && prefixBits(groups - 1) > MAX_GRR_BITS) {
            throw Refuse.limit(
                "grr_prefix_bits", prefixBits(groups - 1).toLong(), MAX_GRR_BITS.toLong(),
                "oracle='grr' reports each prefix over its whole domain of 2^bits values, at most 2^$MAX_GRR_BITS: the last group's prefixes have ${prefixBits(groups - 1)} bits " +
                    "(use oracle='auto', GRR where it is smaller and allowed, OLH elsewhere)",
            )
        }
        oracles = try {
            groupOracles().also { if ("olh" in it) olh.p }
        } catch (e: LdpValueException) { // a GRR group's ε too large or too small for its 2^b_j prefixes
            if (e.code != RefusalCode.PARAM_RELATION || "domain_size" !in (e.fields["params"] as List<*>)) throw e
            throw Refuse.relation(e.fields["rule"] as String, listOf("epsilon", "max_length", "start_bits", "step_bits", "oracle"), e.message ?: "")
        }
        Checks.collectable(protocol, schema, groups.toLong())
    }

    private fun groupOracles(): List<String> = when (oracle) {
        "olh" -> List(groups) { "olh" }
        "grr" -> List(groups) { grr(it); "grr" }
        else -> List(groups) { j ->
            val bits = prefixBits(j)
            val g = if (bits <= MAX_GRR_BITS) grr(j) else null
            if (g != null && HHParams.nullVariance(g.p, g.q) < HHParams.nullVariance(olh.p, 1.0 / olh.g)) "grr" else "olh"
        }
    }

    /** `b_j = min(start_bits + j·step_bits, L)`. */
    public fun prefixBits(group: Int): Int = minOf(startBits + group * stepBits, totalBits)

    /** GRR over group [group]'s whole prefix domain. */
    public fun grr(group: Int): GRRParams = grrs.getOrPut(group) {
        GRRParams.read(linkedMapOf("epsilon" to epsilon, "domain_size" to (1L shl prefixBits(group)), "labels" to null))
    }

    private fun ySize(group: Int): Long = if (oracles[group] == "grr") 1L shl prefixBits(group) else olh.g

    override val domainSize: Int? get() = null
    override val privacyCost: PrivacyCost by lazy {
        PrivacyCost(oracles.mapIndexed { j, o -> if (o == "olh") olh.privacyCost.epsilon else grr(j).privacyCost.epsilon }.max())
    }
    override val schema: List<PayloadField>
        get() {
            val ys = if (oracle == "olh") olh.g else (0 until groups).maxOf { ySize(it) }
            return listOf(PayloadField.uint("group", groups.toLong()), PayloadField.uint("seed", seedRange), PayloadField.uint("y", ys))
        }

    /** Python's `pad_value`: the value's bytes checked, cut if allowed, NUL-padded to `max_length`. */
    public fun padded(value: Any?): ByteArray {
        if (value !is String && value !is ByteArray) throw Refuse.valueType("string_or_bytes", value, "pem values must be strings or bytes, got ${Refuse.kind(value)}")
        var raw = Bytes.valueBytes(value)
        if (raw.any { it.toInt() == 0 }) throw Refuse.notInAlphabet("\u0000", "pem values must not contain a NUL byte (the pad)")
        if (raw.size > maxLength) {
            if (!truncate) throw Refuse.tooLong(raw.size.toLong(), maxLength.toLong(), "bytes", "pem value of ${raw.size} bytes is over max_length=$maxLength (set truncate in the params to cut it)")
            raw = raw.copyOf(maxLength)
            if (value is String) raw = dropIncompleteTail(raw)
        }
        if (raw.isEmpty()) {
            val nonEmpty = (value is String && value.isNotEmpty()) || (value is ByteArray && value.isNotEmpty())
            throw Refuse.emptyValue("pem values must be non-empty strings" + if (nonEmpty) " (after truncation)" else "")
        }
        return raw.copyOf(maxLength)
    }

    /** The key group [group] reports for a padded value: the prefix up to 32 bits, else its MurmurHash3. */
    public fun keyOf(padded: BigInteger, group: Int): Long {
        val bits = prefixBits(group)
        val prefix = padded.shiftRight(totalBits - bits)
        if (bits <= 32) return prefix.toLong()
        val n = (bits + 7) / 8
        val raw = prefix.toByteArray()
        val bytes = ByteArray(n)
        val take = minOf(n, raw.size)
        System.arraycopy(raw, raw.size - take, bytes, n - take, take)
        return Bytes.murmur3(bytes, KEY_SEED)
    }

    public companion object {
        public const val KEY_SEED: Long = 0x50454DL
        public const val MAX_START_BITS: Long = 24
        public const val MAX_STEP_BITS: Long = 16
        public const val MAX_GRR_BITS: Int = 16
        public val PROTOCOL: Protocol<PEMParams> = Protocol("pem", "PEMParams", ::PEMParams, { p, o -> PEMEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): PEMParams = PROTOCOL.params(values)

        /** UTF-8 cut mid-character: the incomplete trailing character dropped (`decode("utf-8", "ignore")`). */
        internal fun dropIncompleteTail(raw: ByteArray): ByteArray {
            var i = raw.size - 1
            while (i >= 0 && (raw[i].toInt() and 0xc0) == 0x80) i--
            if (i < 0) return raw
            val lead = raw[i].toInt() and 0xff
            val need = when {
                lead < 0x80 -> 1
                lead >= 0xf0 -> 4
                lead >= 0xe0 -> 3
                lead >= 0xc0 -> 2
                else -> 1
            }
            return if (raw.size - i < need) raw.copyOf(i) else raw
        }
    }
}

/** The `pem` encoder: values are strings (UTF-8) or bytes. */
public class PEMEncoder(params: PEMParams, options: EncoderOptions) : Encoder<PEMParams, BigInteger>(params, options) {
    override fun check(value: Any?): BigInteger = BigInteger(1, params.padded(value))

    override fun draw(value: BigInteger): Report {
        val pr = params
        val group = rng.randbelow(pr.groups)
        if (pr.oracles[group] == "grr") {
            val grr = pr.grr(group)
            val x = pr.keyOf(value, group).toInt()
            return report("group" to group.toLong(), "seed" to 0L, "y" to GRRParams.draw(rng, grr.p, grr.domainSize, x).toLong())
        }
        val r = LocalHashingParams.draw(rng, pr.seedRange, pr.olh.g, pr.olh.p, pr.keyOf(value, group))
        return report("group" to group.toLong(), "seed" to r[0], "y" to r[1])
    }
}
