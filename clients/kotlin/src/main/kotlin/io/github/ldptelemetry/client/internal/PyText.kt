package io.github.ldptelemetry.client.internal

import io.github.ldptelemetry.client.LdpValueException
import java.math.BigDecimal
import java.math.BigInteger
import java.math.MathContext
import java.math.RoundingMode
import java.security.MessageDigest

/**
 * Python's text forms, byte for byte: `repr(float)`, `format(x, ".Ng")`, `repr(str)`, `type(v).__name__`, and the
 * canonical JSON that fingerprints hash (`ldp/wire.py` `canonical_json`). docs/conformance.md section 4 is the rule;
 * `primitives.json` (`floats`, `texts`) checks it.
 */
internal object PyText {
    /** Strings by code point, as Python's `sorted` orders `str` (UTF-16 order differs past the BMP). A lone
     * surrogate counts as its own code point. */
    val CODE_POINT_ORDER: Comparator<String> = Comparator { a, b -> compareCodePoints(a, b) }

    fun compareCodePoints(a: String, b: String): Int {
        var i = 0
        var j = 0
        while (i < a.length && j < b.length) {
            val x = a.codePointAt(i)
            val y = b.codePointAt(j)
            if (x != y) return x.compareTo(y)
            i += Character.charCount(x)
            j += Character.charCount(y)
        }
        return (a.length - i).compareTo(b.length - j)
    }

    // ------------------------------------------------------------------------------------------------------------
    // Floats

    /** Shortest decimal digits that read back as `x > 0` (finite), and the decimal exponent of the first digit:
     * `x ≈ d.ddd × 10^exp`. Among the shortest, the closest to `x` (David Gay's mode 0, what Python's repr uses):
     * for each length the correctly rounded candidate is tried, then its neighbour on the other side of `x` (which
     * reads back first only next to a power of two, where the rounding interval is lopsided). */
    private fun shortestDigits(x: Double): Pair<String, Int> {
        val exact = BigDecimal(x)
        for (n in 1..17) {
            val nearest = exact.round(MathContext(n, RoundingMode.HALF_EVEN))
            if (nearest.toDouble() == x) return digitsOf(nearest)
            val other = exact.round(MathContext(n, if (nearest > exact) RoundingMode.FLOOR else RoundingMode.CEILING))
            if (other.compareTo(nearest) != 0 && other.toDouble() == x) return digitsOf(other)
        }
        return digitsOf(exact.round(MathContext(17, RoundingMode.HALF_EVEN)))
    }

    /** The significant digits of a positive decimal (trailing zeros dropped) and the exponent of the first. */
    private fun digitsOf(d: BigDecimal): Pair<String, Int> {
        val unscaled = d.unscaledValue().toString()
        val exp = unscaled.length - 1 - d.scale()
        val digits = unscaled.trimEnd('0').ifEmpty { "0" }
        return digits to exp
    }

    private fun expText(exp: Int): String = (if (exp < 0) "-" else "+") + Math.abs(exp).toString().padStart(2, '0')

    /** `repr(float(x))`: `nan`, `inf`, `-inf`, else the shortest round-trip digits laid out by Python's rule:
     * scientific when the decimal exponent is below -4 or at least 16 (`1e-05`, `1e+16`), else positional with at
     * least one digit after the point (`1.0`, `0.0001`, `123456789012345.6`); `-0.0` keeps its sign. */
    fun floatRepr(x: Double): String {
        if (x.isNaN()) return "nan"
        if (x == Double.POSITIVE_INFINITY) return "inf"
        if (x == Double.NEGATIVE_INFINITY) return "-inf"
        if (x == 0.0) return if (1.0 / x < 0) "-0.0" else "0.0"
        val sign = if (x < 0) "-" else ""
        val (digits, exp) = shortestDigits(Math.abs(x))
        if (exp < -4 || exp >= 16) {
            val mantissa = if (digits.length > 1) digits[0] + "." + digits.substring(1) else digits
            return sign + mantissa + "e" + expText(exp)
        }
        val point = exp + 1
        return when {
            point <= 0 -> sign + "0." + "0".repeat(-point) + digits
            point >= digits.length -> sign + digits + "0".repeat(point - digits.length) + ".0"
            else -> sign + digits.substring(0, point) + "." + digits.substring(point)
        }
    }

