package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpTypeException
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.Refusal
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.Vectors
import io.github.ldptelemetry.client.closeUlps
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.list
import io.github.ldptelemetry.client.obj
import io.github.ldptelemetry.client.random.RandomSource
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.File
import java.math.BigInteger

/**
 * What is specific to `pgr` and `hpg` (the vectors replay their draws, refusals and audits): the numbering of the
 * points of `PG(t−1, q)`, the bijection of `[0, P(t−1))` onto a hyperplane, the default layouts and their variances
 * equal to Python's over a grid, and Python's answers to params dicts (`conformance/layouts/projective.json`, written
 * by `conformance/layout_vectors.py`; the TypeScript and Rust clients check the same file): the resolved layout, or
 * the refusals of the layout (not prime, the decode's limit, the aggregate's limit, and no feasible layout: the least
 * excess or `two_blocks`; an ε no layout realizes, γ 0 or 1 for every one: the first feasible layout's
 * `epsilon_too_large` / `epsilon_too_small`; over the grid's points without a layout, the extreme ε and a few more).
 */
class ProjectiveGeometryTest {
    private val doc = Json.parse(File(Vectors.dir, "../layouts/projective.json").readText()).obj()

    private val spaces = listOf(2L to 2, 2L to 3, 2L to 5, 3L to 2, 3L to 3, 3L to 4, 5L to 3, 7L to 3, 11L to 2, 13L to 3)

    @Test
    fun `points are numbered rightmost leading 1 first, and index and vector are inverse`() {
        for ((q, t) in spaces) {
            val count = ProjectiveSpace.points(q, t)
            assertEquals((BigInteger.valueOf(q).pow(t) - BigInteger.ONE) / BigInteger.valueOf(q - 1), BigInteger.valueOf(count))
            val seen = HashSet<List<Int>>()
            for (i in 0 until count) {
                val v = ProjectiveSpace.pointVector(i, q, t)
                assertEquals(t, v.size)
                assertEquals(1, v.first { it != 0 }, "canonical: first nonzero coordinate 1")
                assertTrue(v.all { it in 0 until q })
                assertEquals(i, ProjectiveSpace.pointIndex(v, q), "q=$q t=$t point $i")
                assertTrue(seen.add(v.toList()), "distinct vectors")
            }
            // index 0 is (0, …, 0, 1); then q points (0, …, 1, *), *  = 0 … q−1; the last is (1, q−1, …, q−1)
            assertArrayEquals(IntArray(t) { if (it == t - 1) 1 else 0 }, ProjectiveSpace.pointVector(0, q, t))
            for (x in 0 until q) {
                assertArrayEquals(IntArray(t) { if (it == t - 2) 1 else if (it == t - 1) x.toInt() else 0 }, ProjectiveSpace.pointVector(1 + x, q, t))
            }
            assertArrayEquals(IntArray(t) { if (it == 0) 1 else (q - 1).toInt() }, ProjectiveSpace.pointVector(count - 1, q, t))
        }
        val big = ProjectiveSpace.MAX_FIELD
        for (i in listOf(0L, 1L, big - 1, big, ProjectiveSpace.points(big, 2) - 1)) {
            assertEquals(i, ProjectiveSpace.pointIndex(ProjectiveSpace.pointVector(i, big, 2), big))
        }
    }

    @Test
    fun `every r names a distinct point of the hyperplane, orthogonal to v`() {
        for ((q, t) in spaces) {
            val count = ProjectiveSpace.points(q, t)
            val s = ProjectiveSpace.points(q, t - 1)
            val all = (0 until count).map { ProjectiveSpace.pointVector(it, q, t) }
            for (v in all) {
                val orthogonal = all.indices.filter { j -> dot(all[j], v) % q == 0L }.map { it.toLong() }.toSet()
                assertEquals(s, orthogonal.size.toLong(), "a hyperplane has P(t−1) points")
                val image = (0 until s).map { r ->
                    val u = ProjectiveSpace.hyperplanePoint(v, r, q)
                    assertEquals(1, u.first { it != 0 }, "canonical")
                    assertEquals(0L, dot(u, v) % q, "<u, v> = 0 mod q")
                    ProjectiveSpace.pointIndex(u, q)
                }
                assertEquals(orthogonal, image.toSet(), "q=$q t=$t v=${v.toList()}: r ↦ u is onto the hyperplane")
                assertEquals(image.size, image.toSet().size, "and one to one")
            }
        }
    }

