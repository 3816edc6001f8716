package io.github.ldptelemetry.client.internal

import java.math.BigDecimal
import java.math.MathContext
import java.math.RoundingMode
import java.security.MessageDigest

/**
 * Python's text forms that reports and fingerprints need byte for byte: `repr(float)` and the canonical JSON that
 * fingerprints hash (`ldp/wire.py` `canonical_json`). docs/conformance.md section 4 is the rule; `primitives.json`
 * (`floats`, `texts.canonical_json`) checks it. (Error messages are this client's own: see [Refuse].)
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

    // ------------------------------------------------------------------------------------------------------------
    // Canonical JSON

    private fun hex(n: Int, width: Int) = n.toString(16).padStart(width, '0')

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
}
