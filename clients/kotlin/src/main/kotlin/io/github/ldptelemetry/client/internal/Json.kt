package io.github.ldptelemetry.client.internal

import java.math.BigInteger

/**
 * A small strict JSON reader (RFC 8259) that keeps what the Python client distinguishes: a number token with a
 * fraction or an exponent is a [Double] (a Python `float`), any other number an integer ([Long], or [BigInteger]
 * beyond 64 bits), as Python's `json` module reads them. Objects keep their key order ([LinkedHashMap]); a key
 * repeated in one object is refused (the Python spec loader refuses it too). Strings may hold lone surrogates
 * (`"\ud800"`), which Python's `json` accepts.
 *
 * The library has no JSON dependency (its only runtime dependency is the Kotlin standard library): this reader is
 * what the collection spec, the ledger's state file and the collector's replies go through.
 */
internal object Json {
    /** The most nested arrays and objects a document may have (deeper is refused, not a stack overflow). */
    const val MAX_DEPTH: Int = 256

    /** The value of the JSON text [text]: `null`, [Boolean], [String], [Long], [BigInteger], [Double],
     * `List<Any?>` or `Map<String, Any?>`. Throws [JsonException] naming the offset of the first problem. */
    fun parse(text: String): Any? {
        val reader = Reader(text)
        reader.skipSpace()
        val value = reader.value(0)
        reader.skipSpace()
        if (reader.pos != text.length) reader.fail("extra data after the value")
        return value
    }

    private class Reader(val s: String) {
        var pos = 0

        fun fail(message: String): Nothing = throw JsonException("$message (at offset $pos)")

        fun skipSpace() {
            while (pos < s.length) {
                val c = s[pos]
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') pos++ else break
            }
        }

        fun value(depth: Int): Any? {
            if (pos >= s.length) fail("expected a value, got the end of the text")
            return when (val c = s[pos]) {
                '{' -> obj(depth + 1)
                '[' -> array(depth + 1)
                '"' -> string()
                't' -> literal("true", true)
                'f' -> literal("false", false)
                'n' -> literal("null", null)
                else -> if (c == '-' || c in '0'..'9') number() else fail("unexpected character ${describe(c)}")
            }
        }

        fun describe(c: Char): String =
            if (c.code in 0x21..0x7e) "'$c'" else "U+" + c.code.toString(16).uppercase().padStart(4, '0')

        fun literal(word: String, value: Any?): Any? {
            if (!s.startsWith(word, pos)) fail("unexpected character ${describe(s[pos])}")
            pos += word.length
            return value
        }

        fun obj(depth: Int): Map<String, Any?> {
            if (depth > MAX_DEPTH) fail("nested deeper than $MAX_DEPTH")
            pos++ // '{'
            val out = LinkedHashMap<String, Any?>()
            skipSpace()
            if (pos < s.length && s[pos] == '}') {
                pos++
                return out
            }
            while (true) {
                skipSpace()
                if (pos >= s.length || s[pos] != '"') fail("expected a string key")
                val keyAt = pos
                val key = string()
                skipSpace()
                if (pos >= s.length || s[pos] != ':') fail("expected ':'")
                pos++
                skipSpace()
                val v = value(depth)
                if (out.containsKey(key)) {
                    pos = keyAt
                    fail("key ${Refuse.quote(key)} repeated in one object")
                }
                out[key] = v
                skipSpace()
                if (pos >= s.length) fail("expected ',' or '}'")
                when (s[pos++]) {
                    ',' -> continue
                    '}' -> return out
                    else -> {
                        pos--
                        fail("expected ',' or '}'")
                    }
                }
            }
        }

        fun array(depth: Int): List<Any?> {
            if (depth > MAX_DEPTH) fail("nested deeper than $MAX_DEPTH")
            pos++ // '['
            val out = ArrayList<Any?>()
            skipSpace()
            if (pos < s.length && s[pos] == ']') {
                pos++
                return out
            }
            while (true) {
                skipSpace()
                out.add(value(depth))
                skipSpace()
                if (pos >= s.length) fail("expected ',' or ']'")
                when (s[pos++]) {
                    ',' -> continue
                    ']' -> return out
                    else -> {
                        pos--
                        fail("expected ',' or ']'")
                    }
                }
            }
        }