    private fun dot(u: IntArray, v: IntArray): Long = u.indices.sumOf { u[it].toLong() * v[it] }

    @Test
    fun `primes are the sieve's and the candidates stop at 2(e^ε − 1) + 6`() {
        val primes = ProjectiveSpace.primesUpTo(ProjectiveSpace.MAX_FIELD)
        assertEquals(6542, primes.size)
        assertEquals(ProjectiveSpace.MAX_FIELD, primes.last())
        assertTrue(primes.all { ProjectiveSpace.isPrime(it) })
        assertEquals(listOf(2L, 3L, 5L, 7L), ProjectiveSpace.primesUpTo(10).toList())
        assertEquals(listOf(2L, 3L, 5L, 7L), ProjectivePlanner.fieldCandidates(1.0).toList()) // 2(e − 1) + 6 = 9.44
        assertEquals(ProjectiveSpace.primesUpTo(28).toList(), ProjectivePlanner.fieldCandidates(2.5).toList()) // 2(e^2.5 − 1) + 6 = 28.4
        for (epsilon in listOf(10.4, 10.5, 19.9, 20.0, 25.0, 40.0, 700.0, 701.0, 1e300)) {
            assertEquals(6542, ProjectivePlanner.fieldCandidates(epsilon).size, "every prime from ε ≈ 10.4 on (ε = $epsilon)")
        }
        assertEquals(6500, ProjectivePlanner.fieldCandidates(10.39).size) // 2(e^10.39 − 1) + 6 = 65,069.3
    }

    /** A variance of the fixture: `null` is an infinite one (no γ strictly inside (0, 1)). */
    private fun variance(v: Any?): Double = v as Double? ?: Double.POSITIVE_INFINITY

    /** The rare-value variance of `q` and `blocks` over `d` values at `epsilon`. */
    private fun rareVariance(epsilon: Double, d: Long, q: Long, blocks: Long): Double =
        ProjectivePlanner.rareVariance(epsilon, q, ProjectivePlanner.dimension(q, blocks, d), blocks, d)

    @Test
    fun `default layouts and their variances are Python's`() {
        val pgr = doc["pgr"].list().map { it.list() } // [epsilon, domain_size, q, variance]
        assertTrue(pgr.size > 1500)
        val pgrDiffs = pgr.filter { (e, d, q, v) ->
            val got = PGRParams.bestField(e as Double, d as Long)
            got != q || got != null && rareVariance(e, d, got, 1) != variance(v)
        }
        assertTrue(pgrDiffs.isEmpty(), "best_pgr_field differs at ${pgrDiffs.take(10)}")
        val hpg = doc["hpg"].list().map { it.list() } // [epsilon, domain_size, q, blocks, layout, variance]
        assertTrue(hpg.size > 2000)
        val hpgDiffs = hpg.filter { row ->
            val (e, d, q, blocks, want) = row
            val got = HPGParams.bestLayout(e as Double, d as Long, q as Long?, blocks as Long?)
            got?.let { listOf(it.q, it.blocks) } != want || got != null && rareVariance(e, d, got.q, got.blocks) != variance(row[5])
        }
        assertTrue(hpgDiffs.isEmpty(), "best_hpg_layout differs at ${hpgDiffs.take(10)}")
        assertTrue(pgr.any { it[2] == null } && hpg.any { it[4] == null }, "the grid reaches past every feasible layout")
        assertTrue(pgr.any { it[0] == 40.0 && it[2] != null }, "and past ε = 20, where every prime is a candidate")
    }

