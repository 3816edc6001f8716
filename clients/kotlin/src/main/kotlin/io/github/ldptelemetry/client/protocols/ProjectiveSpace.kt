package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.protocols.HPGParams.Layout
import java.math.BigInteger

/**
 * The projective space `PG(t−1, q)` of Projective Geometry Response (`ldp/encoders/projective_space.py`): a point is a
 * line through the origin of `F_q^t` (`q` prime), named by its canonical vector, the nonzero vector on the line whose
 * first nonzero coordinate is 1. There are `P(t) = (q^t − 1)/(q − 1)` points, numbered by where the leading 1 sits,
 * rightmost first: a canonical vector whose leading 1 is at position `ℓ` (0-based, of `t`) has index `P(t−1−ℓ)` plus
 * its coordinates after `ℓ` read as a base-`q` number, most significant first (docs/conformance.md, `hpg`).
 *
 * Coordinates are [IntArray]s in `[0, q)`; every product and sum is taken in [Long], exactly (`q ≤ 65521`).
 */
internal object ProjectiveSpace {
    /** The largest field order taken: the largest prime below 2^16 (`MAX_FIELD`). */
    const val MAX_FIELD: Long = 65521

    /** `P(m) = (q^m − 1)/(q − 1)`, the points of `PG(m−1, q)` (0 for `m = 0`), as `P(m) = q·P(m−1) + 1`. Exact while
     * it fits a [Long], which every caller's bounds keep it to. */
    fun points(q: Long, m: Int): Long {
        var p = 0L
        repeat(m) { p = Math.addExact(Math.multiplyExact(p, q), 1L) }
        return p
    }

    /** Whether [q] is prime (trial division, as Python's `is_prime`). */
    fun isPrime(q: Long): Boolean {
        if (q < 2) return false
        var k = 2L
        while (k * k <= q) {
            if (q % k == 0L) return false
            k++
        }
        return true
    }

    /** Every prime up to [MAX_FIELD], increasing (a sieve of Eratosthenes, made once). */
    private val PRIMES: LongArray by lazy {
        val limit = MAX_FIELD.toInt()
        val composite = BooleanArray(limit + 1)
        var k = 2
        while (k * k <= limit) {
            if (!composite[k]) {
                var m = k * k
                while (m <= limit) {
                    composite[m] = true
                    m += k
                }
            }
            k++
        }
        (2..limit).filter { !composite[it] }.map { it.toLong() }.toLongArray()
    }

    /** The primes `≤ limit`, increasing (`primes_up_to`; [limit] at most [MAX_FIELD]). */
    fun primesUpTo(limit: Long): LongArray {
        require(limit <= MAX_FIELD) { "primes are sieved up to $MAX_FIELD, not $limit" }
        var n = java.util.Arrays.binarySearch(PRIMES, limit)
        n = if (n >= 0) n + 1 else -n - 1
        return PRIMES.copyOf(n)
    }

    /** The canonical vector (`t` coordinates) of point [index] in `[0, P(t))` (`point_vector`). */
    fun pointVector(index: Long, q: Long, t: Int): IntArray {
        var rest = index
        var lead = t - 1 // the leading 1's position; q^(t−1−lead) points have it there
        var size = 1L
        while (rest >= size) {
            rest -= size
            lead--
            size *= q
        }
        val vec = IntArray(t)
        vec[lead] = 1
        for (j in t - 1 downTo lead + 1) {
            vec[j] = (rest % q).toInt()
            rest /= q
        }
        return vec
    }

    /** The index of a canonical vector (its first nonzero coordinate 1) (`point_index`). */
    fun pointIndex(vec: IntArray, q: Long): Long {
        val lead = vec.indexOfFirst { it != 0 }
        var rest = 0L
        for (j in lead + 1 until vec.size) rest = rest * q + vec[j]
        return points(q, vec.size - 1 - lead) + rest
    }

    /** [vec] (nonzero) divided by its first nonzero coordinate, in place (`canonical`; the inverse by Fermat, `q`
     * prime); returned. */
    fun canonical(vec: IntArray, q: Long): IntArray {
        val lead = vec.indexOfFirst { it != 0 }
        val inverse = modPow(vec[lead].toLong(), q - 2, q)
        for (j in lead until vec.size) vec[j] = (vec[j] * inverse % q).toInt()
        return vec
    }

    /** `base^exp mod m` by squaring (operands below 2^16: every product fits a [Long]); `x^0 = 1 mod m`. */
    fun modPow(base: Long, exp: Long, m: Long): Long {
        var result = 1L % m
        var b = base % m
        var e = exp
        while (e > 0) {
            if (e and 1L == 1L) result = result * b % m
            b = b * b % m
            e = e shr 1
        }
        return result
    }

