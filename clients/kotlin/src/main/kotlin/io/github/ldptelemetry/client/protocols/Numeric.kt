package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.KeyedRandomSource
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.Threshold

/**
 * Means of numbers in `[low, high]` (`ldp/encoders/numeric.py`): Duchi et al.'s one-bit mechanism (`duchi`), the
 * Piecewise Mechanism (`piecewise`) and their hybrid (`hybrid`) of Wang et al. (ICDE 2019). A value is a finite
 * number, clipped to `[low, high]` when `clip` is set (refused otherwise); `unit(x) = (x − low)/(high − low)`.
 */
public abstract class NumericParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    public val epsilon: Double = reader.double("epsilon")
    public val low: Double = reader.double("low")
    public val high: Double = reader.double("high")
    public val clip: Boolean

    init {
        if (!(low < high)) throw Refuse.relation("low<high", listOf("low", "high"), "the bounds need low < high, got low=$low, high=$high")
        if ((high - low).isInfinite()) throw Refuse.relation("width_finite", listOf("low", "high"), "high - low must be finite, got low=$low, high=$high")
        clip = reader.bool("clip")
    }

    override val domainSize: Int? get() = null

    /** The realized ε of one report. */
    public abstract val realizedEpsilon: Double
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(realizedEpsilon) }

    /** A value as a double in `[low, high]` (Python's `check_value`). */
    public fun checkValue(value: Any?): Double {
        if (!isReal(value)) throw Refuse.valueType("float", value, "$protocol values must be numbers, got ${Refuse.kind(value)}")
        var x = asDouble(value)
        if (x.isNaN() || x.isInfinite()) throw Refuse.range(null, value, min = low, max = high, finite = true, message = "$protocol values must be finite, got $x")
        if (!(low <= x && x <= high)) {
            if (!clip) {
                throw Refuse.range(
                    null, value, min = low, max = high,
                    message = "$protocol value $x is outside [low, high] = [$low, $high] (set clip in the params to clip instead)",
                )
            }
            x = pyMin(pyMax(x, low), high)
        }
        return x
    }

    /** `(x − low)/(high − low)` clamped to `[0, 1]` (as Python's `min` and `max` clamp: `-0.0` stays). */
    public fun unit(x: Double): Double = pyMin(pyMax((x - low) / (high - low), 0.0), 1.0)

    public companion object {
        /** The largest number of Piecewise cells. */
        public const val MAX_CELLS: Long = 1L shl 16

        /** ε* of the hybrid mechanism: the root of `3t³ − t² + t − 7` at `t = e^{ε/2}`. */
        public const val HYBRID_THRESHOLD: Double = 0.6093524930273091

        /** The next probability the client realizes above or below [p] (docs/conformance.md `next(q, up)`). */
        internal fun nextProbability(p: Double, up: Boolean): Double {
            if (p < Math.scalb(1.0, -11)) {
                val t = Math.scalb(p, 64).toLong() + if (up) 1 else -1
                return Math.scalb(t.toDouble(), -64)
            }
            return if (up) Math.nextUp(p) else Math.nextDown(p)
        }

        internal fun duchiEpsilonOf(q: Double): Double = if (q > 0) PyMath.log1p((1.0 - 2.0 * q) / q) else Double.POSITIVE_INFINITY

        /** Duchi's realized flip probability at ε: `realized(σ(ε))`, stepped up while its ε exceeds ε. */
        internal fun duchiQ(epsilon: Double): Double {
            var q = Threshold.realized(PyMath.logisticTail(epsilon))
            while (q > 0.0 && q < 0.5 && duchiEpsilonOf(q) > epsilon) q = Threshold.realized(nextProbability(q, true))
            return q
        }
    }
}

/** Duchi et al.'s one-bit mechanism: `bit = B(unit(x)) XOR B(q)`. */
public class DuchiParams internal constructor(values: Map<String, Any?>) : NumericParams(values) {
    /** ε of one report, the range `[low, high]` of the values and whether a value outside it is clipped to it (else
     * refused). */
    @JvmOverloads
    public constructor(epsilon: Double, low: Double, high: Double, clip: Boolean = false) :
        this(linkedMapOf("epsilon" to epsilon, "low" to low, "high" to high, "clip" to clip))

    override val protocol: String get() = "duchi"

    /** The realized flip probability (`≈ 1/(1 + e^ε)`). */
    public val q: Double = duchiQ(epsilon)

    init {
        if (!(q > 0.0 && q < 0.5)) {
            val what = if (q >= 0.5) "small: the flip probability rounds to 1/2" else "large: the flip probability 1/(1+e^ε) is below the client's 2^-64 resolution"
            val rule = if (q >= 0.5) "epsilon_too_small" else "epsilon_too_large"
            throw Refuse.relation(rule, listOf("epsilon"), "epsilon=$epsilon is too $what, so reports would not be private or informative")
        }
        Checks.collectable(protocol, schema, 2)
    }

