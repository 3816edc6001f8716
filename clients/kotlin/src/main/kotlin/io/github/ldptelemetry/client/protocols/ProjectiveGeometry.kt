package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.Threshold
import java.math.BigInteger

/**
 * What Projective Geometry Response (`pgr`) and its hybrid (`hpg`) share (Feldman, Nelson, Nguyen & Talwar, ICML 2022;
 * `ldp/encoders/projective_geometry.py`): the values are dealt into `h` blocks of `b = P(t)` points of `PG(t−1, q)`
 * ([ProjectiveSpace]; value `x` to block `⌊x/b⌋` as point `x mod b`; `h = 1` for `pgr`), `t ≥ 2` the smallest with
 * `h·b ≥ d`. A report is `j` in `[0, K)`, `K = h·b`: uniform with `γ = realized(K/(K + expm1(ε)·s))`, else uniform
 * on the value's own set, its hyperplane of `s = P(t−1)` points in its block. Charged `max(ε, ln(1 + K(1 − γ)/(γ·s)))`,
 * in exact rationals. Draws: `B(γ)`, then `R(K)` if true, `R(s)` if false (docs/conformance.md, `hpg`).
 */
public abstract class ProjectiveParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    public val epsilon: Double get() = asDouble(values["epsilon"])
    private val d: Long get() = values["domain_size"] as Long
    override val domainSize: Int get() = d.toInt()

    /** `q`, the field order: a prime (resolved when the parameters left it out). */
    public val q: Long get() = values["q"] as Long

    /** `h`, the number of blocks (1 for `pgr`). */
    public abstract val blocks: Long

    /** The values' names (null: values are indices). */
    public var labels: List<String>? = null
        private set

    /** `t`: points are lines of `F_q^t`. */
    public val dimension: Int by lazy { ProjectivePlanner.dimension(q, blocks, d) }

    /** `b = P(t)`: the points of one block (all of them for `pgr`). */
    public val blockPoints: Long by lazy { ProjectiveSpace.points(q, dimension) }

    /** `K = h·b`: reports are `j` in `[0, K)`. */
    public val order: Long get() = blocks * blockPoints

    /** `s = P(t−1)`: the points of a hyperplane, a value's own set. */
    public val setSize: Long by lazy { ProjectiveSpace.points(q, dimension - 1) }

    /** `c = P(t−2)`: the points two hyperplanes share. */
    public val overlap: Long by lazy { ProjectiveSpace.points(q, dimension - 2) }

    /** `γ`, the realized probability of the uniform branch. */
    public val gamma: Double by lazy { Threshold.realized(ProjectivePlanner.ownShare(epsilon, order, setSize)) }

    /** `ln(1 + K(1 − γ)/(γ·s))` of the realized γ, in exact rationals: the ratio of an output of one value's own set
     * outside another's. */
    public val effectiveEpsilon: Double by lazy {
        val g = Rational.of(gamma)
        val one = Rational.of(1L)
        (one + Rational.of(order) * (one - g) / (g * Rational.of(setSize))).logRatio()
    }
    override val privacyCost: PrivacyCost by lazy { PrivacyCost(pyMax(epsilon, effectiveEpsilon)) }
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("j", order))

    /** The index of a label or an int index. */
    public fun indexOf(value: Any?): Int = domainIndexOf(protocol, domainSize, labels, value)

    /** The report of the own-set branch: [value]'s block offset plus the index of the [r]-th point (`r` in
     * `[0, s)`) of its hyperplane (Python's `own_point`). */
    internal fun ownPoint(value: Long, r: Long): Long {
        val b = blockPoints
        val v = ProjectiveSpace.pointVector(value % b, q, dimension)
        return value / b * b + ProjectiveSpace.pointIndex(ProjectiveSpace.hyperplanePoint(v, r, q), q)
    }

    /** Python's `_check_layout`, then the labels and `check_collectable`, in that order: `q` a prime of
     * `[2, 65521]`, the decode within [MAX_DECODE_WORK] steps, `γ` strictly inside (0, 1). */
    internal fun checkLayout() {
        reader.long("q")
        if (!ProjectiveSpace.isPrime(q)) throw primeField(protocol, q)
        val work = ProjectivePlanner.decodeWork(q, dimension, blocks)
        if (work > BigInteger.valueOf(MAX_DECODE_WORK)) {
            throw Refuse.limit(
                "decode_work", if (work.bitLength() < 64) work.toLong() else work, MAX_DECODE_WORK,
                "$protocol with q=$q, t=$dimension and $blocks block(s) (K=${grouped(order)}) would take ${grouped(work)} " +
                    "steps to decode, over the limit of ${grouped(MAX_DECODE_WORK)}: choose another q" + if (blocks == 1L) " or hpg" else "",
            )
        }
        val fields = listOf("epsilon", "domain_size", "q")
        if (gamma <= 0.0) {
            throw Refuse.relation("epsilon_too_large", fields, "epsilon=${PyText.floatRepr(epsilon)} is too large for $protocol with q=$q: the uniform branch rounds to probability 0 at the client's resolution, so reports would not be private")
        }
        if (gamma >= 1.0) {
            throw Refuse.relation("epsilon_too_small", fields, "epsilon=${PyText.floatRepr(epsilon)} is too small for $protocol with q=$q: the uniform branch rounds to probability 1, so reports would carry no information")
        }
        labels = reader.labels(d)
        Checks.collectable(protocol, schema, order)
    }

    public companion object {
        /** The largest field order taken: the largest prime below 2^16, so that a product of two coordinates stays
         * below 2^32. */
        public const val MAX_FIELD: Long = ProjectiveSpace.MAX_FIELD

        /** The most steps (`K·q·t`) a server's decode of these reports may take. */
        public const val MAX_DECODE_WORK: Long = ProjectivePlanner.MAX_DECODE_WORK

        internal fun primeField(protocol: String, q: Long): IllegalArgumentException =
            Refuse.relation("prime_field", listOf("q"), "q=$q is not prime: $protocol needs the field F_q")

        /**
         * The refusal when no candidate layout ([layouts]: `pgr_layouts` or `hpg_layouts`) is feasible (Python's
         * `_no_layout`): `param_relation` `two_blocks` when there is none at all (`hpg`'s [q] given, every `t` at it
         * holding the whole domain in one block), else `param_limit` with the least excess
         * ([ProjectivePlanner.leastExcess]: `aggregate_cells` or `decode_work`).
         */
        internal fun noLayout(protocol: String, epsilon: Double, d: Long, q: Long?, layouts: List<HPGParams.Layout>): IllegalArgumentException {
            if (layouts.isEmpty()) {
                return Refuse.relation(
                    "two_blocks", listOf("domain_size", "q"),
                    "$protocol over F_$q holds domain_size=$d in one block at every t ≥ 2: give blocks, or use pgr",
                )
            }
            val (limit, got, max) = ProjectivePlanner.leastExcess(d, layouts)
            val what = if (limit == "aggregate_cells") "outputs" else "decode steps"
            return Refuse.limit(
                limit, got, max,
                "no $protocol layout at epsilon=${PyText.floatRepr(epsilon)} over domain_size=${grouped(d)} values stays within " +
                    "the limit of ${grouped(max)} $what (the least: ${grouped(got)})",
            )
        }

        /** Python's `f"{n:,}"`. */
        private fun grouped(n: Number): String = n.toString().reversed().chunked(3).joinToString(",").reversed()
    }
}

