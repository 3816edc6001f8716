package io.github.ldptelemetry.client.protocols

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The generated parameter tables (`ParamTables.kt`, written by `python conformance/docs_tables.py` from the Python
 * declarations) agree with the fields each protocol of this client declares: the same names in the same order, the
 * same defaults, compatible types. */
class ParamTablesTest {
    /** This client's field types against the table's (`ints` and `optint` have no type of their own here). */
    private val compatible = mapOf(
        FieldType.FLOAT to setOf("float"), FieldType.INT to setOf("int", "optint"), FieldType.BOOL to setOf("bool"),
        FieldType.STR to setOf("str"), FieldType.FLOATS to setOf("floats"), FieldType.LABELS to setOf("labels"),
        FieldType.OPTSTR to setOf("optstr"), FieldType.ANY to setOf("any", "ints"),
    )

    /** A default as JSON would carry it: numbers as doubles (a table's `4294967296L` is this client's `4294967296L`
     * or a double), lists element by element. */
    private fun plain(v: Any?): Any? = when (v) {
        is Number -> v.toDouble()
        is List<*> -> v.map { plain(it) }
        else -> v
    }

    @Test
    fun `every protocol's fields are the generated table's`() {
        for (name in Protocols.names) {
            val protocol = Protocols[name]!!
            val rows = ParamTables.BY_PROTOCOL[name] ?: error("$name: no table")
            assertEquals(rows.map { it.name }, protocol.fields.map { it.name }, "$name: the fields")
            for ((field, row) in protocol.fields.zip(rows)) {
                assertTrue(row.type in compatible.getValue(field.type), "$name.${field.name}: ${field.type} against ${row.type}")
                assertEquals(row.required, !field.hasDefault, "$name.${field.name}: required")
                if (!row.required) assertEquals(plain(row.default), plain(field.default), "$name.${field.name}: the default")
                assertTrue(row.doc.isNotEmpty(), "$name.${field.name}: no meaning")
            }
        }
    }

    @Test
    fun `the table's ranges are well formed`() {
        for (rows in ParamTables.BY_PROTOCOL.values) for (row in rows) for (r in row.ranges) {
            assertTrue(r.min != null || r.max != null || r.finite || r.dynamic != null, "$r")
            if (r.min != null && r.max != null) assertTrue(r.min.toDouble() <= r.max.toDouble(), "$r")
        }
    }
}
