package io.github.ldptelemetry.client.spec

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.SpecException
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.Vectors
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.list
import io.github.ldptelemetry.client.obj
import java.io.File
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The spec's per-metric `trust` against the Python client (`conformance/specs/trust.json`, written by
 * `conformance/spec_vectors.py`): the same canonical form and fingerprint byte for byte, the same trust per metric,
 * the same refusal of a record (a two-aggregator metric: `trust_model`), and a refused spec's errors at the same
 * paths in the same order, each `.trust` error with Python's text up to its `, got` (the value after it in this
 * client's notation).
 */
class SpecTrustTest {
    private val doc = Json.parse(File(Vectors.dir, "../specs/trust.json").readText()).obj()
    private val cases = doc["cases"].list().map { it.obj() }
    private val clock = { 1_764_000_000.0 }

    @Test
    fun `the fixture has accepted and refused specs`() {
        assertEquals(1L, doc["format"])
        assertTrue(cases.any { "errors" in it } && cases.any { "fingerprint" in it })
        assertEquals(listOf("local", "shuffle", "two-aggregator", "two-aggregator+local"), TrustModel.entries.map { it.value })
    }

    @Test
    fun `refused specs give the same paths, and the trust errors Python's texts`() = SpecVectorReplay.refused(cases)

    @Test
    fun `accepted specs give Python's canonical form, fingerprint, trust and refusals of a record`() = SpecVectorReplay.accepted(cases)

    @Test
    fun `pgr and hpg fit Prio3, so take the two-aggregator modes, and olh does not`() {
        fun spec(protocol: String, params: String, trust: String) = """{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
            "metrics": {"m": {"protocol": "$protocol", "params": $params, "budget": {"per_report": 1}, "trust": "$trust"}}}"""
        for (trust in listOf("two-aggregator", "two-aggregator+local")) {
            for ((protocol, params) in listOf("pgr" to """{"epsilon": 1, "domain_size": 13, "q": 3}""", "hpg" to """{"epsilon": 1, "domain_size": 100}""")) {
                assertEquals(trust, CollectionSpec.parse(spec(protocol, params, trust)).metric("m").trust.value, protocol)
            }
            val errors = assertThrows(SpecException::class.java) { CollectionSpec.parse(spec("olh", """{"epsilon": 1, "domain_size": 4}""", trust)) }.errors
            assertEquals(listOf("metrics.m.trust: olh does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): no two-aggregator mode for it"), errors)
        }
    }

    @Test
    fun `a two-aggregator metric is refused before its value is looked at, with nothing spent`() {
        val spec = CollectionSpec.parse(
            """{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
            "metrics": {"m": {"protocol": "oue", "params": {"epsilon": 1, "domain_size": 3}, "budget": {"per_report": 1}, "trust": "two-aggregator"}}}""",
        )
        assertEquals(TrustModel.TWO_AGGREGATOR, spec.metric("m").trust)
        val client = TelemetryClient(spec, MemoryStore(), clock = clock)
        for (value in listOf(0L, 7L, "x", null)) {
            val e = assertThrows(LdpValueException::class.java) { client.record("m", value) }
            assertEquals(RefusalCode.TRUST_MODEL, e.code)
            assertEquals(mapOf("metric" to "m", "trust" to "two-aggregator"), e.fields)
        }
        val e = assertThrows(LdpValueException::class.java) { client.recordMany(listOf("m" to 1L)) }
        assertEquals(RefusalCode.TRUST_MODEL, e.code)
        assertTrue(e.message!!.startsWith("recordMany item 0 (\"m\"): "), e.message)
        assertEquals(0.0, client.spent("m").epsilon)
        assertEquals(0L, client.pending())
    }
}