/**
 * Projective Geometry Response (`pgr`): the `d` values are the first `d` points of `PG(t−1, q)`, `K = P(t) ≥ d`
 * outputs, a value's own set its hyperplane ([ProjectiveParams]). Within about 2 % of the optimal variance in
 * `⌈log₂ K⌉` bits when `q ≈ e^ε + 1`, which [bestField] picks when `q` is left out.
 */
public class PGRParams private constructor(values: Map<String, Any?>, @Suppress("UNUSED_PARAMETER") resolved: Boolean) : ProjectiveParams(values) {
    /** ε of one report, the number of values `d`, the field order `q`, a prime (null: [bestField]) and the values'
     * names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, q: Long? = null, labels: List<String>? = null) :
        this(resolve(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "q" to q, "labels" to labels)), true)

    override val protocol: String get() = "pgr"
    override val blocks: Long get() = 1L

    init {
        reader.double("epsilon")
        reader.long("domain_size")
        checkLayout()
    }

    public companion object {
        /** [values] with `q` resolved (`null`: [bestField], after the checks that precede it). */
        private fun resolve(values: Map<String, Any?>): Map<String, Any?> {
            if (values["q"] != null) return values
            val reader = ParamReader("pgr", values)
            val epsilon = reader.double("epsilon")
            val d = reader.long("domain_size")
            val q = bestField(epsilon, d) ?: throw noLayout("pgr", epsilon, d, null, ProjectivePlanner.pgrLayouts(epsilon))
            return LinkedHashMap(values).apply { put("q", q) }
        }

