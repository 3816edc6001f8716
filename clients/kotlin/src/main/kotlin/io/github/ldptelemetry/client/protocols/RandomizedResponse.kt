package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpTypeException
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold
import java.math.BigInteger

/**
 * Binary randomized response (`rr`; Warner 1965, `ldp/encoders/randomized_response.py`): a true bit is reported as 1
 * with probability [q] if it is 1 and [p] if it is 0 (0 < p < q < 1); ε = max(ln(q/p), ln((1−p)/(1−q))) of the
 * realized p and q. Draws: `B(q)` for a 1, `B(p)` for a 0.
 */
public class BinaryRRParams(values: Map<String, Any?>) : ProtocolParams(values) {
    override val protocol: String get() = "rr"
    override val fields: List<ParamField> get() = FIELDS
    public val p: Double = Checks.probability(values["p"], "p")
    public val q: Double = Checks.probability(values["q"], "q")

    init {
        if (!(0.0 < p && p < q && q < 1.0)) {
            throw LdpValueException("binary RR needs 0 < p < q < 1 (finite ε, truthful bias), got p=${PyText.floatRepr(p)}, q=${PyText.floatRepr(q)}")
        }
        Checks.resolvable(p, "p")
        if (Threshold.realized(p) == Threshold.realized(q)) {
            throw LdpValueException(
                "p=${PyText.floatRepr(p)} and q=${PyText.floatRepr(q)} are equal at the client's 2^-64 resolution: " +
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
        public val FIELDS: List<ParamField> = listOf(ParamField.required("p", FieldType.FLOAT), ParamField.required("q", FieldType.FLOAT))
        private val SCHEMA = listOf(PayloadField.uint("bit", 2))
        public val PROTOCOL: Protocol<BinaryRRParams> =
            Protocol("rr", "BinaryRRParams", FIELDS, ::BinaryRRParams, { p, o -> BinaryRREncoder(p, o) })
    }
}

/** The `rr` encoder: values are booleans or 0/1. */
public class BinaryRREncoder(params: BinaryRRParams, options: EncoderOptions = EncoderOptions()) : Encoder<BinaryRRParams, Boolean>(params, options) {
    override fun check(value: Any?): Boolean {
        if (value is Boolean) return value
        if (isInt(value)) {
            if (value == 0L) return false
            if (value == 1L) return true
            throw LdpValueException("binary RR values must be 0 or 1, got $value")
        }
        throw LdpTypeException("binary RR values must be bool or 0/1, got ${PyText.typeName(value)}")
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
 */
public class GRRParams(values: Map<String, Any?>) : ProtocolParams(values) {
    override val protocol: String get() = "grr"
    override val fields: List<ParamField> get() = FIELDS
    public val epsilon: Double = Checks.epsilon(values["epsilon"])
    private val d: Long = Checks.int(values["domain_size"], "domain_size", 2, 1L shl 32)

    /** The number of values (at most 2^28 once the parameters are collectable). */
    override val domainSize: Int get() = d.toInt()

    /** The probability of reporting the true value, as the client realizes it. */
    public val p: Double = Threshold.realized(1.0 / (1.0 + (d - 1) * PyMath.exp(-epsilon)))

    /** The probability of reporting one given other value: (1 − p)/(d − 1). */
    public val q: Double get() = (1.0 - p) / (d - 1)

    public val labels: List<String>?

    init {
        if (p >= 1.0) {
            throw LdpValueException(
                "epsilon=${PyText.floatRepr(epsilon)} is too large for domain_size=$d: the keep probability " +
                    "rounds to 1 at the client's resolution, so reports would not be private",
            )
        }
        if (p <= q) {
            throw LdpValueException(
                "epsilon=${PyText.floatRepr(epsilon)} is too small for domain_size=$d: the keep probability " +
                    "rounds to 1/d, so reports would carry no information",
            )
        }
        labels = Checks.labels(values["labels"], d)
        Checks.collectable(protocol, schema, d)
    }

    /** The ε of the realized probabilities, ln(p(d − 1)/(1 − p)). */
    public val effectiveEpsilon: Double get() = PyMath.log(p * (domainSize - 1) / (1.0 - p))

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon), 0.0) }
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("index", d))

    /** The index of a label or an int index (Python's `index_of`). */
    public fun indexOf(value: Any?): Int = domainIndexOf(protocol, domainSize, labels, value)

    public companion object {
        public val FIELDS: List<ParamField> = listOf(
            ParamField.required("epsilon", FieldType.FLOAT),
            ParamField.required("domain_size", FieldType.INT),
            ParamField.optional("labels", FieldType.LABELS, null),
        )
        public val PROTOCOL: Protocol<GRRParams> = Protocol("grr", "GRRParams", FIELDS, ::GRRParams, { p, o -> GRREncoder(p, o) })

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