    override val realizedEpsilon: Double get() = duchiEpsilonOf(q)
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("bit", 2))

    /** One bit of [x]. */
    public fun bit(rng: RandomSource, x: Double): Long = if (rng.bernoulli(unit(x)) != rng.bernoulli(q)) 1 else 0

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): DuchiParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<DuchiParams> = Protocol("duchi", "DuchiParams", ::DuchiParams, { p, o -> NumericEncoder(p, o) { rng, x -> listOf("bit" to p.bit(rng, x)) } })
    }
}

/** The Piecewise Mechanism over `cells` cells: a window of `w` cells around the value with `p_in`, else elsewhere. */
public class PiecewiseParams internal constructor(values: Map<String, Any?>) : NumericParams(values) {
    /** ε of one report, the range `[low, high]` of the values and whether a value outside it is clipped to it (else
     * refused), and the number of cells of the output grid. */
    @JvmOverloads
    public constructor(epsilon: Double, low: Double, high: Double, clip: Boolean = false, cells: Long = 1024) :
        this(linkedMapOf("epsilon" to epsilon, "low" to low, "high" to high, "clip" to clip, "cells" to cells))

    override val protocol: String get() = "piecewise"
    public val cells: Int = reader.int("cells")

    /** The window width `w`. */
    public val window: Int = minOf(maxOf(Math.floor(cells * PyMath.logisticTail(epsilon / 2) + 0.5).toInt(), 1), cells - 1)

    /** The realized probability of the window, stepped down while its ε exceeds ε. */
    public val pIn: Double

    private fun epsilonOf(p: Double): Double = if (p < 1.0) PyMath.log1p((p * cells - window) / ((1.0 - p) * window)) else Double.POSITIVE_INFINITY

    init {
        var p = Threshold.realized(1.0 / (1.0 + ((cells - window).toDouble() / window) * PyMath.exp(-epsilon)))
        while (p > 0.0 && p < 1.0 && epsilonOf(p) > epsilon) p = Threshold.realized(nextProbability(p, false))
        pIn = p
        if (pIn >= 1.0) {
            throw Refuse.relation("epsilon_too_large", listOf("epsilon", "cells"), "epsilon=$epsilon is too large for cells=$cells: the window probability rounds to 1, so reports would not be private")
        }
        if (!(realizedEpsilon > 0)) {
            throw Refuse.relation(
                "epsilon_too_small", listOf("epsilon", "cells"),
                "epsilon=$epsilon is too small for cells=$cells: inside and outside cells are equally likely at the client's resolution, so reports carry no information",
            )
        }
        Checks.collectable(protocol, schema, cells.toLong())
    }

    override val realizedEpsilon: Double get() = epsilonOf(pIn)
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("cell", cells.toLong()))

    /** One cell of [x]: `B(φ)` rounds the grid point, then `B(p_in)` and `R(w)` or `R(G − w)`. */
    public fun cell(rng: RandomSource, x: Double): Long {
        val m = cells - window
        val u = unit(x) * m
        var k = minOf(Math.floor(u).toInt(), m)
        val frac = if (k < m) u - k else 0.0
        if (rng.bernoulli(frac)) k += 1
        if (rng.bernoulli(pIn)) return (k + rng.randbelow(window)).toLong()
        val r = rng.randbelow(cells - window)
        return (if (r < k) r else r + window).toLong()
    }

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): PiecewiseParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<PiecewiseParams> = Protocol("piecewise", "PiecewiseParams", ::PiecewiseParams, { p, o -> NumericEncoder(p, o) { rng, x -> listOf("cell" to p.cell(rng, x)) } })
    }
}

/** The hybrid mechanism: the Piecewise Mechanism with `α = realized(1 − e^{−ε/2})` above ε*, else Duchi's. */
public class HybridParams internal constructor(values: Map<String, Any?>) : NumericParams(values) {
    /** ε of one report, the range `[low, high]` of the values and whether a value outside it is clipped to it (else
     * refused), and the number of cells of the Piecewise grid. */
    @JvmOverloads
    public constructor(epsilon: Double, low: Double, high: Double, clip: Boolean = false, cells: Long = 1024) :
        this(linkedMapOf("epsilon" to epsilon, "low" to low, "high" to high, "clip" to clip, "cells" to cells))

    override val protocol: String get() = "hybrid"
    public val cells: Int = reader.int("cells")
    public val duchi: DuchiParams = DuchiParams(linkedMapOf("epsilon" to epsilon, "low" to low, "high" to high, "clip" to clip))
    public val alpha: Double = if (epsilon > HYBRID_THRESHOLD) Threshold.realized(-PyMath.expm1(-epsilon / 2)) else 0.0
    public val piecewise: PiecewiseParams by lazy { PiecewiseParams(linkedMapOf("epsilon" to epsilon, "low" to low, "high" to high, "clip" to clip, "cells" to cells.toLong())) }

    init {
        if (alpha > 0) piecewise.pIn
        Checks.collectable(protocol, schema, cells + 2L)
    }

