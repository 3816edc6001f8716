package io.github.ldptelemetry.client.spec

import io.github.ldptelemetry.client.SpecException
import io.github.ldptelemetry.client.Vectors
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.list
import io.github.ldptelemetry.client.obj
import java.io.File
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The spec's per-metric `otel` against the Python client (`conformance/specs/otel.json`, written by
 * `conformance/otel_vectors.py`): the same canonical form and fingerprint byte for byte, the same normalized mapping
 * per metric, and a refused spec's errors at the same paths in the same order, each `.otel` error with Python's text
 * up to its `, got` (the whole text when it has none; the value after it in this client's notation).
 */
class SpecOtelTest {
    private val doc = Json.parse(File(Vectors.dir, "../specs/otel.json").readText()).obj()
    private val cases = doc["cases"].list().map { it.obj() }

    private fun beforeGot(message: String) = message.split(", got ")[0]

    private fun spec(otel: String, protocol: String = "grr", params: String = """{"epsilon": 1, "domain_size": 3}""") = """{"spec_version": 1,
        "name": "app", "budget": {"per_window": 40, "lifetime": 400},
        "metrics": {"m": {"protocol": "$protocol", "params": $params, "budget": {"per_report": 10}, "otel": $otel}}}"""

    @Test
    fun `the fixture has accepted and refused specs`() {
        assertEquals(1L, doc["format"])
        assertTrue(cases.any { "errors" in it } && cases.any { "fingerprint" in it })
        assertEquals(listOf("counter", "updown_counter", "histogram", "gauge"), OtelKind.entries.map { it.value })
        assertEquals(listOf("any", "sum", "last", "mean", "bucket", "attribute"), OtelValue.entries.map { it.value })
    }

    @Test
    fun `refused specs give the same paths, and the otel errors Python's texts`() {
        var checked = 0
        for (c in cases.filter { "errors" in it }) {
            val name = c["name"] as String
            val errors = assertThrows(SpecException::class.java, { CollectionSpec.fromDict(c["spec"]) }, name).errors
            val got = errors.map { it.substringBefore(": ") to it.substringAfter(": ") }
            val want = c["errors"].list().map { it.obj() }
            assertEquals(want.map { it["path"] }, got.map { it.first }, "$name: $errors")
            for ((i, w) in want.withIndex()) {
                val path = w["path"] as String
                if (!path.endsWith(".otel") && !path.contains(".otel.")) continue
                val message = w["message"] as String
                assertEquals(beforeGot(message), beforeGot(got[i].second), "$name: $path")
                assertEquals(message.contains(", got "), got[i].second.contains(", got "), "$name: ${got[i].second}")
                checked++
            }
        }
        assertTrue(checked > 100, "$checked otel errors checked")
    }

    @Test
    fun `accepted specs give Python's canonical form, fingerprint and mappings`() {
        for (c in cases.filter { "fingerprint" in it }) {
            val name = c["name"] as String
            val spec = CollectionSpec.fromDict(c["spec"], name)
            assertEquals(c["canonical"], spec.canonical(), name)
            assertEquals(c["fingerprint"], spec.fingerprint, name)
            assertEquals(c["otel"], spec.metrics.mapValues { it.value.otel?.toDict() }, name)
        }
    }

    @Test
    fun `the parsed mapping, its key and its categories`() {
        val labelled = CollectionSpec.parse(
            spec(
                """{"instrument": "UI.Screen.Views", "kind": "counter", "value": "attribute", "attribute": "screen"}""",
                params = """{"epsilon": 1, "domain_size": 3, "labels": ["home", "search", "profile"]}""",
            ),
        ).metric("m")
        val otel = labelled.otel!!
        assertEquals(OtelSource("UI.Screen.Views", OtelKind.COUNTER, OtelValue.ATTRIBUTE, attribute = "screen"), otel)
        assertEquals("ui.screen.views", otel.key)
        assertEquals(listOf("home", "search", "profile"), otel.categories(labelled.params))
        val named = CollectionSpec.parse(
            spec("""{"instrument": "a", "kind": "histogram", "value": "attribute", "attribute": "x", "values": ["p", "q", "r"]}"""),
        ).metric("m")
        assertEquals(listOf("p", "q", "r"), named.otel!!.categories(named.params))
        val bucket = CollectionSpec.parse(spec("""{"instrument": "a", "kind": "histogram", "value": "bucket", "buckets": [1, 2.5]}""")).metric("m")
        assertEquals(listOf(1.0, 2.5), bucket.otel!!.buckets)
        assertNull(bucket.otel!!.categories(bucket.params))
        assertEquals(OtelValueClass.CATEGORY, OtelValueClass.of("grr"))
        assertNull(OtelValueClass.of("multi"))
    }

    @Test
    fun `bucket bounds are compared exactly, as Python compares an int and a float`() {
        // 2^53 as a float, then 2^53 + 1 as an int: increasing for Python (not as doubles), both 2^53 once normalized
        val ok = CollectionSpec.parse(
            spec("""{"instrument": "a", "kind": "histogram", "value": "bucket", "buckets": [9007199254740992.0, 9007199254740993]}"""),
        )
        assertEquals(listOf(9007199254740992.0, 9007199254740992.0), ok.metric("m").otel!!.buckets)
        assertTrue(ok.canonical().contains("\"buckets\":[9007199254740992.0,9007199254740992.0]"), ok.canonical())
        for (bad in listOf("[9007199254740993, 9007199254740992.0]", "[1, 1e999]", "[1, ${"9".repeat(400)}]")) {
            val errors = assertThrows(SpecException::class.java) {
                CollectionSpec.parse(spec("""{"instrument": "a", "kind": "histogram", "value": "bucket", "buckets": $bad}"""))
            }.errors
            assertEquals(1, errors.size, "$bad: $errors")
            assertTrue(errors[0].startsWith("metrics.m.otel.buckets: must be "), errors[0])
        }
    }

    @Test
    fun `a spec without otel keeps its fingerprint`() {
        val without = CollectionSpec.parse(spec("null").replace(""", "otel": null""", ""))
        assertNull(without.metric("m").otel)
        assertTrue("otel" !in without.canonical())
        val with = CollectionSpec.parse(spec("""{"instrument": "a", "kind": "counter", "value": "attribute", "attribute": "x", "values": ["a", "b", "c"]}"""))
        assertTrue(with.fingerprint != without.fingerprint)
    }
}