        public val PROTOCOL: Protocol<PGRParams> = Protocol("pgr", "PGRParams", { PGRParams(resolve(it), true) }, { p, o -> ProjectiveEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): PGRParams = PROTOCOL.params(values)

        /** The prime `q ≤ 2(e^ε − 1) + 6` of least variance for a rare value among those within the limits (the
         * smallest on a near tie; the first within them when ε is so large or so small that no variance is finite),
         * or `null` when none is (Python's `best_pgr_field`). */
        @JvmStatic
        public fun bestField(epsilon: Double, domainSize: Long): Long? = ProjectivePlanner.bestPgrField(epsilon, domainSize)
    }
}

/**
 * Hybrid Projective Geometry Response (`hpg`): the values dealt into `h ≥ 2` blocks of `PG(t−1, q)` ([ProjectiveParams]),
 * a smaller field with more blocks keeping `K = h·P(t)` near `d` where `pgr`'s would inflate.
 */
public class HPGParams private constructor(values: Map<String, Any?>, @Suppress("UNUSED_PARAMETER") resolved: Boolean) : ProjectiveParams(values) {
    /** ε of one report, the number of values `d` (at least 4), the field order `q`, a prime, the number of blocks in
     * `[2, d]` (either null: the [bestLayout] with the other) and the values' names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, q: Long? = null, blocks: Long? = null, labels: List<String>? = null) :
        this(resolve(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "q" to q, "blocks" to blocks, "labels" to labels)), true)

    override val protocol: String get() = "hpg"
    override val blocks: Long get() = values["blocks"] as Long

    init {
        reader.double("epsilon")
        val d = reader.long("domain_size")
        reader.long("q")
        reader.long("blocks", dynamicMax = d)
        checkLayout()
    }

    /** A layout: the field order [q] and the number of [blocks]. */
    public data class Layout(val q: Long, val blocks: Long)

    public companion object {
        /** [values] with `q` and `blocks` resolved (either `null`: [bestLayout], after the checks that precede it). */
        private fun resolve(values: Map<String, Any?>): Map<String, Any?> {
            if (values["q"] != null && values["blocks"] != null) return values
            val reader = ParamReader("hpg", values)
            val epsilon = reader.double("epsilon")
            val d = reader.long("domain_size")
            val q = if (values["q"] != null) reader.long("q") else null
            val blocks = if (values["blocks"] != null) reader.long("blocks", dynamicMax = d) else null
            if (q != null && !ProjectiveSpace.isPrime(q)) throw primeField("hpg", q)
            val layout = bestLayout(epsilon, d, q, blocks)
                ?: throw noLayout("hpg", epsilon, d, q, ProjectivePlanner.hpgLayouts(epsilon, d, q, blocks))
            return LinkedHashMap(values).apply {
                put("q", layout.q)
                put("blocks", layout.blocks)
            }
        }

        public val PROTOCOL: Protocol<HPGParams> = Protocol("hpg", "HPGParams", { HPGParams(resolve(it), true) }, { p, o -> ProjectiveEncoder(p, o) })

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): HPGParams = PROTOCOL.params(values)

        /**
         * The layout of least variance for a rare value with at least two blocks among those within the limits, or
         * `null` when none is (Python's `best_hpg_layout`): for each prime `q ≤ 2(e^ε − 1) + 6` (or the given [q],
         * a prime) and each `t ≥ 2`, `⌈d/P(t)⌉` blocks (or the given [blocks]); the first on a near tie, in increasing
         * `q` then `t`; the first within the limits when ε is so large or so small that no variance is finite.
         */
        @JvmStatic
        @JvmOverloads
        public fun bestLayout(epsilon: Double, domainSize: Long, q: Long? = null, blocks: Long? = null): Layout? =
            ProjectivePlanner.bestHpgLayout(epsilon, domainSize, q, blocks)
    }
}

/** The `pgr` and `hpg` encoder: values are labels or indices in `[0, d)`. */
public class ProjectiveEncoder<P : ProjectiveParams>(params: P, options: EncoderOptions) : Encoder<P, Int>(params, options) {
    override fun check(value: Any?): Int = params.indexOf(value)

    override fun draw(value: Int): Report {
        if (rng.bernoulli(params.gamma)) return report("j" to rng.randbelow(params.order))
        return report("j" to params.ownPoint(value.toLong(), rng.randbelow(params.setSize)))
    }
}
