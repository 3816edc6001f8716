package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpTypeException
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.RefusalCode
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test

/** A typed parameter class (`GRRParams`, the pattern for the others) built from its properties is the one a spec's
 * `params` object gives, and refuses what the spec path refuses. */
class TypedParamsTest {
    @Test
    fun `typed GRR params are the spec's`() {
        val typed = GRRParams(1.0, 3)
        val read = Protocols["grr"]!!.paramsOf(mapOf("epsilon" to 1L, "domain_size" to 3L))
        assertEquals(read.fingerprint, typed.fingerprint)
        assertEquals(read, typed)
        assertEquals(1.0, typed.epsilon)
        assertEquals(3, typed.domainSize)
        assertNull(typed.labels)
        val labeled = GRRParams(2.0, 2, listOf("no", "yes"))
        assertEquals(1, labeled.indexOf("yes"))
        assertEquals(
            Protocols["grr"]!!.paramsOf(mapOf("epsilon" to 2.0, "domain_size" to 2L, "labels" to listOf("no", "yes"))).fingerprint,
            labeled.fingerprint,
        )
        assertEquals(mapOf("epsilon" to 1.0, "domain_size" to 3L, "labels" to null), typed.toDict())
    }

    @Test
    fun `typed GRR params refuse as the spec path does`() {
        val range = assertThrows(LdpValueException::class.java) { GRRParams(-1.0, 3) }
        assertEquals(RefusalCode.PARAM_RANGE, range.code)
        assertEquals(mapOf("param" to "epsilon", "got" to -1.0, "min" to 0L, "min_exclusive" to true, "finite" to true), range.fields)
        val domain = assertThrows(LdpValueException::class.java) { GRRParams(1.0, 1) }
        assertEquals(mapOf("param" to "domain_size", "got" to 1L, "min" to 2L, "max" to (1L shl 32)), domain.fields)
        val large = assertThrows(LdpValueException::class.java) { GRRParams(1e300, 3) }
        assertEquals(RefusalCode.PARAM_RELATION, large.code)
        assertEquals(mapOf("params" to listOf("epsilon", "domain_size"), "rule" to "epsilon_too_large"), large.fields)
        val labels = assertThrows(LdpValueException::class.java) { GRRParams(1.0, 3, listOf("a", "b")) }
        assertEquals(RefusalCode.PARAM_LENGTH, labels.code)
        val type = assertThrows(LdpTypeException::class.java) { Protocols["grr"]!!.paramsOf(mapOf("epsilon" to "1", "domain_size" to 3L)) }
        assertEquals(mapOf("param" to "epsilon", "expected" to "float", "got" to "string"), type.fields)
    }
}
