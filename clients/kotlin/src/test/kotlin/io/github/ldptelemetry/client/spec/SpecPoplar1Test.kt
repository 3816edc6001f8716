package io.github.ldptelemetry.client.spec

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.Refusal
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.SpecException
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.Vectors
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.list
import io.github.ldptelemetry.client.obj
import io.github.ldptelemetry.client.protocols.Poplar1Params
import java.io.File
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The spec's `poplar1` metric kind (issue 89, item 3) against the Python client: `conformance/specs/poplar1.json`
 * (written by `conformance/poplar1_spec_vectors.py`) replayed byte for byte as [SpecTrustTest] replays trust.json
 * (canonical form, fingerprint, trust, a record without its task refused `trust_model`, a refused spec's paths and
 * its `.trust` texts up to `, got`), and its measurements: each string's padded bytes, or Python's refusal code.
 * Then the rules on their own: the canonical params, each parameter's bounds, the one trust model it takes.
 */
class SpecPoplar1Test {
    private val file = File(Vectors.dir, "../specs/poplar1.json")

    private fun doc(): Map<String, Any?> {
        assertTrue(file.exists(), "$file is missing: python conformance/poplar1_spec_vectors.py writes it")
        return Json.parse(file.readText()).obj()
    }

    @Test
    fun `the vector file's specs give Python's canonical form, fingerprint, trust, record refusals and errors`() {
        val doc = doc()
        assertEquals(1L, doc["format"])
        val cases = doc["cases"].list().map { it.obj() }
        assertTrue(cases.any { "errors" in it } && cases.any { "fingerprint" in it })
        SpecVectorReplay.accepted(cases)
        SpecVectorReplay.refused(cases)
    }

    @Test
    fun `the vector file's measurements give the padded bytes, or Python's refusal code`() {
        val measurements = doc()["measurements"].list().map { it.obj() }
        assertTrue(measurements.any { "hex" in it } && measurements.any { "error" in it })
        for (m in measurements) {
            val bits = (m["bits"] as Long).toInt()
            val params = Poplar1Params(bits, 1, 2)
            val where = "$bits bits, ${Json.write(m["value"])}"
            if ("hex" in m) {
                assertEquals(m["hex"], Bytes.hex(params.measurement(m["value"])), where)
            } else {
                val e = assertThrows(IllegalArgumentException::class.java, { params.measurement(m["value"]) }, where)
                assertEquals(m["error"], (e as Refusal).code.code, "$where: ${e.message}")
            }
        }
    }

    private fun spec(metric: String) = """{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
        "metrics": {"m": $metric}}"""

    private fun poplar1(params: String = """{"bits": 64, "threshold": 20, "max_candidates": 1024}""", trust: String? = "two-aggregator") =
        spec("""{"protocol": "poplar1", "params": $params, "budget": {"per_report": 1.0}${trust?.let { """, "trust": "$it"""" } ?: ""}}""")

    private fun errors(text: String) = assertThrows(SpecException::class.java) { CollectionSpec.parse(text) }.errors

    @Test
    fun `the canonical params are the three ints, sorted, and the metric is two-aggregator`() {
        val spec = CollectionSpec.parse(poplar1("""{"max_candidates": 1024, "threshold": 20, "bits": 64}"""))
        assertTrue(spec.canonical().contains(""""m":{"budget":{"per_report":1.0},"params":{"bits":64,"max_candidates":1024,"threshold":20},"protocol":"poplar1","trust":"two-aggregator"}"""), spec.canonical())
        val p = spec.params("m") as Poplar1Params
        assertEquals(listOf(64L, 20L, 1024L, 8L), listOf(p.bits.toLong(), p.threshold, p.maxCandidates, p.length.toLong()))
        assertEquals(1.0, spec.reportCharge("m").epsilon)
        assertEquals(4L, spec.reportsPerWindow("m"))
        assertEquals(spec.fingerprint, CollectionSpec.parse(poplar1()).fingerprint) // key order does not matter
    }

