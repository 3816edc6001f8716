package io.github.ldptelemetry.client.internal

import io.github.ldptelemetry.client.LdpTypeException
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.Refusal
import io.github.ldptelemetry.client.RefusalCode
import java.math.BigInteger

/**
 * The refusals ([LdpTypeException], [LdpValueException]) with their code and fields (docs/conformance.md,
 * "Refusals"), and a message in Kotlin's terms: each builder returns the exception, the caller throws it.
 */
internal object Refuse {
    /** The JSON kind of [v] (`got` of `param_type` and `value_type`). */
    fun kind(v: Any?): String = when (v) {
        null -> "null"
        is Boolean -> "bool"
        is Long, is Int, is Short, is Byte, is BigInteger -> "int"
        is Double, is Float, is PyFloat -> "float"
        is String -> "string"
        is List<*>, is Array<*> -> "list"
        is Map<*, *> -> "object"
        is ByteArray -> "bytes"
        else -> "other"
    }

    /** [v] as a field's JSON value (lists and maps deep, a [PyFloat] as its double, a Float as a Double). */
    fun plain(v: Any?): Any? = when (v) {
        is PyFloat -> v.value
        is Float -> v.toDouble()
        is Int -> v.toLong()
        is Short -> v.toLong()
        is Byte -> v.toLong()
        is List<*> -> v.map { plain(it) }
        is Array<*> -> v.map { plain(it) }
        is Map<*, *> -> LinkedHashMap<String, Any?>().also { m -> v.forEach { (k, x) -> m[k.toString()] = plain(x) } }
        else -> v
    }

    /** [v] in a message: a string quoted (control characters escaped), a list as Kotlin renders it, `null`. */
    fun show(v: Any?): String = when (v) {
        is String -> quote(v)
        is PyFloat -> v.value.toString()
        is List<*> -> v.joinToString(", ", "[", "]") { show(it) }
        is Array<*> -> v.joinToString(", ", "[", "]") { show(it) }
        is Map<*, *> -> v.entries.joinToString(", ", "{", "}") { (k, x) -> "${show(k)}=${show(x)}" }
        is ByteArray -> "${v.size} bytes"
        else -> v.toString()
    }

    /** [s] in double quotes, `"`, `\` and control characters escaped as Kotlin writes them (a lone surrogate as
     * `\uXXXX`). */
    fun quote(s: String): String {
        val out = StringBuilder("\"")
        var i = 0
        while (i < s.length) {
            val ch = s[i]
            val paired = ch.isHighSurrogate() && i + 1 < s.length && s[i + 1].isLowSurrogate()
            when {
                paired -> out.append(ch).append(s[++i])
                ch == '"' || ch == '\\' -> out.append('\\').append(ch)
                ch == '\n' -> out.append("\\n")
                ch == '\t' -> out.append("\\t")
                ch == '\r' -> out.append("\\r")
                ch.code < 0x20 || ch.code == 0x7f || ch.isSurrogate() -> out.append("\\u").append(ch.code.toString(16).padStart(4, '0'))
                else -> out.append(ch)
            }
            i++
        }
        return out.append('"').toString()
    }

    private fun fields(vararg pairs: Pair<String, Any?>): LinkedHashMap<String, Any?> {
        val m = LinkedHashMap<String, Any?>()
        for ((k, v) in pairs) m[k] = plain(v)
        return m
    }

    private fun LinkedHashMap<String, Any?>.opt(key: String, v: Any?): LinkedHashMap<String, Any?> {
        if (v != null && v != false) put(key, plain(v))
        return this
    }

    private fun typeError(code: RefusalCode, f: Map<String, Any?>, message: String) = LdpTypeException(code, f, message)
    private fun valueError(code: RefusalCode, f: Map<String, Any?>, message: String) = LdpValueException(code, f, message)

    fun missingParams(params: List<String>, owner: String): IllegalArgumentException =
        typeError(RefusalCode.MISSING_PARAMS, fields("params" to params), "missing $owner parameters: ${show(params)}")

