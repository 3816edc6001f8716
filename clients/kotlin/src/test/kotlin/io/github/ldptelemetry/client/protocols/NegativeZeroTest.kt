package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.random.KeyedRandomSource
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * `-0.0` is `0.0` to Python (`-0.0 < 0.0` is false), and so to every numeric protocol here: values are compared with
 * edges and bounds by IEEE 754 (`<`), never by `Double.compareTo` (which orders `-0.0` below `0.0`). Each expected
 * bucket is Python's, from `ldp.encoders.histogram_buckets.bucket_index` and `HHParams` (noted per case); each report
 * of `-0.0` must be the report of `0.0` under the same random stream, and a memoized protocol's memo key the same.
 */
class NegativeZeroTest {
    private fun rng(tag: String) = KeyedRandomSource(ByteArray(32) { 5 }, Bytes.ascii(tag))

    /** The report of [value] by [protocol]'s encoder of [params] from a fixed stream (and secret). */
    private fun report(protocol: Protocol<*>, params: ProtocolParams, value: Any?): String =
        protocol.encoder(params, EncoderOptions(rng = rng("reports"), secret = ByteArray(32) { 9 })).encode(value).toJson()

    private fun charge(protocol: Protocol<*>, params: ProtocolParams, value: Any?): Charge =
        protocol.encoder(params, EncoderOptions(rng = rng("charges"), secret = ByteArray(32) { 9 })).prepare(value).charge

    private fun bucketParams(edges: List<Double>, clip: Boolean = false): List<Pair<Protocol<*>, ProtocolParams>> {
        val common = linkedMapOf<String, Any?>("epsilon" to 1.0, "edges" to edges, "clip" to clip)
        return listOf(
            BucketGRRParams.PROTOCOL to BucketGRRParams(common),
            BucketOUEParams.PROTOCOL to BucketOUEParams(common),
            DBitFlipParams.PROTOCOL to DBitFlipParams(LinkedHashMap(common).apply { put("d", 2L) }),
            MemoDBitFlipParams.PROTOCOL to MemoDBitFlipParams(LinkedHashMap(common).apply { put("d", 2L); put("gamma", 0.1) }),
        )
    }

    @Test
    fun `on a bucket edge and away from it, -0_0 falls in Python's bucket, with 0_0's report`() {
        // edges -> Python's bucket_index(edges, -0.0, False) (the same as for 0.0)
        val cases = listOf(
            listOf(0.0, 1.0, 2.0) to 0, // -0.0 on the lowest edge: in range (Double.compareTo said below it)
            listOf(-1.0, 0.0, 1.0, 2.0) to 1, // on an inner edge: the bucket that starts there
            listOf(-2.0, -1.0, 1.0, 2.0) to 1, // inside a bucket, away from any edge
            listOf(-2.0, -1.0, -0.0) to 1, // 0.0 on a top edge of -0.0: the last bucket, closed
        )
        for ((edges, python) in cases) {
            for ((protocol, params) in bucketParams(edges)) {
                val what = "${protocol.name} $edges"
                assertEquals(python, (params as BucketParams).bucketOf(-0.0), what)
                assertEquals(python, params.bucketOf(0.0), what)
                assertEquals(report(protocol, params, 0.0), report(protocol, params, -0.0), what)
                val zero = charge(protocol, params, 0.0)
                val negative = charge(protocol, params, -0.0)
                if (zero is Charge.Memoized) {
                    assertEquals(zero.keyHex, (negative as Charge.Memoized).keyHex, "$what: one memo key")
                } else {
                    assertEquals(zero, negative, what)
                }
            }
        }
    }

    @Test
    fun `outside the range, -0_0 is refused or clipped as 0_0 is`() {
        // Python: ValueError "value -0.0 is outside the histogram's range [1.0, 3.0] ..."; clipped: bucket 0
        for ((protocol, params) in bucketParams(listOf(1.0, 2.0, 3.0))) {
            val e = assertThrows(LdpValueException::class.java) { (params as BucketParams).bucketOf(-0.0) }
            assertEquals(RefusalCode.VALUE_RANGE, e.code, protocol.name)
            assertEquals(-0.0, e.fields["got"] as Double, protocol.name)
            assertTrue(1.0 / (e.fields["got"] as Double) < 0, "got keeps the sign of -0.0")
            assertEquals("value -0.0 is outside the histogram's range [1.0, 3.0] (set clip in the params to clip it)", e.message, protocol.name)
        }
        for ((protocol, params) in bucketParams(listOf(-3.0, -2.0, -1.0), clip = true)) {
            assertEquals(1, (params as BucketParams).bucketOf(-0.0), protocol.name) // Python: 1
            assertEquals(report(protocol, params, 0.0), report(protocol, params, -0.0), protocol.name)
        }
    }

