package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold

/**
 * Unary encodings (`ldp/encoders/unary.py`; Wang, Blocki, Li & Jha, USENIX Security 2017): a value `v` of `[0, d)`
 * is one-hot encoded as `d` bits, each reported independently: bit `v` is 1 with probability `p`, every other bit
 * with `q`. Symmetric (`sue`, basic one-time RAPPOR): `p = realized(σ(−ε/2))`, `q = realized(σ(ε/2))`; optimized
 * (`oue`): `p = 1/2`, `q = realized(σ(ε))`. Charged `max(ε, ln(p(1−q)/((1−p)q)))`, the ratio in exact rationals.
 * Draws: `BB(q, d)` with bit `v` cleared, then `B(p)` sets bit `v`.
 */
public abstract class UnaryParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** Realized Pr[bit v = 1 | value v]. */
    public abstract val p: Double

    /** Realized Pr[bit u = 1 | value v], u ≠ v. */
    public abstract val q: Double

    protected val d: Long get() = values["domain_size"] as Long
    override val domainSize: Int get() = d.toInt()

    public var labels: List<String>? = null
        private set

    /** Python's `_check_unary`: the domain, that p and q are realizable and informative ([what]: the ε named), the
     * labels. */
    protected fun checkUnary(what: String, unaryParams: List<String> = listOf("epsilon")) {
        val dd = reader.long("domain_size")
        if (q <= 0.0 || p >= 1.0) {
            throw Refuse.relation("epsilon_too_large", unaryParams, "$what is too large for $protocol: a bit probability rounds to 0 or 1 at the client's resolution, so reports would not be private")
        }
        if (p <= q) {
            throw Refuse.relation("epsilon_too_small", unaryParams, "$what is too small for $protocol: p and q are equal at the client's resolution, so reports would carry no information")
        }
        labels = reader.labels(dd)
    }

    /** The index of a label or an int index. */
    public fun indexOf(value: Any?): Int = domainIndexOf(protocol, domainSize, labels, value)

    /** The exact worst log-ratio of one report's realized law. */
    public open val effectiveEpsilon: Double get() = UnaryEncoding.epsilon(Rational.of(p), Rational.of(q))

    override val schema: List<PayloadField> get() = listOf(PayloadField.bits("bits", (values["domain_size"] as Long).toInt()))
}

/** The shared unary pieces: the draw and the ε of a unary law. */
internal object UnaryEncoding {
    /** `unary_draw`: the `d` report bits of [index]: bit [index] `B(p)`, the others `BB(q, d)`, in that draw order
     * (the others first). */
    public fun draw(rng: RandomSource, p: Double, q: Double, d: Int, index: Int): BitMask {
        val bits = rng.bernoulliBits(q, d)
        bits[index] = rng.bernoulli(p)
        return bits
    }

    /** `unary_epsilon`: `ln(p(1−q)/((1−p)q))`, exactly in rationals, then the log of numerator and denominator. */
    internal fun epsilon(p: Rational, q: Rational): Double {
        val one = Rational.of(1L)
        return (p * (one - q) / ((one - p) * q)).logRatio()
    }
}

/** Symmetric unary encoding (`sue`). */
public class SUEParams internal constructor(values: Map<String, Any?>) : UnaryParams(values) {
    /** ε of one report, the number of values `d` and their names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels))

    override val protocol: String get() = "sue"
    public val epsilon: Double = reader.double("epsilon")
    override val p: Double = Threshold.realized(PyMath.logisticTail(-epsilon / 2))
    override val q: Double = Threshold.realized(PyMath.logisticTail(epsilon / 2))

    init {
        checkUnary("epsilon=${epsilon}")
        Checks.collectable(protocol, schema, d)
    }

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }

    public companion object {
        public val PROTOCOL: Protocol<SUEParams> = Protocol("sue", "SUEParams", ::SUEParams, { p, o -> UnaryEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): SUEParams = PROTOCOL.params(values)
    }
}

/** Optimized unary encoding (`oue`). */
public class OUEParams internal constructor(values: Map<String, Any?>) : UnaryParams(values) {
    /** ε of one report, the number of values `d` and their names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels))

    override val protocol: String get() = "oue"
    public val epsilon: Double = reader.double("epsilon")
    override val p: Double get() = 0.5
    override val q: Double = Threshold.realized(PyMath.logisticTail(epsilon))

    init {
        checkUnary("epsilon=${epsilon}")
        Checks.collectable(protocol, schema, d)
    }

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }

    public companion object {
        public val PROTOCOL: Protocol<OUEParams> = Protocol("oue", "OUEParams", ::OUEParams, { p, o -> UnaryEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): OUEParams = PROTOCOL.params(values)
    }
}

/** The `sue` and `oue` encoder: values are labels or indices in `[0, d)`. */
public class UnaryEncoder<P : UnaryParams>(params: P, options: EncoderOptions) : Encoder<P, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)
    override fun draw(value: Int): Report = report("bits" to UnaryEncoding.draw(rng, params.p, params.q, params.domainSize, value))
}

/**
 * Longitudinal unary encoding (`loue`): a permanent OUE (or SUE) response at `epsilon_perm`, memoized per value from
 * the metric secret, then each bit flipped afresh with `flip = realized((1 − λ2)/2)` so that one report is
 * `epsilon`-LDP; λ2 the root of `ab(E−1)λ² + (a−b)(E+1)λ/2 − (E−1)/4 = 0` (`a = p1 − 1/2`, `b = q1 − 1/2`).
 * Draws: the permanent response on the keyed stream, then `BB(flip, d)` on the injected one.
 */