    /**
     * The [r]-th point (`r` in `[0, P(t−1))`) of the hyperplane `S_v = {u : ⟨u, v⟩ = 0}` of the canonical vector [v],
     * as a canonical vector (`hyperplane_point`): the canonical vector `w` of index `r` in `F_q^{t−1}`, a 0 inserted at
     * `v`'s leading position `i`, `u_i = −Σ_{j>i} v_j·u_j mod q`, canonicalized. A linear bijection of `F_q^{t−1}` onto
     * `v^⊥` maps lines to lines, so `r ↦ u` is a bijection onto `S_v`.
     */
    fun hyperplanePoint(v: IntArray, r: Long, q: Long): IntArray {
        val t = v.size
        val i = v.indexOfFirst { it != 0 }
        val w = pointVector(r, q, t - 1)
        val u = IntArray(t)
        System.arraycopy(w, 0, u, 0, i)
        System.arraycopy(w, i, u, i + 1, t - 1 - i)
        var sum = 0L
        for (j in i + 1 until t) sum += v[j].toLong() * u[j]
        u[i] = Math.floorMod(-sum, q).toInt()
        return canonical(u, q)
    }
}

/**
 * The layout of `pgr` and `hpg` (`ldp/encoders/projective_layout.py`): `t` from `q`, the blocks and `d`; the variance
 * of a rare value's estimate; the default layout, the feasible one of least variance, and when there is none the
 * least excess over the limits among the candidates (what the refusal names). The search reproduces Python's
 * float arithmetic operation for operation (the same `expm1`, the same order of operations and the same tie rule),
 * so that a spec leaving `q` (or `blocks`) out resolves to Python's values and fingerprint.
 */
internal object ProjectivePlanner {
    /** The most steps (`K·q·t`, the decoder's dynamic programme) a decode may take (`MAX_DECODE_WORK`). */
    const val MAX_DECODE_WORK: Long = 1L shl 32

    /** `t`: the smallest `t ≥ 2` with `blocks·P(t) ≥ d`. */
    fun dimension(q: Long, blocks: Long, d: Long): Int {
        var t = 2
        while (blocks * ProjectiveSpace.points(q, t) < d) t++
        return t
    }

    /** `K·q·t` (`K = blocks·P(t)`), exactly: beyond a [Long] for the largest refused layouts. */
    fun decodeWork(q: Long, t: Int, blocks: Long): BigInteger =
        BigInteger.valueOf(blocks) * BigInteger.valueOf(ProjectiveSpace.points(q, t)) * BigInteger.valueOf(q) * BigInteger.valueOf(t.toLong())

    /** `γ = K/(K + (e^ε − 1)·s)` before rounding (0 past ε = 700). */
    fun ownShare(epsilon: Double, order: Long, setSize: Long): Double =
        if (epsilon > 700.0) 0.0 else order / (order + PyMath.expm1(epsilon) * setSize)

    /** `Var[α·A + β·T]` of one user, `A ⊆ T` (`term_variance`). */
    private fun termVariance(a: Double, b: Double, pa: Double, pt: Double): Double =
        a * a * pa * (1.0 - pa) + b * b * pt * (1.0 - pt) + 2.0 * a * b * pa * (1.0 - pt)

    /**
     * Per-user `Var[ĉ_x]/n` of a value nobody holds in a full block, the other users spread evenly over the other
     * `d − 1` values, at the unrounded `γ` (`rare_variance`); infinite when `γ` is not strictly inside (0, 1).
     */
    fun rareVariance(epsilon: Double, q: Long, t: Int, blocks: Long, d: Long): Double {
        val b = ProjectiveSpace.points(q, t)
        val s = ProjectiveSpace.points(q, t - 1)
        val c = ProjectiveSpace.points(q, t - 2)
        val k = blocks * b
        val g = ownShare(epsilon, k, s)
        if (!(g > 0.0 && g < 1.0)) return Double.POSITIVE_INFINITY
        // coefficients: α = 1/((1−γ)(1 − c/s)), β = −α·c/s
        val alpha = 1.0 / ((1.0 - g) * (1.0 - c.toDouble() / s.toDouble()))
        val beta = -alpha * c / s
        // report classes: a user of another value of x's block, and of another block
        val uniformA = g * s / k
        val uniformT = g / blocks
        val same = termVariance(alpha, beta, uniformA + (1.0 - g) * c / s, uniformT + 1.0 - g)
        val other = termVariance(alpha, beta, uniformA, uniformT)
        val share = (minOf(b, d) - 1).toDouble() / (d - 1).toDouble()
        return share * same + (1 - share) * other
    }

    /** The field orders a default layout is chosen among (`field_candidates`): the primes `q ≤ 2(e^ε − 1) + 6` (the
     * best is near `e^ε + 1`), at most [ProjectiveSpace.MAX_FIELD], every prime up to it once the bound reaches it
     * (from ε ≈ 10.4; ε is taken at most 700, so the bound stays finite). */
    fun fieldCandidates(epsilon: Double): LongArray {
        val bound = 2.0 * PyMath.expm1(minOf(epsilon, 700.0)) + 6.0
        return ProjectiveSpace.primesUpTo(if (bound >= ProjectiveSpace.MAX_FIELD) ProjectiveSpace.MAX_FIELD else Math.floor(bound).toLong())
    }