    @Test
    fun `hh takes -0_0 at its low bound and on an inner edge`() {
        // Python: HHParams(low=0.0, high=1.0, branching=2, depth=2).edges == (0.0, 0.25, 0.5, 0.75, 1.0): -0.0 -> 0
        val atLow = HHParams(linkedMapOf("epsilon" to 1.0, "low" to 0.0, "high" to 1.0, "branching" to 2L, "depth" to 2L, "oracle" to "auto", "level_weights" to emptyList<Long>(), "clip" to false))
        assertEquals(0, atLow.bucketOf(-0.0))
        assertEquals(report(HHParams.PROTOCOL, atLow, 0.0), report(HHParams.PROTOCOL, atLow, -0.0))
        // Python: HHParams(low=-1.0, high=1.0, branching=2, depth=1).edges == (-1.0, 0.0, 1.0): -0.0 -> 1
        val inner = HHParams(linkedMapOf("epsilon" to 1.0, "low" to -1.0, "high" to 1.0, "branching" to 2L, "depth" to 1L, "oracle" to "grr", "level_weights" to emptyList<Long>(), "clip" to false))
        assertEquals(1, inner.bucketOf(-0.0))
        assertEquals(report(HHParams.PROTOCOL, inner, 0.0), report(HHParams.PROTOCOL, inner, -0.0))
        // -0.0 as the low bound: Python's edges are (0.0, 0.5, 1.0) (-0.0 + 0.0), and both zeros are in the first bucket
        val negativeLow = HHParams(linkedMapOf("epsilon" to 1.0, "low" to -0.0, "high" to 1.0, "branching" to 2L, "depth" to 1L, "oracle" to "grr", "level_weights" to emptyList<Long>(), "clip" to false))
        assertEquals(0, negativeLow.bucketOf(0.0))
        assertEquals(0, negativeLow.bucketOf(-0.0))
    }

    @Test
    fun `the mean protocols take -0_0 at a bound of 0_0, and clamp as Python's min and max do`() {
        val bounds = linkedMapOf<String, Any?>("epsilon" to 1.0, "low" to 0.0, "high" to 1.0, "clip" to false)
        val duchi = DuchiParams(bounds)
        // Python: DuchiParams(epsilon=1.0, low=0.0, high=1.0).check_value(-0.0) == -0.0 and unit(-0.0) is -0.0
        assertEquals(-0.0, duchi.checkValue(-0.0))
        assertEquals((-0.0).toRawBits(), duchi.unit(-0.0).toRawBits(), "max(-0.0, 0.0) is -0.0 in Python")
        assertEquals(report(DuchiParams.PROTOCOL, duchi, 0.0), report(DuchiParams.PROTOCOL, duchi, -0.0))
        val cells = LinkedHashMap(bounds).apply { put("cells", 16L) }
        for ((protocol, params) in listOf(PiecewiseParams.PROTOCOL to PiecewiseParams(cells), HybridParams.PROTOCOL to HybridParams(cells))) {
            assertEquals(report(protocol, params, 0.0), report(protocol, params, -0.0), protocol.name)
        }
        val memo = MemoMeanParams(LinkedHashMap(bounds).apply { put("buckets", 4L); put("gamma", 0.1) })
        assertEquals(report(MemoMeanParams.PROTOCOL, memo, 0.0), report(MemoMeanParams.PROTOCOL, memo, -0.0))
        assertEquals((charge(MemoMeanParams.PROTOCOL, memo, 0.0) as Charge.Memoized).keyHex, (charge(MemoMeanParams.PROTOCOL, memo, -0.0) as Charge.Memoized).keyHex)
        val clipped = DuchiParams(linkedMapOf("epsilon" to 1.0, "low" to 1.0, "high" to 2.0, "clip" to true))
        assertEquals(1.0, clipped.checkValue(-0.0))
        val refused = assertThrows(LdpValueException::class.java) { DuchiParams(linkedMapOf("epsilon" to 1.0, "low" to 1.0, "high" to 2.0, "clip" to false)).checkValue(-0.0) }
        assertEquals("duchi value -0.0 is outside [low, high] = [1.0, 2.0] (set clip in the params to clip instead)", refused.message)
        assertEquals(mapOf("got" to -0.0, "min" to 1.0, "max" to 2.0), refused.fields)
    }
}
