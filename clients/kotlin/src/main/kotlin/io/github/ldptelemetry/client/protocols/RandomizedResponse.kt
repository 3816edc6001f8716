package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold
import java.math.BigInteger

/**
 * Binary randomized response (`rr`; Warner 1965, `ldp/encoders/randomized_response.py`): a true bit is reported as 1
 * with probability [q] if it is 1 and [p] if it is 0 (0 < p < q < 1); ε = max(ln(q/p), ln((1−p)/(1−q))) of the
 * realized p and q. Draws: `B(q)` for a 1, `B(p)` for a 0.
 *
 * Built from its properties (`BinaryRRParams(p = 0.25, q = 0.75)`) or from a spec's `params` object by [read]: both
 * check the values in Python's order and refuse the same parameters.
 */
public class BinaryRRParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** Pr[report 1 | bit 0] [p] and Pr[report 1 | bit 1] [q], `0 < p < q < 1`. */
    public constructor(p: Double, q: Double) : this(linkedMapOf("p" to p, "q" to q))

    override val protocol: String get() = "rr"
    public val p: Double = reader.double("p")
    public val q: Double = reader.double("q")

    init {
        if (!(0.0 < p && p < q && q < 1.0)) {
            throw Refuse.relation("0<p<q<1", listOf("p", "q"), "binary RR needs 0 < p < q < 1 (finite ε, truthful bias), got p=$p, q=$q")
        }
        Checks.resolvable(p, "p")
        if (Threshold.realized(p) == Threshold.realized(q)) {
            throw Refuse.relation(
                "p_q_resolvable", listOf("p", "q"),
                "p=$p and q=$q are equal at the client's 2^-64 resolution: " +
                    "reports would carry no information",
            )
        }
        Checks.collectable(protocol, schema, 1)
    }

    /** ε = max(ln(q/p), ln((1−p)/(1−q))) of the realized probabilities. */
    public val epsilon: Double
        get() {
            val rp = Threshold.realized(p)
            val rq = Threshold.realized(q)
            return maxOf(PyMath.log(rq / rp), PyMath.log((1.0 - rp) / (1.0 - rq)))
        }

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(epsilon, 0.0) }
    override val domainSize: Int get() = 2
    override val schema: List<PayloadField> get() = SCHEMA

    public companion object {
        private val SCHEMA = listOf(PayloadField.uint("bit", 2))
        public val PROTOCOL: Protocol<BinaryRRParams> = Protocol("rr", "BinaryRRParams", ::BinaryRRParams, { p, o -> BinaryRREncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): BinaryRRParams = PROTOCOL.params(values)
    }
}

/** The `rr` encoder: values are booleans or 0/1. */
public class BinaryRREncoder(params: BinaryRRParams, options: EncoderOptions = EncoderOptions()) : Encoder<BinaryRRParams, Boolean>(params, options) {
    override fun check(value: Any?): Boolean {
        if (value is Boolean) return value
        if (isInt(value)) {
            if (value == 0L) return false
            if (value == 1L) return true
            throw Refuse.range(null, value, min = 0L, max = 1L, message = "binary RR values must be 0 or 1, got $value")
        }
        throw Refuse.valueType("bool_or_01", value, "binary RR values must be true, false, 0 or 1, got ${Refuse.kind(value)}")
    }

    override fun draw(value: Boolean): Report {
        val bit = rng.bernoulli(if (value) params.q else params.p)
        return report("bit" to (if (bit) 1L else 0L))
    }
}

/**
 * Generalized (k-ary) randomized response (`grr`; Kairouz, Bonawitz & Ramage 2016): a value of `[0, d)` is kept with
 * `p = realized(1/(1 + (d − 1)·e^−ε))`, else a uniform other value is reported; charged `max(ε, ln(p(d − 1)/(1 − p)))`.
 * Draws: `B(p)`, then `R(d − 1)` if false.
 *
 * Built from its properties (`GRRParams(epsilon = 1.0, domainSize = 3)`) or from a spec's `params` object by [read]
 * (`Protocols["grr"]!!.paramsOf(map)` is the same): both check the values in Python's order (ε, the domain, ε
 * against the domain, the labels) and refuse the same parameters (`param_range`, `param_relation`, …).
 */
public class GRRParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** ε of one report (finite, > 0), the number of values `d` in `[2, 2^32]` (at most 2^28 once collectable), and
     * the values' names (`d` distinct strings, or null: values are then indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels))

    override val protocol: String get() = "grr"

    /** ε of one report. */
    public val epsilon: Double = reader.double("epsilon")
    private val d: Long = reader.long("domain_size")

    /** The number of values (at most 2^28 once the parameters are collectable). */
    override val domainSize: Int get() = d.toInt()

    /** The probability of reporting the true value, as the client realizes it. */
    public val p: Double = keepProbability(epsilon, d)

    /** The probability of reporting one given other value: (1 − p)/(d − 1). */
    public val q: Double get() = (1.0 - p) / (d - 1)

    /** The values' names, or null (values are then indices). */
    public val labels: List<String>? = reader.labels(d)

    init {
        Checks.collectable(protocol, schema, d)
    }

    /** The ε of the realized probabilities, ln(p(d − 1)/(1 − p)). */
    public val effectiveEpsilon: Double get() = PyMath.log(p * (domainSize - 1) / (1.0 - p))

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon), 0.0) }
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("index", d))

    /** The index of a label or an int index (Python's `index_of`). */
    public fun indexOf(value: Any?): Int = domainIndexOf(protocol, domainSize, labels, value)

    public companion object {
        public val PROTOCOL: Protocol<GRRParams> = Protocol("grr", "GRRParams", ::GRRParams, { p, o -> GRREncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): GRRParams = PROTOCOL.params(values)

        /** The realized keep probability of ε over `d` values, refused where it rounds to 1 (not private) or to
         * `1/d` or below (no information). */
        private fun keepProbability(epsilon: Double, d: Long): Double {
            val p = Threshold.realized(1.0 / (1.0 + (d - 1) * PyMath.exp(-epsilon)))
            if (p >= 1.0) {
                throw Refuse.relation(
                    "epsilon_too_large", listOf("epsilon", "domain_size"),
                    "epsilon=$epsilon is too large for domain_size=$d: the keep probability rounds to 1 at the " +
                        "client's resolution, so reports would not be private",
                )
            }
            if (p <= (1.0 - p) / (d - 1)) {
                throw Refuse.relation(
                    "epsilon_too_small", listOf("epsilon", "domain_size"),
                    "epsilon=$epsilon is too small for domain_size=$d: the keep probability rounds to 1/d, so " +
                        "reports would carry no information",
                )
            }
            return p
        }

        /** `grr_draw`: keep [x] with probability [p], else a uniform other value of `[0, d)`: `B(p)`, then `R(d − 1)`. */
        public fun draw(rng: RandomSource, p: Double, d: Int, x: Int): Int {
            if (rng.bernoulli(p)) return x
            val other = rng.randbelow(d - 1)
            return other + if (other >= x) 1 else 0
        }
    }
}

/** The `grr` encoder: values are labels or indices in `[0, d)`. */
public class GRREncoder(params: GRRParams, options: EncoderOptions = EncoderOptions()) : Encoder<GRRParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)
    override fun draw(value: Int): Report = report("index" to GRRParams.draw(rng, params.p, params.domainSize, value).toLong())
}

internal fun bigOf(v: Any?): BigInteger = if (v is BigInteger) v else BigInteger.valueOf((v as Number).toLong())