    @Test
    fun `each parameter out of its bounds is an error at its path`() {
        val bad = mapOf(
            """{"bits": 12, "threshold": 1, "max_candidates": 2}""" to "bits", """{"bits": 0, "threshold": 1, "max_candidates": 2}""" to "bits",
            """{"bits": 264, "threshold": 1, "max_candidates": 2}""" to "bits", """{"bits": 64.0, "threshold": 1, "max_candidates": 2}""" to "bits",
            """{"bits": true, "threshold": 1, "max_candidates": 2}""" to "bits", """{"bits": "64", "threshold": 1, "max_candidates": 2}""" to "bits",
            """{"bits": 8, "threshold": 0, "max_candidates": 2}""" to "threshold", """{"bits": 8, "threshold": 1.5, "max_candidates": 2}""" to "threshold",
            """{"bits": 8, "threshold": 1, "max_candidates": 1}""" to "max_candidates",
            """{"bits": 8, "threshold": 1, "max_candidates": 1048577}""" to "max_candidates",
            """{"bits": 8, "threshold": 1, "max_candidates": false}""" to "max_candidates",
            """{"bits": 8, "threshold": 1, "max_candidates": 2, "epsilon": 1}""" to "epsilon",
            """{"bits": 8, "max_candidates": 2}""" to "threshold",
        )
        for ((params, name) in bad) {
            val errors = errors(poplar1(params))
            assertEquals(listOf("metrics.m.params.$name"), errors.map { it.substringBefore(": ") }, "$params: $errors")
        }
        for (ok in listOf("""{"bits": 8, "threshold": 1, "max_candidates": 2}""", """{"bits": 256, "threshold": 100000, "max_candidates": 1048576}""")) {
            CollectionSpec.parse(poplar1(ok))
        }
    }

    @Test
    fun `any trust but two-aggregator is an error at the trust path`() {
        for (trust in listOf(null, "local", "shuffle", "two-aggregator+local")) {
            val errors = errors(poplar1(trust = trust))
            assertEquals(1, errors.size, "$trust: $errors")
            assertEquals("metrics.m.trust: must be two-aggregator for poplar1 (its devices share the exact value: no local " +
                "randomizer), got \"${trust ?: "local"}\"", errors[0])
        }
        assertTrue(errors(poplar1(trust = "central"))[0].startsWith("metrics.m.trust: must be one of "))
    }

    @Test
    fun `without its task, a record is refused trust_model before its value is looked at, nothing spent`() {
        val client = TelemetryClient(CollectionSpec.parse(poplar1()), MemoryStore(), clock = { 1_764_000_000.0 })
        for (value in listOf("abc", "far too long a string", 5L, null)) {
            val e = assertThrows(LdpValueException::class.java) { client.record("m", value) }
            assertEquals(RefusalCode.TRUST_MODEL, e.code)
            assertEquals(mapOf("metric" to "m", "trust" to "two-aggregator"), e.fields)
        }
        assertEquals(0.0, client.spent("m").epsilon)
        assertEquals(0L, client.pending())
    }

    @Test
    fun `a value is its UTF-8 bytes padded with NULs, at most bits over 8, not ending in NUL`() {
        val p = Poplar1Params(32, 1, 2)
        assertEquals("61620000", Bytes.hex(p.measurement("ab")))
        assertEquals("c3a97a00", Bytes.hex(p.measurement("éz")))
        assertEquals("00000000", Bytes.hex(p.measurement("")))
        assertEquals("00610062", Bytes.hex(p.measurement(byteArrayOf(0, 0x61, 0, 0x62))))
        assertEquals("f09f9982", Bytes.hex(p.measurement("\uD83D\uDE42")))
        val refused = listOf(
            "abcde" to RefusalCode.VALUE_TOO_LONG, "ab\u0000" to RefusalCode.NOT_IN_ALPHABET, "ééé" to RefusalCode.VALUE_TOO_LONG,
            byteArrayOf(0x61, 0) to RefusalCode.NOT_IN_ALPHABET, "\uD83D" to RefusalCode.NOT_ENCODABLE, 5L to RefusalCode.VALUE_TYPE,
            true to RefusalCode.VALUE_TYPE, null to RefusalCode.VALUE_TYPE, 1.5 to RefusalCode.VALUE_TYPE, listOf("a") to RefusalCode.VALUE_TYPE,
        )
        for ((value, code) in refused) {
            val e = assertThrows(IllegalArgumentException::class.java) { p.measurement(value) }
            assertEquals(code, (e as Refusal).code, "$value: ${e.message}")
        }
    }
}