    /** Python's `format(x, f".{precision}g")`: `precision` significant digits rounded half to even on the exact
     * binary value, positional when the exponent is in [-4, precision), trailing zeros and point removed. */
    fun formatG(x: Double, precision: Int = 6): String {
        if (x.isNaN()) return "nan"
        if (x == Double.POSITIVE_INFINITY) return "inf"
        if (x == Double.NEGATIVE_INFINITY) return "-inf"
        val p = maxOf(1, precision)
        if (x == 0.0) return if (1.0 / x < 0) "-0" else "0"
        val sign = if (x < 0) "-" else ""
        val rounded = BigDecimal(Math.abs(x)).round(MathContext(p, RoundingMode.HALF_EVEN))
        val unscaled = rounded.unscaledValue().toString()
        val exp = unscaled.length - 1 - rounded.scale()
        val digits = unscaled.padEnd(p, '0').substring(0, p)
        fun strip(s: String) = if ('.' in s) s.trimEnd('0').trimEnd('.') else s
        if (exp >= -4 && exp < p) {
            val s = if (exp < 0) "0." + "0".repeat(-exp - 1) + digits else digits.substring(0, exp + 1) + "." + digits.substring(exp + 1)
            return sign + strip(s)
        }
        return sign + strip(digits[0] + "." + digits.substring(1)) + "e" + expText(exp)
    }

    /** Python's `f"{x:.1f}"` of a finite x (half to even on the exact value). */
    fun fixed1(x: Double): String = BigDecimal(x).setScale(1, RoundingMode.HALF_EVEN).toPlainString()

    /** Python's `f"{n:,}"` of an integer. */
    fun thousands(n: Long): String {
        val s = Math.abs(n).toString()
        val out = StringBuilder()
        for ((i, c) in s.withIndex()) {
            if (i > 0 && (s.length - i) % 3 == 0) out.append(',')
            out.append(c)
        }
        return (if (n < 0) "-" else "") + out
    }

    // ------------------------------------------------------------------------------------------------------------
    // repr(str), type names, repr of values

    /** Whether Python's `str.isprintable()` holds for code point [c] (a character outside the categories Cc, Cf, Cs,
     * Co, Cn, Zl, Zp, Zs, or the ASCII space). The categories come from the platform's Unicode tables, whose version
     * may differ from the Python server's: a character assigned in between is classified differently. */
    private fun isPrintable(c: Int): Boolean {
        if (c == 0x20) return true
        return when (Character.getType(c).toByte()) {
            Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE, Character.UNASSIGNED,
            Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR, Character.SPACE_SEPARATOR,
            -> false
            else -> true
        }
    }

    private fun hex(n: Int, width: Int) = n.toString(16).padStart(width, '0')

    /** Python's `repr(s)`: in `'`, or `"` when `s` has a `'` and no `"`; `\\`, `\t`, `\n`, `\r` escaped; other
     * non-printable characters as `\xNN`, `\uNNNN` or `\UNNNNNNNN` (lone surrogates too). */
    fun repr(s: String): String {
        val quote = if ('\'' in s && '"' !in s) '"' else '\''
        val out = StringBuilder().append(quote)
        var i = 0
        while (i < s.length) {
            val c = s.codePointAt(i)
            i += Character.charCount(c)
            when {
                c == quote.code || c == '\\'.code -> out.append('\\').appendCodePoint(c)
                c == '\t'.code -> out.append("\\t")
                c == '\n'.code -> out.append("\\n")
                c == '\r'.code -> out.append("\\r")
                c < 0x20 || c == 0x7f -> out.append("\\x").append(hex(c, 2))
                c < 0x7f -> out.appendCodePoint(c)
                isPrintable(c) -> out.appendCodePoint(c)
                c <= 0xff -> out.append("\\x").append(hex(c, 2))
                c <= 0xffff -> out.append("\\u").append(hex(c, 4))
                else -> out.append("\\U").append(hex(c, 8))
            }
        }
        return out.append(quote).toString()
    }