    @Test
    fun `other layouts' variances and large hyperplanes' points are Python's`() {
        val variances = doc["variances"].list().map { it.list() } // [epsilon, q, t, blocks, domain_size, variance]
        assertTrue(variances.size > 300)
        for (row in variances) {
            val (e, q, t, blocks, d) = row
            val got = ProjectivePlanner.rareVariance(e as Double, q as Long, (t as Long).toInt(), blocks as Long, d as Long)
            assertEquals(variance(row[5]), got, "ε=$e q=$q t=$t h=$blocks d=$d")
        }
        val hyperplanes = doc["hyperplanes"].list().map { row -> row.list().map { it as Long } } // [q, t, point, r, index]
        assertTrue(hyperplanes.size >= 100)
        for ((q, t, point, r, index) in hyperplanes) {
            val v = ProjectiveSpace.pointVector(point, q, t.toInt())
            val u = ProjectiveSpace.hyperplanePoint(v, r, q)
            assertEquals(0L, dot(u, v) % q, "q=$q t=$t point=$point r=$r")
            assertEquals(index, ProjectiveSpace.pointIndex(u, q), "q=$q t=$t point=$point r=$r")
        }
    }

    @Test
    fun `params are resolved and refused as Python does`() {
        val cases = doc["params"].list().map { it.obj() }
        val kinds = cases.mapNotNull { c -> c["error"]?.obj()?.let { it["code"] to it["fields"].obj().let { f -> f["limit"] ?: f["rule"] } } }.toSet()
        val layoutKinds = setOf(
            "param_limit" to "aggregate_cells", "param_limit" to "decode_work", "param_relation" to "two_blocks",
            "param_relation" to "epsilon_too_large", "param_relation" to "epsilon_too_small",
        )
        assertTrue(kinds.containsAll(layoutKinds), "$kinds")
        for (c in cases) {
            val where = "${c["protocol"]} ${c["given"]}"
            @Suppress("UNCHECKED_CAST") val given = c["given"] as Map<String, Any?>
            val protocol = if (c["protocol"] == "pgr") PGRParams.PROTOCOL else HPGParams.PROTOCOL
            val want = c["error"]?.obj()
            if (want == null) {
                val p = protocol.params(given) as ProjectiveParams
                assertEquals(c["resolved"], p.toDict(), where)
                assertEquals(c["fingerprint"], p.fingerprint, where)
                assertEquals(listOf(c["t"], c["order"], c["set_size"]), listOf(p.dimension.toLong(), p.order, p.setSize), where)
                assertEquals(c["gamma"], p.gamma, where)
                assertEquals(c["effective_epsilon"], p.effectiveEpsilon, where)
                assertTrue(closeUlps(c["cost"] as Double, p.privacyCost.epsilon), where)
                continue
            }
            val e = assertThrows(IllegalArgumentException::class.java, { protocol.params(given) }, where)
            assertEquals(want["type"], if (e is LdpTypeException) "TypeError" else if (e is LdpValueException) "ValueError" else e.javaClass.name, where)
            assertEquals(want["code"], (e as Refusal).code.code, "$where: ${e.message}")
            assertEquals(want["fields"], e.fields, "$where: ${e.message}")
        }
    }