        fun string(): String {
            pos++ // '"'
            val sb = StringBuilder()
            while (true) {
                if (pos >= s.length) fail("unterminated string")
                val c = s[pos++]
                when {
                    c == '"' -> return sb.toString()
                    c == '\\' -> {
                        if (pos >= s.length) fail("unterminated string")
                        when (val e = s[pos++]) {
                            '"' -> sb.append('"')
                            '\\' -> sb.append('\\')
                            '/' -> sb.append('/')
                            'b' -> sb.append('\b')
                            'f' -> sb.append('\u000c')
                            'n' -> sb.append('\n')
                            'r' -> sb.append('\r')
                            't' -> sb.append('\t')
                            'u' -> {
                                if (pos + 4 > s.length) fail("truncated \\u escape")
                                var code = 0
                                for (i in 0 until 4) {
                                    val h = Character.digit(s[pos + i], 16)
                                    if (h < 0) fail("bad \\u escape")
                                    code = code * 16 + h
                                }
                                pos += 4
                                sb.append(code.toChar())
                            }
                            else -> {
                                pos--
                                fail("bad escape ${describe(e)}")
                            }
                        }
                    }
                    c.code < 0x20 -> {
                        pos--
                        fail("control character ${describe(c)} in a string")
                    }
                    else -> sb.append(c)
                }
            }
        }

        fun number(): Any {
            val start = pos
            if (s[pos] == '-') pos++
            if (pos >= s.length) fail("expected a digit")
            if (s[pos] == '0') {
                pos++
            } else if (s[pos] in '1'..'9') {
                while (pos < s.length && s[pos] in '0'..'9') pos++
            } else {
                fail("expected a digit")
            }
            var isFloat = false
            if (pos < s.length && s[pos] == '.') {
                isFloat = true
                pos++
                if (pos >= s.length || s[pos] !in '0'..'9') fail("expected a digit after '.'")
                while (pos < s.length && s[pos] in '0'..'9') pos++
            }
            if (pos < s.length && (s[pos] == 'e' || s[pos] == 'E')) {
                isFloat = true
                pos++
                if (pos < s.length && (s[pos] == '+' || s[pos] == '-')) pos++
                if (pos >= s.length || s[pos] !in '0'..'9') fail("expected a digit in the exponent")
                while (pos < s.length && s[pos] in '0'..'9') pos++
            }
            val token = s.substring(start, pos)
            if (isFloat) {
                val d = token.toDouble() // Java's parser is correctly rounded, as Python's float()
                if (d.isInfinite()) return d // Python reads 1e999 as inf; the checks refuse it
                return d
            }
            if (token.length > 4300) fail("integer of more than 4300 digits") // Python's int limit
            return if (token.length <= 18) token.toLong() else BigInteger(token).let { if (it.bitLength() < 64) it.toLong() else it }
        }
    }

    /** Compact JSON of a value as the Python client writes it (`json.dumps(..., separators=(",", ":"))`, not
     * sorted, ASCII): what the ledger's state file and upload bodies use. Doubles are written by Python's repr. */
    fun write(value: Any?): String = StringBuilder().also { writeTo(it, value, sortKeys = false) }.toString()

    internal fun writeTo(out: StringBuilder, value: Any?, sortKeys: Boolean) {
        when (value) {
            null -> out.append("null")
            is Boolean -> out.append(if (value) "true" else "false")
            is String -> PyText.jsonString(out, value)
            is Int, is Long, is Short, is Byte, is BigInteger -> out.append(value.toString())
            is PyFloat -> writeDouble(out, value.value)
            is Double -> writeDouble(out, value)
            is Float -> writeDouble(out, value.toDouble())
            is List<*> -> {
                out.append('[')
                value.forEachIndexed { i, v ->
                    if (i > 0) out.append(',')
                    writeTo(out, v, sortKeys)
                }
                out.append(']')
            }
            is Map<*, *> -> {
                out.append('{')
                val keys = value.keys.map { it as? String ?: throw IllegalArgumentException("object keys must be strings, got ${Refuse.kind(it)}") }
                val ordered = if (sortKeys) keys.sortedWith(PyText.CODE_POINT_ORDER) else keys
                ordered.forEachIndexed { i, k ->
                    if (i > 0) out.append(',')
                    PyText.jsonString(out, k)
                    out.append(':')
                    writeTo(out, value[k], sortKeys)
                }
                out.append('}')
            }
            else -> throw IllegalArgumentException("a ${value.javaClass.name} has no JSON form")
        }
    }

    private fun writeDouble(out: StringBuilder, d: Double) {
        if (d.isNaN() || d.isInfinite()) throw IllegalArgumentException("$d has no JSON form (JSON numbers are finite)")
        out.append(PyText.floatRepr(d))
    }
}

/** A number that canonical JSON writes as a Python `float` (`1.0`, not `1`) whatever its value. */
internal class PyFloat(val value: Double) {
    override fun equals(other: Any?): Boolean = other is PyFloat && other.value.toBits() == value.toBits()
    override fun hashCode(): Int = value.hashCode()
    override fun toString(): String = PyText.floatRepr(value)
}

/** A document that is not valid JSON. */
internal class JsonException(message: String) : IllegalArgumentException(message)