public class LOUEParams internal constructor(values: Map<String, Any?>) : UnaryParams(values) {
    /** The permanent response's ε [epsilonPerm] (> [epsilon], one report's), the number of values `d`, their names
     * (null: values are indices), and the [permanent] response's encoding, `"oue"` or `"sue"`. */
    @JvmOverloads
    public constructor(epsilonPerm: Double, epsilon: Double, domainSize: Long, labels: List<String>? = null, permanent: String = "oue") :
        this(linkedMapOf("epsilon_perm" to epsilonPerm, "epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels, "permanent" to permanent))

    override val protocol: String get() = "loue"
    public val epsilonPerm: Double = reader.double("epsilon_perm")
    public val epsilon: Double = reader.double("epsilon")

    /** The permanent response's encoding, `"oue"` or `"sue"`. */
    public val permanent: String = reader.choice("permanent")

    /** Round 1, the memoized OUE or SUE. */
    public val perm: UnaryParams

    /** Round 2's realized flip probability. */
    public val flip: Double

    init {
        if (!(epsilon < epsilonPerm)) {
            throw Refuse.relation(
                "epsilon<epsilon_perm", listOf("epsilon", "epsilon_perm"),
                "L-OUE needs epsilon < epsilon_perm (a report is post-processing of the permanent response, so it " +
                    "cannot leak more), got epsilon=${epsilon}, epsilon_perm=${epsilonPerm}",
            )
        }
        val dd = reader.long("domain_size")
        val permValues = linkedMapOf<String, Any?>("epsilon" to epsilonPerm, "domain_size" to dd, "labels" to null)
        perm = try {
            if (permanent == "oue") OUEParams(permValues) else SUEParams(permValues)
        } catch (e: IllegalArgumentException) {
            throw Refuse.restated(e, "", mapOf("epsilon" to "epsilon_perm"))
        }
        val a = perm.p - 0.5
        val b = perm.q - 0.5
        val e1 = PyMath.expm1(epsilon)
        val qa = a * b * e1
        val qb = (a - b) * (e1 + 2.0) / 2.0
        val qc = e1 / 4.0
        val disc = qb * qb + 4.0 * qa * qc
        val lam = if (disc >= 0.0) 2.0 * qc / (qb + Math.sqrt(disc)) else Double.POSITIVE_INFINITY
        if (!(0.0 < lam && lam < 1.0)) {
            throw Refuse.relation("epsilon<realized_epsilon_perm", listOf("epsilon", "epsilon_perm", "permanent"), "epsilon=$epsilon is not below the realized permanent ε ${perm.effectiveEpsilon}: no instantaneous round gives it")
        }
        flip = Threshold.realized((1.0 - lam) / 2.0)
        if (flip <= 0.0) {
            throw Refuse.relation(
                "instantaneous_realizable", listOf("epsilon", "epsilon_perm", "permanent"),
                "the instantaneous round of these L-OUE parameters is not realizable: its flip probability " +
                    "${((1.0 - lam) / 2.0)} rounds to 0 at the client's resolution",
            )
        }
    }

    private fun star(pi: Rational): Rational {
        val f = Rational.of(flip)
        val one = Rational.of(1L)
        return pi * (one - f) + (one - pi) * f
    }

    override val p: Double = star(Rational.of(perm.p)).toDouble()
    override val q: Double = star(Rational.of(perm.q)).toDouble()

    init {
        checkUnary("epsilon=${epsilon}")
        Checks.collectable(protocol, schema, d)
    }

    override val effectiveEpsilon: Double get() = UnaryEncoding.epsilon(star(Rational.of(perm.p)), star(Rational.of(perm.q)))
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, effectiveEpsilon)) }

    /** Every report of one value together: the permanent response's cost. */
    public val memoCap: PrivacyCost get() = perm.privacyCost

    /** The exact worst-case ε of `t` reports of one value (Python's `loue_leakage`). */
    public fun leakage(t: Int): Double {
        val keep = PyMath.log1p(-flip)
        val fl = PyMath.log(flip)
        fun logP(pi: Double, c: Int) = MemoizedEncoder.logaddexp(PyMath.log(pi) + c * keep + (t - c) * fl, PyMath.log1p(-pi) + c * fl + (t - c) * keep)
        val f = (0..t).map { c -> logP(perm.p, c) - logP(perm.q, c) }
        return f.maxOrNull()!! - f.minOrNull()!!
    }

    /** The per-report charge of `charging="min"`. */
    public val reportCharge: PrivacyCost by lazy { MemoizedEncoder.memoReportCharge(privacyCost, memoCap, ::leakage) }

    public companion object {
        public val PROTOCOL: Protocol<LOUEParams> =
            Protocol("loue", "LOUEParams", ::LOUEParams, { p, o -> LOUEEncoder(p, o) }, needsSecret = true)

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): LOUEParams = PROTOCOL.params(values)
    }
}

/** The `loue` encoder: the permanent unary bits of the value from the keyed stream, each flipped afresh. */
public class LOUEEncoder(params: LOUEParams, options: EncoderOptions) : MemoizedEncoder<LOUEParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)

    override fun draw(value: Int): Report {
        val perm = params.perm
        val bits = memoized(value.toLong()) { src -> UnaryEncoding.draw(src, perm.p, perm.q, params.domainSize, value) }
        return report("bits" to (bits xor rng.bernoulliBits(params.flip, params.domainSize)))
    }

    override fun charge(value: Int): Charge = memoizedCharge(value.toLong(), params.reportCharge, params.memoCap)
}