    /** `type(v).__name__` of the Python value [v] stands for (a JSON list is a `list`). */
    fun typeName(v: Any?): String = when (v) {
        null -> "NoneType"
        is Boolean -> "bool"
        is Int, is Long, is Short, is Byte, is BigInteger -> "int"
        is Double, is Float, is PyFloat -> "float"
        is String -> "str"
        is ByteArray -> "bytes"
        is List<*> -> "list"
        is Map<*, *> -> "dict"
        else -> v.javaClass.simpleName
    }

    /** Python's `repr` of a value decoded from JSON. A list is written as a tuple when [tuples] (what `from_dict`
     * makes of a JSON list given as a parameter), else as a list. */
    fun reprValue(v: Any?, tuples: Boolean = false): String = when (v) {
        null -> "None"
        true -> "True"
        false -> "False"
        is Int, is Long, is Short, is Byte, is BigInteger -> v.toString()
        is Double -> floatRepr(v)
        is Float -> floatRepr(v.toDouble())
        is PyFloat -> floatRepr(v.value)
        is String -> repr(v)
        is ByteArray -> "b" + repr(String(CharArray(v.size) { (v[it].toInt() and 0xff).toChar() }))
        is List<*> -> {
            val items = v.map { reprValue(it, tuples) }
            when {
                !tuples -> items.joinToString(", ", "[", "]")
                items.size == 1 -> "(${items[0]},)"
                else -> items.joinToString(", ", "(", ")")
            }
        }
        is Map<*, *> -> v.entries.joinToString(", ", "{", "}") { (k, x) -> reprValue(k, tuples) + ": " + reprValue(x, tuples) }
        else -> v.toString()
    }

    /** Python's `str(x)` of a number: an int as digits, a float as its repr. */
    fun num(x: Any?): String = when (x) {
        is Double -> floatRepr(x)
        is Float -> floatRepr(x.toDouble())
        else -> x.toString()
    }

    /** Python's list repr of strings: `['a', 'b']`. */
    fun strList(names: List<String>): String = names.joinToString(", ", "[", "]") { repr(it) }

    // ------------------------------------------------------------------------------------------------------------
    // Canonical JSON

    /** A JSON string as Python's `json.dumps(..., ensure_ascii=True)` writes it. */
    fun jsonString(out: StringBuilder, s: String) {
        out.append('"')
        for (ch in s) {
            val c = ch.code
            if (c in 0x20..0x7e) {
                when (ch) {
                    '"' -> out.append("\\\"")
                    '\\' -> out.append("\\\\")
                    else -> out.append(ch)
                }
                continue
            }
            when (c) {
                0x0a -> out.append("\\n")
                0x0d -> out.append("\\r")
                0x09 -> out.append("\\t")
                0x08 -> out.append("\\b")
                0x0c -> out.append("\\f")
                else -> out.append("\\u").append(hex(c, 4))
            }
        }
        out.append('"')
    }

    /** Python's `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`:
     * keys by code point, ints as digits, [Double] and [PyFloat] as Python's float repr. */
    fun canonicalJson(value: Any?): String = StringBuilder().also { Json.writeTo(it, value, sortKeys = true) }.toString()

    /** The first 16 hex digits of SHA-256 of [text] as UTF-8 (ASCII for canonical JSON). */
    fun sha256Hex16(text: String): String {
        val digest = MessageDigest.getInstance("SHA-256").digest(text.toByteArray(Charsets.UTF_8))
        return Bytes.hex(digest).substring(0, 16)
    }

    /** `fingerprint(protocol, params)`: 16 hex digits naming a protocol and its parameters. */
    fun fingerprint(protocol: String, params: Map<String, Any?>): String =
        sha256Hex16(canonicalJson(mapOf("protocol" to protocol, "params" to params)))

    internal fun requireFinite(x: Double) {
        if (x.isNaN() || x.isInfinite()) throw LdpValueException("Out of range float values are not JSON compliant")
    }
}