    fun unknownParams(params: List<String>, owner: String): IllegalArgumentException =
        valueError(RefusalCode.UNKNOWN_PARAMS, fields("params" to params), "unknown $owner parameters: ${show(params)}")

    /** `param_type`: [got] is the value given (its kind goes in the fields). A [LdpTypeException], or, where the
     * Python check raises a `ValueError` ([valueError]), an [LdpValueException]. */
    fun paramType(
        param: String, expected: String, got: Any?, message: String? = null, index: Int? = null, valueError: Boolean = false,
    ): IllegalArgumentException {
        val f = fields("param" to param, "expected" to expected, "got" to kind(got)).opt("index", index)
        val text = message ?: "$param${if (index != null) "[$index]" else ""} must be ${article(expected)}, got ${kind(got)}"
        return if (valueError) valueError(RefusalCode.PARAM_TYPE, f, text) else typeError(RefusalCode.PARAM_TYPE, f, text)
    }

    private fun article(expected: String): String = when (expected) {
        "int" -> "an int"
        "float" -> "a real number"
        "bool" -> "a Boolean"
        "string" -> "a string"
        "list" -> "a list"
        "object" -> "an object"
        "labels" -> "a list of distinct strings or null"
        "attribute" -> "an attribute [name, protocol, params]"
        else -> expected
    }

    /** `param_range` (or `value_range`, [param] null): the number [got] as given, and the bounds that apply. */
    fun range(
        param: String?, got: Any?, min: Any? = null, max: Any? = null, minExclusive: Boolean = false,
        maxExclusive: Boolean = false, finite: Boolean = false, index: Int? = null, message: String? = null,
    ): IllegalArgumentException {
        val f = if (param == null) fields("got" to got) else fields("param" to param, "got" to got)
        f.opt("min", min).opt("max", max).opt("min_exclusive", minExclusive).opt("max_exclusive", maxExclusive)
            .opt("finite", finite).opt("index", index)
        val name = if (param == null) "the value" else param + if (index != null) "[$index]" else ""
        val text = message ?: "$name must be ${bounds(min, max, minExclusive, maxExclusive, finite)}, got ${show(got)}"
        return valueError(if (param == null) RefusalCode.VALUE_RANGE else RefusalCode.PARAM_RANGE, f, text)
    }

    private fun bounds(min: Any?, max: Any?, minExclusive: Boolean, maxExclusive: Boolean, finite: Boolean): String {
        val parts = mutableListOf<String>()
        if (finite) parts += "finite"
        when {
            min != null && max != null ->
                parts += "in ${if (minExclusive) "(" else "["}$min, $max${if (maxExclusive) ")" else "]"}"
            min != null -> parts += "${if (minExclusive) ">" else ">="} $min"
            max != null -> parts += "${if (maxExclusive) "<" else "<="} $max"
        }
        return parts.joinToString(" and ")
    }

    fun paramChoice(param: String, choices: List<String>, got: Any?, index: Int? = null): IllegalArgumentException =
        valueError(
            RefusalCode.PARAM_CHOICE, fields("param" to param, "choices" to choices, "got" to got).opt("index", index),
            "$param must be one of ${show(choices)}, got ${show(got)}",
        )

    fun paramLength(param: String, got: Long, min: Long? = null, max: Long? = null, message: String? = null): IllegalArgumentException =
        valueError(
            RefusalCode.PARAM_LENGTH, fields("param" to param, "got" to got).opt("min", min).opt("max", max),
            message ?: "$param must have ${bounds(min, max, false, false, false)} entries, got $got",
        )

    fun relation(rule: String, params: List<String>, message: String, index: Int? = null): IllegalArgumentException =
        valueError(RefusalCode.PARAM_RELATION, fields("params" to params, "rule" to rule).opt("index", index), message)

