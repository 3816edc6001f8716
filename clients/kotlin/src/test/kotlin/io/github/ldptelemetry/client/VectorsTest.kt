package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.protocols.Charge
import io.github.ldptelemetry.client.protocols.EncoderOptions
import io.github.ldptelemetry.client.protocols.Protocols
import io.github.ldptelemetry.client.protocols.envelopeJson
import io.github.ldptelemetry.client.random.ReplaySource
import io.github.ldptelemetry.client.spec.CollectionSpec
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assertions.fail
import org.junit.jupiter.api.DynamicContainer
import org.junit.jupiter.api.DynamicNode
import org.junit.jupiter.api.DynamicTest.dynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory

/**
 * Every vector file of `conformance/vectors` is replayed byte for byte by a protocol of this client, or is on the
 * one declared [Protocols.NOT_YET] list (docs/kotlin-client.md prints it): a new vector file with neither fails.
 */
class VectorsTest {
    @Test
    fun `every vector file is replayed or declared not yet`() {
        val files = Vectors.protocols()
        val missing = files.filter { Protocols[it] == null && it !in Protocols.NOT_YET }
        assertTrue(missing.isEmpty(), "vector files with no Kotlin replay and not on Protocols.NOT_YET: $missing")
        val stale = Protocols.NOT_YET.filter { Protocols[it] != null || it !in files }
        assertTrue(stale.isEmpty(), "Protocols.NOT_YET names protocols implemented here or with no vector file: $stale")
        val unknown = Protocols.names.filter { it !in files }
        assertTrue(unknown.isEmpty(), "protocols with no vector file: $unknown")
    }

    @TestFactory
    fun vectors(): List<DynamicNode> = Vectors.protocols().filter { Protocols[it] != null }.map { name ->
        val doc = Vectors.load(name)
        DynamicContainer.dynamicContainer(
            name,
            listOf(
                dynamicTest("params, canonical JSON, fingerprints and costs") { params(name, doc) },
                dynamicTest("the spec's canonical form and fingerprint") { spec(doc) },
                dynamicTest("every case replayed gives its lines byte for byte") { cases(doc) },
                dynamicTest("parameter refusals have Python's type, code and fields") { paramRefusals(name, doc) },
                dynamicTest("value refusals have Python's type, code and fields") { valueRefusals(doc) },
            ),
        )
    }

    private fun params(name: String, doc: Map<String, Any?>) {
        val protocol = Protocols[name]!!
        for (item in doc["params"].list().map { it.obj() }) {
            val params = protocol.paramsOf(item["params"])
            assertEquals(item["canonical"], PyText.canonicalJson(mapOf("protocol" to name, "params" to params.canonicalDict())))
            assertEquals(item["fingerprint"], params.fingerprint)
            val cost = item["privacy_cost"].obj()
            assertTrue(closeUlps(params.privacyCost.epsilon, cost["epsilon"] as Double), "ε ${params.privacyCost.epsilon} vs ${cost["epsilon"]}")
            assertTrue(closeUlps(params.privacyCost.delta, cost["delta"] as Double), "δ ${params.privacyCost.delta} vs ${cost["delta"]}")
        }
    }

    private fun spec(doc: Map<String, Any?>) {
        val spec = CollectionSpec.fromDict(doc["spec"])
        assertEquals(doc["spec_canonical"], spec.canonical())
        assertEquals(doc["spec_fingerprint"], spec.fingerprint)
    }

    private fun costOf(o: Any?): PrivacyCost = o.obj().let { PrivacyCost(it["epsilon"] as Double, it["delta"] as Double) }

    private fun close(a: PrivacyCost, b: PrivacyCost) = closeUlps(a.epsilon, b.epsilon) && closeUlps(a.delta, b.delta)

