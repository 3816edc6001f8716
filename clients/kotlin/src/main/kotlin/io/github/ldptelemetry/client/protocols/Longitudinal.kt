package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse

/**
 * Longitudinal GRR (`lgrr`; RAPPOR's PRR/IRR for a k-ary value, `ldp/encoders/longitudinal.py`): a permanent GRR at
 * `epsilon_perm` memoized per value from the metric secret, then a fresh GRR per report such that one report is
 * `epsilon`-LDP. Two GRRs compose to one with `λ = λ1·λ2`, so round 2 keeps with
 * `λ2 = expm1(ε)/(expm1(ε) + k)/(p1 − q1)`, i.e. a GRR at `ε2 = log1p(kλ2/(1 − λ2))`. Charged per report the
 * per-report charge bounding the exact leakage of t reports (Python's `memo_report_charge`), at most
 * `max(epsilon_perm, realized ε_perm)` per value.
 */
public class LGRRParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** The permanent response's ε [epsilonPerm] (> [epsilon], one report's), the number of values `d` and their
     * names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilonPerm: Double, epsilon: Double, domainSize: Long, labels: List<String>? = null) :
        this(linkedMapOf("epsilon_perm" to epsilonPerm, "epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels))

    override val protocol: String get() = "lgrr"
    public val epsilonPerm: Double = reader.double("epsilon_perm")
    public val epsilon: Double = reader.double("epsilon")
    private val d: Long = reader.long("domain_size")

    /** Round 1, the memoized GRR at `epsilon_perm` (also the labels' index). */
    public val permanent: GRRParams

    /** Round 2, the fresh GRR of each report. */
    public val instantaneous: GRRParams

    init {
        if (!(epsilon < epsilonPerm)) {
            throw Refuse.relation(
                "epsilon<epsilon_perm", listOf("epsilon", "epsilon_perm"),
                "L-GRR needs epsilon < epsilon_perm (a report is post-processing of the permanent response, so it " +
                    "cannot leak more), got epsilon=${epsilon}, epsilon_perm=${epsilonPerm}",
            )
        }
        permanent = try {
            GRRParams.read(linkedMapOf("epsilon" to epsilonPerm, "domain_size" to d, "labels" to values["labels"]))
        } catch (e: IllegalArgumentException) {
            throw Refuse.restated(e, "", mapOf("epsilon" to "epsilon_perm"))
        }
        val lam = PyMath.expm1(epsilon) / (PyMath.expm1(epsilon) + d) / (permanent.p - permanent.q)
        if (!(0.0 < lam && lam < 1.0)) {
            throw Refuse.relation(
                "epsilon<realized_epsilon_perm", listOf("epsilon", "epsilon_perm", "domain_size"),
                "epsilon=$epsilon is not below the realized permanent ε " +
                    "${permanent.effectiveEpsilon} at domain_size=$d: no instantaneous round gives it",
            )
        }
        val eps2 = PyMath.log1p(d * lam / (1.0 - lam))
        instantaneous = try {
            GRRParams.read(linkedMapOf("epsilon" to eps2, "domain_size" to d, "labels" to null))
        } catch (e: LdpValueException) {
            throw Refuse.relation(
                "instantaneous_realizable", listOf("epsilon", "epsilon_perm", "domain_size"),
                "the instantaneous round of these L-GRR parameters is not realizable: ${e.message}",
            )
        }
        Checks.collectable(protocol, schema, d)
    }

    override val domainSize: Int get() = d.toInt()
    public val labels: List<String>? get() = permanent.labels

    /** ε of one report, `ln(p* ÷ q*)` of the realized probabilities, in exact rationals. */
    public val realizedEpsilon: Double by lazy {
        val p1 = Rational.of(permanent.p)
        val p2 = Rational.of(instantaneous.p)
        val one = Rational.of(1L)
        val km1 = Rational.of(d - 1)
        val ps = p1 * p2 + (one - p1) * (one - p2) / km1
        (ps * km1 / (one - ps)).logRatio()
    }

    override val privacyCost: PrivacyCost by lazy { PrivacyCost(maxOf(epsilon, realizedEpsilon)) }

    /** Every report of one value together: `max(epsilon_perm, realized ε_perm)`. */
    public val memoCap: PrivacyCost by lazy { PrivacyCost(maxOf(epsilonPerm, permanent.effectiveEpsilon)) }

    /** The exact worst-case ε of `t` reports of one value (Python's `lgrr_leakage`). */
    public fun leakage(t: Int): Double {
        val k = d
        val p1 = permanent.p
        val p2 = instantaneous.p
        val q1 = (1.0 - p1) / (k - 1)
        val q2 = (1.0 - p2) / (k - 1)
        val lr = PyMath.log(p2 / q2)
        val dd = PyMath.log(p1 - q1)
        val lq1 = PyMath.log(q1)
        var worst = 0.0
        for (a in 0..t) {
            for (b in 0..minOf(a, t - a)) {
                val rest = t - a - b
                val others = k - 2
                var logS: Double
                if (others == 0L) {
                    if (rest != 0) continue
                    logS = MemoizedEncoder.logaddexp(a * lr, b * lr)
                } else {
                    val base = rest / others
                    val extra = rest % others
                    logS = MemoizedEncoder.logaddexp(a * lr, b * lr)
                    logS = MemoizedEncoder.logaddexp(logS, PyMath.log((others - extra).toDouble()) + base * lr)
                    if (extra != 0L) logS = MemoizedEncoder.logaddexp(logS, PyMath.log(extra.toDouble()) + (base + 1) * lr)
                }
                val num = MemoizedEncoder.logaddexp(lq1 + logS, dd + a * lr)
                val den = MemoizedEncoder.logaddexp(lq1 + logS, dd + b * lr)
                worst = maxOf(worst, num - den)
            }
        }
        return worst
    }

    /** The per-report charge of `charging="min"`. */
    public val reportCharge: PrivacyCost by lazy { MemoizedEncoder.memoReportCharge(privacyCost, memoCap, ::leakage) }

    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("index", d))

    public companion object {
        public val PROTOCOL: Protocol<LGRRParams> =
            Protocol("lgrr", "LGRRParams", ::LGRRParams, { p, o -> LGRREncoder(p, o) }, needsSecret = true)

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): LGRRParams = PROTOCOL.params(values)
    }
}

/** The `lgrr` encoder: the permanent GRR of the value from the keyed stream, then a fresh GRR of it. */
public class LGRREncoder(params: LGRRParams, options: EncoderOptions) : MemoizedEncoder<LGRRParams, Int>(params, options) {
    override fun check(value: Any?): Int = params.permanent.indexOf(value)

    override fun draw(value: Int): Report {
        val perm = params.permanent
        val memo = memoized(value.toLong()) { src -> GRRParams.draw(src, perm.p, perm.domainSize, value) }
        return report("index" to GRRParams.draw(rng, params.instantaneous.p, params.domainSize, memo).toLong())
    }

    override fun charge(value: Int): Charge = memoizedCharge(value.toLong(), params.reportCharge, params.memoCap)
}
