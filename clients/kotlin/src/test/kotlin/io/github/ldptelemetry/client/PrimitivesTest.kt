package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.random.KeyedRandomSource
import io.github.ldptelemetry.client.random.ReplaySource
import io.github.ldptelemetry.client.random.Threshold
import java.math.BigInteger
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/** `primitives.json`: the laws below every protocol (draws, the keyed stream, hashes, number and text forms). */
class PrimitivesTest {
    private val doc = Vectors.load("primitives")
    private val draws = doc["draws"].obj()
    private val hashes = doc["hashes"].obj()

    private fun replay(item: Map<String, Any?>) = ReplaySource(item["draws"].list().map { d -> d.list().let { (it[0] as Long).toInt() to it[1] as String } })

    @Test
    fun `float repr of 400 doubles`() {
        for (f in doc["floats"].list().map { it.obj() }) {
            val x = java.lang.Double.longBitsToDouble(java.lang.Long.parseUnsignedLong(f["bits"] as String, 16))
            assertEquals(f["repr"], PyText.floatRepr(x), f["bits"] as String)
        }
    }

    @Test
    fun `canonical json`() {
        for (t in doc["texts"].obj()["canonical_json"].list().map { it.obj() }) assertEquals(t["canonical"], PyText.canonicalJson(t["value"]))
    }

    @Test
    fun thresholds() {
        for (t in draws["thresholds"].list().map { it.obj() }) {
            val th = Threshold.of(t["p"] as Double)
            val got = if (th.full) BigInteger.ONE.shiftLeft(64) else BigInteger(th.value.toULong().toString())
            assertEquals(t["threshold"], got.toString(16), "p=${t["p"]}")
        }
    }

    @Test
    fun bernoulli() {
        for (t in draws["bernoulli"].list().map { it.obj() }) {
            val rng = replay(t)
            assertEquals(t["result"], rng.bernoulli(t["p"] as Double), "p=${t["p"]}")
            assertEquals(0, rng.remaining())
        }
    }

    @Test
    fun `bernoulli bits`() {
        for (t in draws["bernoulli_bits"].list().map { it.obj() }) {
            val rng = replay(t)
            val k = (t["k"] as Long).toInt()
            val mask = rng.bernoulliBits(t["p"] as Double, k)
            var big = BigInteger.ZERO
            for (i in mask.setBits()) big = big.setBit(i)
            assertEquals(t["result"], big.toString(16), "p=${t["p"]} k=$k")
            assertEquals(0, rng.remaining())
        }
    }

    @Test
    fun randbelow() {
        for (t in draws["randbelow"].list().map { it.obj() }) {
            val rng = replay(t)
            assertEquals(t["result"], rng.randbelow(t["n"] as Long), "n=${t["n"]}")
            assertEquals(0, rng.remaining())
        }
    }

    @Test
    fun `token bytes`() {
        for (t in draws["token_bytes"].list().map { it.obj() }) {
            val rng = replay(t)
            assertEquals(t["result"], Bytes.hex(rng.tokenBytes((t["n"] as Long).toInt())))
            assertEquals(0, rng.remaining())
        }
    }

    @Test
    fun `keyed stream`() {
        for (t in doc["keyed"].list().map { it.obj() }) {
            val src = KeyedRandomSource(Bytes.fromHex(t["key"] as String), Bytes.fromHex(t["message"] as String))
            t["randbits"]?.list()?.forEach { call ->
                val (k, hex) = call.list().let { (it[0] as Long).toInt() to it[1] as String }
                val words = LongArray((k + 63) / 64)
                src.wideBits(k, words)
                var big = BigInteger.ZERO
                for (w in words.indices.reversed()) big = big.shiftLeft(64).or(BigInteger(words[w].toULong().toString()))
                assertEquals(hex, big.toString(16), "randbits($k)")
            }
            t["bernoulli_bits"]?.list()?.forEach { call ->
                val c = call.list()
                val mask = src.bernoulliBits(c[0] as Double, (c[1] as Long).toInt())
                var big = BigInteger.ZERO
                for (i in mask.setBits()) big = big.setBit(i)
                assertEquals(c[2], big.toString(16))
            }
        }
    }

    @Test
    fun murmur3() {
        for (t in hashes["murmur3_x86_32"].list().map { it.obj() }) {
            assertEquals(t["hash32"], Bytes.murmur3(Bytes.fromHex(t["data"] as String), t["seed"] as Long))
        }
    }

    @Test
    fun `md5 buckets`() {
        for (t in hashes["md5_buckets"].list().map { it.obj() }) {
            val digest = Bytes.md5(Bytes.fromHex(t["data"] as String))
            val k = (t["k"] as Long).toInt()
            val got = (0 until (t["h"] as Long).toInt()).map { ((digest[it].toInt() and 0xff) % k).toLong() }
            assertEquals(t["buckets"], got)
        }
    }

    @Test
    fun `value bytes and metric secrets`() {
        for (t in hashes["value_bytes"].list().map { it.obj() }) assertEquals(t["bytes"], Bytes.hex(Bytes.valueBytes(t["value"])))
        for (t in hashes["metric_secret"].list().map { it.obj() }) {
            assertEquals(t["secret"], Bytes.hex(Bytes.metricSecret(Bytes.fromHex(t["device_secret"] as String), t["metric"] as String)))
        }
    }
}
