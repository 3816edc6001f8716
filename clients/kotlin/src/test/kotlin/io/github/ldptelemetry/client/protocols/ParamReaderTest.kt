package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpTypeException
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.RefusalCode
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The generic reader of the generated tables ([ParamReader] over [ParamTables]): for every row of every protocol, a
 * value just outside each static bound is refused with `param_range` and exactly the bounds of the first range (in
 * the table's order) it fails, the bound itself (or the nearest value inside) is accepted when it passes every range,
 * each choice is taken and anything else refused naming them, and a value of the wrong type is refused with
 * `param_type`. A dynamic bound (`d` at most the number of buckets) is the one the protocol gives.
 */
class ParamReaderTest {
    private val dynamicMax = 1_000L

    /** Whether [x] passes [r] (the test's own reading of a range: strict where exclusive, NaN failing). */
    private fun passes(r: ParamRange, x: Double): Boolean {
        val max = if (r.dynamic != null) dynamicMax.toDouble() else r.max?.toDouble()
        if (r.finite && !x.isFinite()) return false
        if (r.min != null && !(if (r.minExclusive) x > r.min.toDouble() else x >= r.min.toDouble())) return false
        return max == null || (if (r.maxExclusive) x < max else x <= max)
    }

    /** The fields of a `param_range` refusal of [row] for [got] by range [r]. */
    private fun expected(row: ParamRow, r: ParamRange, got: Any): Map<String, Any?> {
        val f = linkedMapOf<String, Any?>("param" to row.name, "got" to got)
        r.min?.let { f["min"] = it }
        (if (r.dynamic != null) dynamicMax else r.max)?.let { f["max"] = it }
        if (r.minExclusive) f["min_exclusive"] = true
        if (r.maxExclusive) f["max_exclusive"] = true
        if (r.finite) f["finite"] = true
        return f
    }

    /** Values just outside and at each static bound of [r], as the row's type gives them. */
    private fun probes(row: ParamRow, r: ParamRange): List<Any> {
        val out = ArrayList<Any>()
        if (row.type == "float") {
            r.min?.toDouble()?.let { out.addAll(listOf(Math.nextDown(it), it, Math.nextUp(it))) }
            r.max?.toDouble()?.let { out.addAll(listOf(Math.nextDown(it), it, Math.nextUp(it))) }
            if (r.finite) out.addAll(listOf(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY))
        } else {
            r.min?.toLong()?.let { out.addAll(listOf(it - 1, it, it + 1)) }
            r.max?.toLong()?.let { out.addAll(listOf(it - 1, it, it + 1)) }
        }
        return out
    }

    private fun read(protocol: String, row: ParamRow, v: Any?): Any? {
        val reader = ParamReader(protocol, mapOf(row.name to v))
        return if (row.type == "float") reader.double(row.name) else reader.long(row.name, dynamicMax)
    }

    @Test
    fun `each static bound of every table row is refused just outside with its bounds`() {
        var checked = 0
        for ((protocol, rows) in ParamTables.BY_PROTOCOL) for (row in rows) {
            if (row.ranges.isEmpty()) continue
            assertTrue(row.type in setOf("float", "int", "optint"), "$protocol.${row.name}: ranges of a ${row.type}")
            for (range in row.ranges) {
                assertTrue(range.min != null || range.max != null || range.finite || range.dynamic != null, "$protocol.${row.name}: $range")
                for (v in probes(row, range)) {
                    val x = (v as Number).toDouble()
                    val failing = row.ranges.firstOrNull { !passes(it, x) }
                    if (failing == null) {
                        assertEquals(v, read(protocol, row, v), "$protocol.${row.name} = $v is accepted")
                    } else {
                        val e = assertThrows(LdpValueException::class.java, { read(protocol, row, v) }, "$protocol.${row.name} = $v")
                        assertEquals(RefusalCode.PARAM_RANGE, e.code, "$protocol.${row.name} = $v")
                        assertEquals(expected(row, failing, v), e.fields, "$protocol.${row.name} = $v")
                        checked++
                    }
                }
            }
        }
        assertTrue(checked > 200, "$checked refusals checked")
    }

    @Test
    fun `choices, bools and types are the table's`() {
        for ((protocol, rows) in ParamTables.BY_PROTOCOL) for (row in rows) {
            val reader = { v: Any? -> ParamReader(protocol, mapOf(row.name to v)) }
            if (row.choices.isNotEmpty()) {
                for (c in row.choices) assertEquals(c, reader(c).choice(row.name))
                for (bad in listOf<Any?>("nope", 1L, null)) {
                    val e = assertThrows(LdpValueException::class.java) { reader(bad).choice(row.name) }
                    assertEquals(mapOf("param" to row.name, "choices" to row.choices, "got" to bad), e.fields, "$protocol.${row.name}")
                }
            }
            val expected = when (row.type) {
                "float" -> "float"
                "int", "optint" -> "int"
                "bool" -> "bool"
                else -> continue
            }
            for (bad in listOf<Any?>("1", true, listOf(1L))) {
                if (bad == true && row.type == "bool") continue
                val e = assertThrows(LdpTypeException::class.java) {
                    val r = reader(bad)
                    when (row.type) {
                        "float" -> r.double(row.name)
                        "bool" -> r.bool(row.name)
                        else -> r.long(row.name, dynamicMax)
                    }
                }
                assertEquals(RefusalCode.PARAM_TYPE, e.code)
                assertEquals(mapOf("param" to row.name, "expected" to expected, "got" to io.github.ldptelemetry.client.internal.Refuse.kind(bad)), e.fields, "$protocol.${row.name}")
            }
        }
    }

    @Test
    fun `names, defaults and the registry are the table's`() {
        assertEquals(ParamTables.BY_PROTOCOL.keys.sorted(), Protocols.names, "one table per protocol, one protocol per table")
        for (name in Protocols.names) {
            val protocol = Protocols[name]!!
            val rows = ParamTables.BY_PROTOCOL.getValue(name)
            assertEquals(rows.map { it.name }, protocol.fields.map { it.name }, name)
            assertEquals(rows.map { !it.required }, protocol.fields.map { it.hasDefault }, name)
            assertEquals(rows.filter { !it.required }.map { it.default }, protocol.fields.filter { it.hasDefault }.map { it.default }, name)
            assertTrue(rows.all { it.doc.isNotEmpty() }, "$name: every parameter says what it means")
            val missing = assertThrows(LdpTypeException::class.java) { protocol.paramsOf(emptyMap<String, Any?>()) }
            assertEquals(RefusalCode.MISSING_PARAMS, missing.code)
            assertEquals(mapOf("params" to rows.filter { it.required }.map { it.name }), missing.fields, name)
            val unknown = assertThrows(LdpValueException::class.java) { protocol.paramsOf(mapOf("zz" to 1L, "aa" to 2L)) }
            assertEquals(mapOf("params" to listOf("aa", "zz")), unknown.fields, name)
        }
    }
}
