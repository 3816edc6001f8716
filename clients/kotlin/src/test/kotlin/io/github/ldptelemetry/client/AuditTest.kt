package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.audit.PrivacyAudit
import io.github.ldptelemetry.client.protocols.EncoderOptions
import io.github.ldptelemetry.client.protocols.GRRParams
import io.github.ldptelemetry.client.protocols.Protocols
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.DynamicTest.dynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory

/**
 * The exact privacy audit of every Kotlin encoder: each audit configuration of the vectors (small enough to
 * enumerate every outcome of every draw) runs through the encoder's real code with an enumerating source; the worst
 * likelihood ratio over the outputs must equal the ε the Python audit attains (`audits[].epsilon`) and never exceed
 * the claimed cost.
 */
class AuditTest {
    @TestFactory
    fun audits(): List<DynamicTest> = Protocols.names.map { name ->
        dynamicTest(name) {
            val protocol = Protocols[name]!!
            val audits = Vectors.load(name)["audits"].list().map { it.obj() }
            assertTrue(audits.isNotEmpty())
            for (item in audits) {
                val params = protocol.paramsOf(item["params"])
                val result = PrivacyAudit.audit(item["inputs"].list()) { x, src ->
                    val options = if (protocol.needsSecret) {
                        EncoderOptions(rng = src, secret = SECRET, prrRng = src, cohort = if (protocol.assignedCohorts(params) > 0) 0 else null)
                    } else {
                        EncoderOptions(rng = src)
                    }
                    protocol.encoder(params, options).encode(x).toJson()
                }
                assertTrue(result.matches(item["epsilon"] as Double), "${item["params"]}: audited ${result.epsilon}, Python's audit ${item["epsilon"]}")
                assertTrue(result.epsilon <= params.privacyCost.epsilon * (1 + 1e-9), "never above the claimed cost")
                assertTrue(result.outputs >= 2, "more than one output")
            }
        }
    }

    @Test
    fun `the audit can fail - a GRR that leaks its value has infinite epsilon`() {
        val params = GRRParams.PROTOCOL.params(mapOf("epsilon" to 1.0, "domain_size" to 3L))
        val leaky = PrivacyAudit.audit(listOf(0L, 1L, 2L)) { x, src ->
            src.randbelow(2)
            "index=$x"
        }
        assertEquals(Double.POSITIVE_INFINITY, leaky.epsilon)
        val honest = PrivacyAudit.audit(listOf(0L, 1L, 2L)) { x, src -> GRRParams.PROTOCOL.encoder(params, EncoderOptions(rng = src)).encode(x).toJson() }
        assertTrue(honest.matches(params.privacyCost.epsilon))
        // a GRR keeping its value a little more often than it claims is caught
        val greedy = PrivacyAudit.audit(listOf(0L, 1L, 2L)) { x, src ->
            val keep = src.bernoulli(params.p + 0.01)
            "index=" + if (keep) x else ((x as Long) + 1 + src.randbelow(2)) % 3
        }
        assertTrue(greedy.epsilon > params.privacyCost.epsilon * 1.01)
    }

    private companion object {
        val SECRET = "audit".toByteArray()
    }
}
