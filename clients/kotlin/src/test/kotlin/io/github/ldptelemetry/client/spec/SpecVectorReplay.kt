package io.github.ldptelemetry.client.spec

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.Refusal
import io.github.ldptelemetry.client.SpecException
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.list
import io.github.ldptelemetry.client.obj
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue

/**
 * The replay of a spec vector file's cases (a file of `conformance/specs/`, in the format of
 * `conformance/spec_vectors.py`), shared by [SpecTrustTest] and [SpecPoplar1Test]: a refused spec's errors at the
 * same paths in the same order, each `.trust` error with Python's text up to its `, got` (the value after it in this
 * client's notation); an accepted spec's canonical form, fingerprint and trust per metric byte for byte, and each
 * record refused as Python's client refuses it (a two-aggregator metric without its task: `trust_model`), the
 * outbox's count after.
 */
object SpecVectorReplay {
    private const val CLOCK = 1_764_000_000.0

    private fun beforeGot(message: String) = message.split(", got ")[0]

    /** [e] is the refusal [error] (`type`, `code`, `fields`) of a two-aggregator metric's record. */
    fun assertRefusal(error: Map<String, Any?>, e: Throwable, where: String) {
        assertTrue(e is LdpValueException, "$where: ${e.javaClass.name}: ${e.message}")
        assertEquals("ValueError", error["type"], where)
        assertEquals(error["code"], (e as Refusal).code.code, "$where: ${e.message}")
        assertEquals(error["fields"], e.fields, where)
        assertTrue(e.message!!.contains("two-aggregator"), e.message)
    }

    /** Every refused case of [cases]: the same paths, and the `.trust` errors Python's texts. */
    fun refused(cases: List<Map<String, Any?>>) {
        for (c in cases.filter { "errors" in it }) {
            val name = c["name"] as String
            val errors = assertThrows(SpecException::class.java, { CollectionSpec.fromDict(c["spec"]) }, name).errors
            val got = errors.map { it.substringBefore(": ") to it.substringAfter(": ") }
            val want = c["errors"].list().map { it.obj() }
            assertEquals(want.map { it["path"] }, got.map { it.first }, "$name: $errors")
            for ((i, w) in want.withIndex()) {
                val path = w["path"] as String
                if (!path.endsWith(".trust")) continue
                val message = w["message"] as String
                assertEquals(beforeGot(message), beforeGot(got[i].second), "$name: $path")
                assertEquals(message.contains(", got "), got[i].second.contains(", got "), "$name: ${got[i].second}")
            }
        }
    }

    /** Every accepted case of [cases]: canonical form, fingerprint, trust, records and what is pending after. */
    fun accepted(cases: List<Map<String, Any?>>) {
        for (c in cases.filter { "fingerprint" in it }) {
            val name = c["name"] as String
            val spec = CollectionSpec.fromDict(c["spec"], name)
            assertEquals(c["canonical"], spec.canonical(), name)
            assertEquals(c["fingerprint"], spec.fingerprint, name)
            assertEquals(c["trust"], spec.metrics.mapValues { it.value.trust.value }, name)
            if ("pending" !in c) continue
            val client = TelemetryClient(spec, MemoryStore(), clock = { CLOCK })
            for ((i, r) in c["records"].list().map { it.obj() }.withIndex()) {
                val where = "$name: record $i (${r["metric"]}, ${r["value"]})"
                val error = r["error"]?.obj()
                if (error == null) {
                    client.record(r["metric"] as String, r["value"])
                } else {
                    assertRefusal(error, assertThrows(IllegalArgumentException::class.java, { client.record(r["metric"] as String, r["value"]) }, where), where)
                }
            }
            c["record_many"]?.obj()?.let { many ->
                val items = many["items"].list().map { it.list().let { (m, v) -> m as String to v } }
                val error = many["error"]?.obj()
                if (error == null) {
                    client.recordMany(items)
                } else {
                    assertRefusal(error, assertThrows(IllegalArgumentException::class.java, { client.recordMany(items) }, name), "$name: recordMany")
                }
            }
            assertEquals(c["pending"], client.pending(), name)
        }
    }
}