    @Test
    fun `no layout is refused with the numbers in the message`() {
        // the constructors refuse as read() does, with the numbers in the message
        val cells = refusal { PGRParams(1.0, 1L shl 28) }
        assertEquals(mapOf("limit" to "aggregate_cells", "got" to 305_175_781L, "max" to (1L shl 28)), cells.fields)
        assertTrue(cells.message!!.contains("268,435,456 outputs (the least: 305,175,781)"), cells.message)
        val work = refusal { PGRParams(8.0, 1L shl 26) }
        assertEquals(mapOf("limit" to "decode_work", "got" to 7_069_666_240L, "max" to (1L shl 32)), work.fields)
        assertTrue(work.message!!.contains("4,294,967,296 decode steps (the least: 7,069,666,240)"), work.message)
        assertEquals(mapOf("limit" to "aggregate_cells", "got" to 536_870_912L, "max" to (1L shl 28)), refusal { HPGParams(1.0, 1L shl 29) }.fields)
        val oneBlock = refusal { HPGParams(1.0, 5, 5) }
        assertEquals(RefusalCode.PARAM_RELATION, oneBlock.code)
        assertEquals(mapOf("params" to listOf("domain_size", "q"), "rule" to "two_blocks"), oneBlock.fields)
        assertEquals(HPGParams.Layout(5, 2), HPGParams(1.0, 5, 5, 2).let { HPGParams.Layout(it.q, it.blocks) }, "blocks given: no search")
        val line = HPGParams(1.0, 9, 7)
        assertEquals(listOf(7L, 2L), listOf(line.q, line.blocks), "q + 1 < d: two blocks of a line")

        // no variance finite (γ 0 or 1 for every candidate): the first feasible layout, then ε refused for what it is
        assertEquals(2L, PGRParams.bestField(701.0, 1000))
        assertEquals(HPGParams.Layout(2, 7), HPGParams.bestLayout(701.0, 20))
        assertEquals(2L, PGRParams.bestField(1e-300, 1000))
        assertEquals(3L, PGRParams.bestField(1e-15, 1000), "a finite variance still wins over an infinite first one")
        val epsilonFields = listOf("epsilon", "domain_size", "q")
        val large = refusal { PGRParams(701.0, 1000) }
        assertEquals(RefusalCode.PARAM_RELATION, large.code)
        assertEquals(mapOf("params" to epsilonFields, "rule" to "epsilon_too_large"), large.fields)
        assertTrue(large.message!!.startsWith("epsilon=701.0 is too large for pgr with q=2:"), large.message)
        val largeHpg = refusal { HPGParams(701.0, 20) }
        assertEquals(mapOf("params" to epsilonFields, "rule" to "epsilon_too_large"), largeHpg.fields)
        assertTrue(largeHpg.message!!.startsWith("epsilon=701.0 is too large for hpg with q=2:"), largeHpg.message)
        val tiny = refusal { PGRParams(1e-300, 1000) }
        assertEquals(mapOf("params" to epsilonFields, "rule" to "epsilon_too_small"), tiny.fields)
        assertTrue(tiny.message!!.startsWith("epsilon=1e-300 is too small for pgr with q=2:"), tiny.message)
        assertEquals("epsilon_too_small", refusal { HPGParams(1e-30, 20) }.fields["rule"])
        assertEquals("epsilon_too_large", refusal { PGRParams.read(mapOf("epsilon" to 1e300, "domain_size" to 13L)) }.fields["rule"])
        // none feasible at all: still the least excess
        assertEquals(mapOf("limit" to "aggregate_cells", "got" to 4_309_527_640L, "max" to (1L shl 28)), refusal { PGRParams(701.0, 1L shl 32) }.fields)
    }

    @Test
    fun `omitted parameters resolve to the default layout, with its fingerprint`() {
        val pgr = PGRParams(6.0, 1024)
        assertEquals(401L, pgr.q)
        assertEquals(161203L, pgr.order)
        assertEquals(PGRParams(6.0, 1024, 401), pgr)
        assertEquals(PGRParams.read(mapOf("epsilon" to 6.0, "domain_size" to 1024L, "q" to null)).fingerprint, pgr.fingerprint)
        val hpg = HPGParams(8.0, 65536)
        assertEquals(listOf(23L, 119L, 65807L), listOf(hpg.q, hpg.blocks, hpg.order))
        assertEquals(0.47920280196505965, hpg.gamma)
        assertEquals(HPGParams(8.0, 65536, 23, 119), hpg)
        assertEquals(HPGParams.bestLayout(8.0, 65536, q = 23)!!.blocks, HPGParams(8.0, 65536, q = 23).blocks)
        assertEquals(HPGParams.bestLayout(8.0, 65536, blocks = 119)!!.q, HPGParams(8.0, 65536, blocks = 119).q)
    }

    private fun refusal(make: () -> ProtocolParams): LdpValueException = assertThrows(LdpValueException::class.java) { make() }