    /** Whether a layout is within the aggregate's and the decoder's limits (`K` checked first: then `K·q·t` fits a
     * [Long]). */
    private fun feasible(q: Long, t: Int, blocks: Long): Boolean {
        val k = blocks * ProjectiveSpace.points(q, t)
        return k <= Checks.MAX_AGGREGATE_CELLS && k * q * t <= MAX_DECODE_WORK
    }

    /** What a `param_limit` refusal names when no layout is feasible: the [limit] passed, the least size reached
     * ([got]) and the limit's [max]. */
    data class Excess(val limit: String, val got: Long, val max: Long)

    /**
     * `least_excess`: when none of [layouts] is feasible, the fewest outputs `K` of any, against the aggregate's
     * limit, when every one has more; else the least decode work `K·q·t` among those within it, against
     * [MAX_DECODE_WORK]. [layouts] is not empty.
     */
    fun leastExcess(d: Long, layouts: List<Layout>): Excess {
        // (K, q·t) of each: K = h·P(t) fits a Long (h ≤ d ≤ 2^32, P(t) < q·d/h + 1)
        val sizes = layouts.map { (q, h) -> dimension(q, h, d).let { t -> h * ProjectiveSpace.points(q, t) to q * t } }
        val within = sizes.filter { (k, _) -> k <= Checks.MAX_AGGREGATE_CELLS }.map { (k, qt) -> k * qt } // below 2^50
        if (within.isEmpty()) return Excess("aggregate_cells", sizes.minOf { it.first }, Checks.MAX_AGGREGATE_CELLS)
        return Excess("decode_work", within.min(), MAX_DECODE_WORK)
    }

    /** The layout of least [rareVariance] among the feasible [layouts], the first on a near tie (a later one must be
     * below `best·(1 − 1e-12)`); the first feasible one when none has a finite variance (ε so large or so small that
     * `γ` is 0 or 1 for every one: its params then refuse ε as `epsilon_too_large` / `epsilon_too_small`); `null`
     * when none is feasible (Python's `_best`). */
    private fun best(epsilon: Double, d: Long, layouts: List<Layout>): Layout? {
        var best: Layout? = null
        var bestVar = Double.POSITIVE_INFINITY
        for (layout in layouts) {
            val (q, blocks) = layout
            val t = dimension(q, blocks, d)
            if (!feasible(q, t, blocks)) continue
            val v = rareVariance(epsilon, q, t, blocks, d)
            if (best == null || v < bestVar * (1 - 1e-12)) {
                best = layout
                bestVar = v
            }
        }
        return best
    }

    /** `pgr_layouts`: the `(q, 1)` [bestPgrField] chooses among. */
    fun pgrLayouts(epsilon: Double): List<Layout> = fieldCandidates(epsilon).map { Layout(it, 1L) }

    /** `best_pgr_field`: the candidate `q` of least variance (the smallest on a near tie) among the feasible ones
     * (the first feasible one when no variance is finite), `null` when none is feasible. */
    fun bestPgrField(epsilon: Double, d: Long): Long? = best(epsilon, d, pgrLayouts(epsilon))?.q

    /**
     * `hpg_layouts`: the `(q, h)` [bestHpgLayout] chooses among, `h ≥ 2`: for each candidate `q` (or the given one),
     * `h = ⌈d/P(t)⌉` for every `t ≥ 2` with `P(t) < d` and `P(t) ≤ 2^28` (or the given [blocks]), in increasing `q`
     * then `t`. Empty only when [q] is given and every block at it holds the whole domain.
     */
    fun hpgLayouts(epsilon: Double, d: Long, q: Long? = null, blocks: Long? = null): List<Layout> {
        val qs = if (q != null) longArrayOf(q) else fieldCandidates(epsilon)
        val layouts = ArrayList<Layout>()
        for (field in qs) {
            if (blocks != null) {
                layouts += Layout(field, blocks)
                continue
            }
            var t = 2
            while (true) {
                val b = ProjectiveSpace.points(field, t)
                if (b >= d || b > Checks.MAX_AGGREGATE_CELLS) break
                layouts += Layout(field, -Math.floorDiv(-d, b))
                t++
            }
        }
        return layouts.filter { it.blocks >= 2 }
    }

    /** `best_hpg_layout`: the [hpgLayouts] of least variance, the first on a near tie; the first feasible one when
     * no variance is finite; `null` when none is feasible. */
    fun bestHpgLayout(epsilon: Double, d: Long, q: Long? = null, blocks: Long? = null): Layout? =
        best(epsilon, d, hpgLayouts(epsilon, d, q, blocks))
}