    private fun cases(doc: Map<String, Any?>) {
        val spec = CollectionSpec.fromDict(doc["spec"])
        for ((i, c) in doc["cases"].list().map { it.obj() }.withIndex()) {
            val metric = c["metric"] as String
            val params = spec.params(metric)
            val rng = ReplaySource(c["draws"].list().map { d -> d.list().let { (it[0] as Long).toInt() to it[1] as String } })
            var secret: ByteArray? = null
            if (c["device_secret"] != null) {
                secret = Bytes.metricSecret(Bytes.fromHex(c["device_secret"] as String), metric)
                assertEquals(c["metric_secret"], Bytes.hex(secret))
            }
            val cohort = (c["cohort"] as Long?)?.toInt()
            val encoder = spec.metric(metric).protocol.encoder(params, EncoderOptions(rng = rng, secret = secret, cohort = cohort))
            var epoch = -1L
            var last: Any? = null
            for ((j, r) in c["reports"].list().map { it.obj() }.withIndex()) {
                val where = "case $i report $j (value ${Json.write(r["value"])})"
                val prepared = encoder.prepare(r["value"])
                val want = r["charge"].obj()
                var reportEpoch: Long? = null
                when (val charge = prepared.charge) {
                    is Charge.Plain -> assertTrue(close(charge.cost, costOf(want)), "$where: charge ${charge.cost} vs $want")
                    is Charge.Memoized -> {
                        assertEquals(want["memo_key"], charge.keyHex, where)
                        assertTrue(close(charge.first, costOf(want["first"])), "$where: first")
                        assertTrue(close(charge.then, costOf(want["then"])), "$where: then")
                        assertTrue(close(charge.cap, costOf(want["cap"])), "$where: cap")
                    }
                    is Charge.Change -> {
                        assertEquals(want["change_stream"], charge.streamHex, where)
                        assertEquals(want["change_value"], charge.valueHex, where)
                        assertTrue(close(charge.cost, costOf(want["cost"])), "$where: cost")
                        if (charge.valueHex != last) epoch++
                        last = charge.valueHex
                        reportEpoch = epoch
                    }
                }
                val line = envelopeJson(spec.fingerprint, metric, c["window"] as Long, prepared.randomize(reportEpoch))
                assertEquals(r["line"], line, where)
            }
            assertEquals(0, rng.remaining(), "case $i: every recorded draw consumed")
        }
    }

    /** The refusal [e] matches the vector's [error]: the same kind (TypeError: [LdpTypeException], ValueError:
     * [LdpValueException]), the same code and the same fields, deep-equal as JSON values (the JSON reader keeps an int
     * token a Long and a float token a Double, so `-1` and `-1.0` differ, as the vectors mean). Messages are this
     * client's own and are not compared. */
    private fun assertRefusal(error: Map<String, Any?>, e: Throwable, where: String) {
        val type = when (e) {
            is LdpTypeException -> "TypeError"
            is LdpValueException -> "ValueError"
            else -> "${e.javaClass.name} (not a refusal): ${e.message}"
        }
        val got = mapOf("type" to type, "code" to (e as? Refusal)?.code?.code, "fields" to (e as? Refusal)?.fields)
        val want = mapOf("type" to error["type"], "code" to error["code"], "fields" to error["fields"])
        assertEquals(want, got, "$where (message: ${e.message})")
        assertEquals(RefusalCode.fromCode(error["code"] as String), (e as Refusal).code, where)
    }

    /** Runs [check] on each item, then fails naming every item that failed (the first few in full). */
    private fun <T> eachOf(items: List<T>, check: (T) -> Unit) {
        val failures = items.mapNotNull { item ->
            try {
                check(item)
                null
            } catch (e: AssertionError) {
                e.message
            }
        }
        if (failures.isNotEmpty()) fail<Unit>("${failures.size} of ${items.size} refusals differ:\n" + failures.take(12).joinToString("\n"))
    }

    private fun paramRefusals(name: String, doc: Map<String, Any?>) {
        val protocol = Protocols[name]!!
        eachOf(doc["refusals"].obj()["params"].list().map { it.obj() }) { item ->
            val error = item["error"]?.obj()
            if (error != null) {
                try {
                    protocol.paramsOf(item["params"])
                    fail<Unit>("accepted ${item["params"]}, Python refuses it: $error")
                } catch (e: IllegalArgumentException) {
                    assertRefusal(error, e, "params ${Json.write(item["params"])}")
                }
            } else {
                assertEquals(item["fingerprint"], protocol.paramsOf(item["params"]).fingerprint, "params ${item["params"]}")
            }
        }
    }

    private fun valueRefusals(doc: Map<String, Any?>) {
        val spec = CollectionSpec.fromDict(doc["spec"])
        eachOf(doc["refusals"].obj()["values"].list().map { it.obj() }) { item ->
            val metric = spec.metric(item["metric"] as String)
            val protocol = metric.protocol
            val options = EncoderOptions(
                secret = if (protocol.needsSecret) byteArrayOf(115) else null,
                cohort = if (protocol.assignedCohorts(metric.params) > 0) 0 else null,
            )
            val encoder = protocol.encoder(metric.params, options)
            val error = item["error"].obj()
            try {
                encoder.prepare(item["value"])
                fail<Unit>("accepted value ${Json.write(item["value"])}, Python refuses it: $error")
            } catch (e: IllegalArgumentException) {
                assertRefusal(error, e, "value ${Json.write(item["value"])}")
            }
        }
    }
}