    @Test
    fun `layouts are refused as Python refuses them`() {
        val notPrime = refusal { PGRParams(1.0, 13, 4) }
        assertEquals(RefusalCode.PARAM_RELATION, notPrime.code)
        assertEquals(mapOf("params" to listOf("q"), "rule" to "prime_field"), notPrime.fields)
        for (blocks in listOf(null, 2L)) { // before the search, and in the layout's checks
            assertEquals(mapOf("params" to listOf("q"), "rule" to "prime_field"), refusal { HPGParams(1.0, 20, 4, blocks) }.fields)
        }
        assertEquals("blocks", refusal { HPGParams(1.0, 20, 4, 30) }.fields["param"], "blocks' range before q's primality")

        val work = refusal { PGRParams(1.0, 1L shl 32, 65521) } // K·q·t past a Long
        assertEquals(RefusalCode.PARAM_LIMIT, work.code)
        assertEquals(mapOf("limit" to "decode_work", "got" to BigInteger("73720570633874236816"), "max" to (1L shl 32)), work.fields)
        assertEquals(8586133924L, refusal { PGRParams(1.0, 20000, 65521) }.fields["got"])
        assertEquals(1687716242896338L, refusal { HPGParams(1.0, 1L shl 32, 65521, 2) }.fields["got"])
        assertEquals(mapOf("limit" to "aggregate_cells", "got" to 5_230_176_601L, "max" to (1L shl 28)), refusal { PGRParams(1.0, 1L shl 32) }.fields, "no layout")
        assertEquals(mapOf("limit" to "aggregate_cells", "got" to (1L shl 32), "max" to (1L shl 28)), refusal { HPGParams(1.0, 1L shl 32) }.fields, "no layout")
        val cells = refusal { HPGParams(1.0, 300_000_000, 2, 100_000_000) } // within the decode's limit, not the aggregate's
        assertEquals(mapOf("limit" to "aggregate_cells", "got" to 300_000_000L, "max" to (1L shl 28)), cells.fields)

        val small = refusal { PGRParams(1e-30, 13, 3) }
        assertEquals(mapOf("params" to listOf("epsilon", "domain_size", "q"), "rule" to "epsilon_too_small"), small.fields)
        assertEquals("epsilon_too_large", refusal { PGRParams(701.0, 13, 3) }.fields["rule"])
        assertEquals("epsilon_too_small", refusal { HPGParams(1e-30, 20, 3, 2) }.fields["rule"])
    }

    /** A source whose every Bernoulli is false and every `randbelow` a given value: the own-set branch at [r]. */
    private class OwnBranch(val r: Long) : RandomSource() {
        override fun bits(k: Int): Long = throw UnsupportedOperationException()
        override fun wideBits(k: Int, into: LongArray): Unit = throw UnsupportedOperationException()
        override fun tokenBytes(n: Int): ByteArray = throw UnsupportedOperationException()
        override fun bernoulli(p: Double): Boolean = false
        override fun randbelow(n: Long): Long = r
    }

    @Test
    fun `the own-set branch reports the r-th point of the value's hyperplane in its block`() {
        val params = HPGParams(3.0, 20, 3, 2) // two blocks of PG(2, 3): b = 13, s = 4
        assertEquals(listOf(3L, 13L, 4L, 26L), listOf(params.dimension.toLong(), params.blockPoints, params.setSize, params.order))
        for (x in 0 until 20) {
            val own = (0L until 4L).map { r -> ProjectiveEncoder(params, EncoderOptions(rng = OwnBranch(r))).encode(x.toLong())["j"] as Long }
            val block = x / 13
            val v = ProjectiveSpace.pointVector((x % 13).toLong(), 3, 3)
            assertTrue(own.all { it / 13 == block.toLong() }, "in the value's block")
            assertTrue(own.all { dot(ProjectiveSpace.pointVector(it % 13, 3, 3), v) % 3 == 0L }, "on its hyperplane")
            assertEquals(4, own.toSet().size)
        }
    }
}