    /** `param_limit`: [got] the size reached (a [java.math.BigInteger] past a [Long]), [max] the limit. */
    fun limit(limit: String, got: Number, max: Long, message: String): IllegalArgumentException =
        valueError(RefusalCode.PARAM_LIMIT, fields("limit" to limit, "got" to got, "max" to max), message)

    /** `value_type`: [got] is the value given. */
    fun valueType(expected: String, got: Any?, message: String? = null): IllegalArgumentException =
        typeError(
            RefusalCode.VALUE_TYPE, fields("expected" to expected, "got" to kind(got)),
            message ?: "the value must be ${article(expected)}, got ${kind(got)}",
        )

    fun unknownLabel(got: String, message: String? = null): IllegalArgumentException =
        valueError(RefusalCode.UNKNOWN_LABEL, fields("got" to got), message ?: "unknown label ${show(got)}")

    fun emptyValue(message: String = "the value must be a non-empty string"): IllegalArgumentException =
        valueError(RefusalCode.EMPTY_VALUE, fields(), message)

    fun tooLong(got: Long, max: Long, unit: String, message: String? = null): IllegalArgumentException =
        valueError(
            RefusalCode.VALUE_TOO_LONG, fields("got" to got, "max" to max, "unit" to unit),
            message ?: "the value has $got $unit, over the maximum of $max",
        )

    fun notInAlphabet(char: String, message: String? = null): IllegalArgumentException =
        valueError(RefusalCode.NOT_IN_ALPHABET, fields("char" to char), message ?: "the character ${show(char)} is not in the alphabet")

    fun notEncodable(encoding: String, message: String? = null): IllegalArgumentException =
        valueError(RefusalCode.NOT_ENCODABLE, fields("encoding" to encoding), message ?: "the value has no $encoding form (a lone surrogate)")

    fun missingAttributes(attributes: List<String>): IllegalArgumentException =
        valueError(RefusalCode.MISSING_ATTRIBUTES, fields("attributes" to attributes), "the record lacks the attributes ${show(attributes)}")

    fun unknownAttributes(attributes: List<String>): IllegalArgumentException =
        valueError(RefusalCode.UNKNOWN_ATTRIBUTES, fields("attributes" to attributes), "unknown attributes ${show(attributes)}")

    /** `trust_model`: the spec sends [metric]'s values to two aggregators ([trust]), and the client was given no task
     * for it. */
    fun trustModel(metric: String, trust: String): IllegalArgumentException =
        valueError(
            RefusalCode.TRUST_MODEL, fields("metric" to metric, "trust" to trust),
            "metric ${quote(metric)} is collected in the two-aggregator mode (trust ${quote(trust)}): its reports are sealed " +
                "to its task's aggregators, and no task was given for it: TelemetryClient(..., tasks = mapOf(${quote(metric)} " +
                "to DapTask(taskFileText))), the file `ldp collect task --leader-config ... --helper-config ...` wrote; " +
                "nothing is recorded",
        )

    /** `not_encodable`: the native library made no DAP report of [metric]'s measurement ([why]). */
    fun reportNotMade(metric: String, why: String): IllegalArgumentException =
        valueError(RefusalCode.NOT_ENCODABLE, fields("metric" to metric), "metric ${quote(metric)}: the report could not be made: $why")

    /** [e] restated: its message after [prefix], its parameter names mapped by [names], [extra] fields added (a part
     * a protocol is built from, or one attribute of a record). Not a refusal: [e] itself. */
    fun restated(e: Throwable, prefix: String, names: Map<String, String> = emptyMap(), vararg extra: Pair<String, Any?>): Throwable {
        if (e !is Refusal) return e
        val f = LinkedHashMap(e.fields)
        (f["param"] as? String)?.let { f["param"] = names[it] ?: it }
        (f["params"] as? List<*>)?.let { ps -> f["params"] = ps.map { names[it] ?: it } }
        for ((k, v) in extra) f[k] = plain(v)
        val text = prefix + e.message
        return if (e is LdpTypeException) LdpTypeException(e.code, f, text) else LdpValueException(e.code, f, text)
    }
}
