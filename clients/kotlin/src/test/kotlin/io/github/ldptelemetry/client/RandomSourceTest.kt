package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.random.SecureRandomSource
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The default source (the OS CSPRNG through [SecureRandomSource]) gives the primitives their laws: each frequency
 * within 5 standard errors of its probability (a false alarm about once in 3·10^6 runs per check); the replayed
 * streams of `primitives.json` fix the draw order, this fixes the byte-to-integer mapping of the real source.
 */
class RandomSourceTest {
    private val rng = SecureRandomSource()

    private fun within(count: Long, n: Long, p: Double, what: String) {
        val se = Math.sqrt(n * p * (1 - p))
        assertTrue(Math.abs(count - n * p) <= 5 * se, "$what: $count of $n, expected ${n * p} ± ${5 * se}")
    }

    @Test
    fun `bernoulli, bernoulliBits and randbelow have their laws`() {
        val n = 200_000L
        within((0 until n).count { rng.bernoulli(0.3) }.toLong(), n, 0.3, "B(0.3)")
        within((0 until n).count { rng.bernoulli(1e-3) }.toLong(), n, 1e-3, "B(0.001)")
        val lanes = LongArray(130)
        repeat(20_000) { for (i in rng.bernoulliBits(0.1, 130).setBits()) lanes[i]++ }
        for ((i, c) in lanes.withIndex()) within(c, 20_000, 0.1, "BB(0.1, 130) lane $i")
        val faces = LongArray(6)
        repeat(n.toInt()) { faces[rng.randbelow(6)]++ }
        for ((f, c) in faces.withIndex()) within(c, n, 1.0 / 6, "R(6) face $f")
        val words = LongArray(2)
        repeat(1000) {
            rng.wideBits(70, words)
            assertEquals(0L, words[1] ushr 6, "bits above k are zero")
        }
        assertEquals(32, rng.tokenBytes(32).size)
    }
}