    override val realizedEpsilon: Double get() = if (alpha > 0) maxOf(duchi.realizedEpsilon, piecewise.realizedEpsilon) else duchi.realizedEpsilon
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("pm", 2), PayloadField.uint("out", cells.toLong()))

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): HybridParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<HybridParams> = Protocol("hybrid", "HybridParams", ::HybridParams, { p, o ->
            NumericEncoder(p, o) { rng, x -> if (rng.bernoulli(p.alpha)) listOf("pm" to 1L, "out" to p.piecewise.cell(rng, x)) else listOf("pm" to 0L, "out" to p.duchi.bit(rng, x)) }
        })
    }
}

/** The encoder of a mean protocol: the checked number, then [payload]'s draws. */
public class NumericEncoder<P : NumericParams>(params: P, options: EncoderOptions, private val payload: (RandomSource, Double) -> List<Pair<String, Any>>) :
    Encoder<P, Double>(params, options) {
    override fun check(value: Any?): Double = params.checkValue(value)
    override fun draw(value: Double): Report = report(payload(rng, value))
}

/**
 * Memoized 1BitMean with α-point rounding (`memo-mean`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §4): `[low, high]`
 * in `buckets` equal buckets; a device's offset α (64 bits from its secret) rounds `x` to an edge `j`; the bit
 * `B(j/s) XOR B(q)` of each edge is memoized from the secret, each report flips it with a fresh `γ`.
 */
public class MemoMeanParams internal constructor(values: Map<String, Any?>) : NumericParams(values) {
    /** ε of one report, the range `[low, high]` of the values and whether a value outside it is clipped to it (else
     * refused), the number of equal buckets of the range and the per-report flip probability γ in `[0, 1/2)`. */
    @JvmOverloads
    public constructor(epsilon: Double, low: Double, high: Double, clip: Boolean = false, buckets: Long = 16, gamma: Double = 0.0) :
        this(linkedMapOf("epsilon" to epsilon, "low" to low, "high" to high, "clip" to clip, "buckets" to buckets, "gamma" to gamma))

    override val protocol: String get() = "memo-mean"
    public val buckets: Int = reader.int("buckets")

    /** The output flip probability γ, in `[0, 1/2)`. */
    public val gamma: Double = reader.double("gamma")

    /** The memoized bit's parameters. */
    public val memo: DuchiParams = DuchiParams(linkedMapOf("epsilon" to epsilon, "low" to low, "high" to high, "clip" to clip))

    init {
        Checks.collectable(protocol, schema, 2)
    }

    public val gammaRealized: Double get() = Threshold.realized(gamma)

    /** Realized `Pr[report = 1 | x = low]`: `γ + (1 − 2γ)·q_memo`. */
    public val q: Double get() = gammaRealized + (1.0 - 2.0 * gammaRealized) * memo.q
    override val realizedEpsilon: Double get() = PyMath.log1p((1.0 - 2.0 * q) / q)

    /** Every report of one rounded value together: the memoized bit's ε. */
    public val memoCap: PrivacyCost get() = memo.privacyCost
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("bit", 2))

    public companion object {
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): MemoMeanParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<MemoMeanParams> =
            Protocol("memo-mean", "MemoMeanParams", ::MemoMeanParams, { p, o -> MemoMeanEncoder(p, o) }, needsSecret = true)
    }
}

/** The `memo-mean` encoder. */
public class MemoMeanEncoder(params: MemoMeanParams, options: EncoderOptions) : MemoizedEncoder<MemoMeanParams, Int>(params, options) {
    /** The device's α-point offset: the first 64 bits of the keyed stream `(secret, "ldp/longitudinal/alpha/v1\0" ‖ fp)`. */
    private val alpha: Long = KeyedRandomSource(secret, Bytes.concat(Bytes.ascii("ldp/longitudinal/alpha/v1\u0000"), fp)).bits(64)

    /** The rounded value: the edge `j` in `[0, buckets]`. */
    override fun check(value: Any?): Int {
        val s = params.buckets
        val u = params.unit(params.checkValue(value)) * s
        val j0 = minOf(Math.floor(u).toInt(), s)
        val frac = if (j0 < s) u - j0 else 0.0
        val t = io.github.ldptelemetry.client.random.Threshold.of(frac)
        val up = t.full || ((alpha xor Long.MIN_VALUE) < (t.value xor Long.MIN_VALUE))
        return j0 + if (up) 1 else 0
    }

    override fun draw(value: Int): Report {
        val pr = params
        val bit = memoized(value.toLong()) { src -> if (src.bernoulli(value.toDouble() / pr.buckets) != src.bernoulli(pr.memo.q)) 1L else 0L }
        val g = pr.gammaRealized
        return report("bit" to if (g > 0) bit xor (if (rng.bernoulli(g)) 1L else 0L) else bit)
    }

    override fun charge(value: Int): Charge = memoizedCharge(value.toLong(), params.privacyCost, params.memoCap)
}
