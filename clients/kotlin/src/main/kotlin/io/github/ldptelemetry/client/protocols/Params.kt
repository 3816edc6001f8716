package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.PyFloat
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.Threshold
import java.math.BigInteger

/** How a parameter is typed (its Python annotation): decides its canonical JSON form. */
public enum class FieldType { FLOAT, INT, BOOL, STR, FLOATS, LABELS, OPTSTR, ANY }

/** A parameter field, as the generated table declares it: its name, type and default ([hasDefault] false: required). */
public class ParamField internal constructor(public val name: String, public val type: FieldType, public val default: Any?, public val hasDefault: Boolean) {
    internal companion object {
        private val TYPES = mapOf(
            "float" to FieldType.FLOAT, "int" to FieldType.INT, "optint" to FieldType.INT, "bool" to FieldType.BOOL,
            "str" to FieldType.STR, "floats" to FieldType.FLOATS, "labels" to FieldType.LABELS, "optstr" to FieldType.OPTSTR,
        )
        private val BY_PROTOCOL: Map<String, List<ParamField>> = ParamTables.BY_PROTOCOL.mapValues { (_, rows) ->
            rows.map { ParamField(it.name, TYPES[it.type] ?: FieldType.ANY, it.default, !it.required) }
        }

        /** The fields of [protocol], in Python's declaration order (from [ParamTables]); the `poplar1` metric kind's
         * its own ([Poplar1Params]). */
        fun of(protocol: String): List<ParamField> = BY_PROTOCOL[protocol]
            ?: Poplar1Params.FIELDS.takeIf { protocol == Poplar1Params.NAME } ?: error("no parameter table for $protocol")
    }
}

/** One payload field of a report: a `uint` below [size] or a `bits` string of [size] characters. */
public data class PayloadField(val name: String, val kind: Kind, val size: Long) {
    public enum class Kind { UINT, BITS }

    public companion object {
        public fun uint(name: String, size: Long): PayloadField = PayloadField(name, Kind.UINT, size)
        public fun bits(name: String, size: Int): PayloadField = PayloadField(name, Kind.BITS, size.toLong())
    }
}

/**
 * A protocol's validated parameters (Python's `ProtocolParams`): the field values as given (after `from_dict`, or
 * from a typed constructor), checked in the constructor in the order of the Python `__post_init__` so that the first
 * error is Python's: each parameter by the generated table ([ParamReader]), the relations between them by the class.
 */
public abstract class ProtocolParams internal constructor(values: Map<String, Any?>) {
    /** The field values, in field order (a JSON list frozen as an immutable list). */
    public val values: Map<String, Any?> = LinkedHashMap(values.mapValues { (_, v) -> if (v is List<*>) v.toList() else v })

    /** The protocol's name, as in a spec (`grr`, `rappor`, …). */
    public abstract val protocol: String

    /** The parameter fields, in Python's declaration order (the generated table's). */
    public val fields: List<ParamField> get() = ParamField.of(protocol)

    /** The values read against the protocol's table, in the subclass's (Python's) order. */
    internal val reader: ParamReader by lazy { ParamReader(protocol, this.values) }

    /** The ε (and δ) one report costs. */
    public abstract val privacyCost: PrivacyCost

    /** The payload fields of a report, in order. */
    public abstract val schema: List<PayloadField>

    /** The number of distinct values of a fixed domain; `null` for open-domain (strings) and numeric protocols. */
    public open val domainSize: Int? get() = (values["domain_size"] as? Long)?.toInt()

    /** `to_dict()`: every field, in order, as JSON values. */
    public fun toDict(): Map<String, Any?> = LinkedHashMap<String, Any?>().also { m -> fields.forEach { m[it.name] = values[it.name] } }

    /** The dict the fingerprint hashes: float fields written as Python floats. */
    public open fun canonicalDict(): Map<String, Any?> {
        val out = LinkedHashMap<String, Any?>()
        for (f in fields) {
            val v = values[f.name]
            out[f.name] = when (f.type) {
                FieldType.FLOAT -> PyFloat(asDouble(v))
                FieldType.FLOATS -> (v as List<*>).map { PyFloat(asDouble(it)) }
                else -> v
            }
        }
        return out
    }

    /** 16 hex digits naming the protocol and these parameters (`fingerprint`); every report carries it. */
    public val fingerprint: String by lazy { PyText.fingerprint(protocol, canonicalDict()) }

    override fun equals(other: Any?): Boolean = other is ProtocolParams && other.fingerprint == fingerprint
    override fun hashCode(): Int = fingerprint.hashCode()
    override fun toString(): String = "$protocol${PyText.canonicalJson(canonicalDict())}"
}

/** A number as a double (a checked int or float field). */
internal fun asDouble(v: Any?): Double = when (v) {
    is Double -> v
    is Number -> v.toDouble()
    is PyFloat -> v.value
    else -> throw IllegalArgumentException("expected a number, got ${Refuse.kind(v)}")
}

/**
 * Parameters from their `to_dict()` form, as Python's `ProtocolParams.from_dict`: unknown names are refused
 * (`unknown_params`, sorted), then missing required ones (`missing_params`, in field order); defaults fill the rest;
 * then [create] checks.
 */
internal fun <P : ProtocolParams> fromDict(className: String, fields: List<ParamField>, d: Any?, create: (Map<String, Any?>) -> P): P {
    if (d !is Map<*, *>) throw IllegalArgumentException("$className parameters must be an object, got ${Refuse.kind(d)}")
    val names = fields.map { it.name }.toSet()
    val unknown = d.keys.map { it.toString() }.filter { it !in names }
    if (unknown.isNotEmpty()) throw Refuse.unknownParams(unknown.sortedWith(PyText.CODE_POINT_ORDER), className)
    val missing = fields.filter { !it.hasDefault && !d.containsKey(it.name) }.map { it.name }
    if (missing.isNotEmpty()) throw Refuse.missingParams(missing, className)
    val values = LinkedHashMap<String, Any?>()
    for (f in fields) values[f.name] = if (d.containsKey(f.name)) normalize(d[f.name]) else f.default
    return create(values)
}

/** Kotlin callers' numbers as the JSON reader gives them: Int/Short/Byte as Long, Float as Double. */
/** Python's `max(a, b)` of two floats: [a] unless [b] is greater by IEEE 754 (`max(-0.0, 0.0)` is `-0.0`, where
 * `Math.max` gives `0.0`). */
internal fun pyMax(a: Double, b: Double): Double = if (b > a) b else a

/** Python's `min(a, b)` of two floats: [a] unless [b] is smaller by IEEE 754. */
internal fun pyMin(a: Double, b: Double): Double = if (b < a) b else a

internal fun normalize(v: Any?): Any? = when (v) {
    is Int -> v.toLong()
    is Short -> v.toLong()
    is Byte -> v.toLong()
    is Float -> v.toDouble()
    is BigInteger -> if (v.bitLength() < 64) v.toLong() else v
    is List<*> -> v.map { normalize(it) }
    is Array<*> -> v.map { normalize(it) }
    else -> v
}

/** Whether [v] is a Python int (not a bool). */
internal fun isInt(v: Any?): Boolean = v is Long || v is Int || v is Short || v is Byte || v is BigInteger

/** Whether [v] is a Python real (int or float, not a bool). */
internal fun isReal(v: Any?): Boolean = isInt(v) || v is Double || v is Float

/** Checks of `ldp/encoders/base.py` and `ldp/randomness`, refusing as they do (code and fields). */
internal object Checks {
    /** `check_epsilon`: a finite real > 0. */
    public fun epsilon(v: Any?, name: String = "epsilon"): Double {
        if (!isReal(v)) throw Refuse.paramType(name, "float", v)
        val x = asDouble(v)
        if (!(x > 0 && !x.isInfinite())) throw Refuse.range(name, v, min = 0L, minExclusive = true, finite = true)
        return x
    }

    /** `check_int`: an int in `[low, high]` (`high` null: no upper bound); [param] the name in the refusal (by
     * default the first word of [name]: `"width (m)"` is `width`). */
    public fun int(v: Any?, name: String, low: Long, high: Long? = null, index: Int? = null, param: String? = null): Long {
        val p = param ?: name.substringBefore(' ')
        val shown = if (index == null) name else "$name[$index]"
        if (!isInt(v)) throw Refuse.paramType(p, "int", v, "$shown must be an int, got ${Refuse.kind(v)}", index = index)
        val big = if (v is BigInteger) v else BigInteger.valueOf((v as Number).toLong())
        if (big < BigInteger.valueOf(low) || (high != null && big > BigInteger.valueOf(high))) {
            val bound = if (high == null) ">= $low" else "in [$low, $high]"
            throw Refuse.range(p, v, min = low, max = high, index = index, message = "$shown must be $bound, got $v")
        }
        return big.toLong()
    }

    /** `check_probability`: a real in [0, 1] (the text shows it as a float). */
    public fun probability(v: Any?, name: String = "p"): Double {
        if (!isReal(v)) throw Refuse.paramType(name, "float", v)
        val p = asDouble(v)
        if (!(p >= 0 && p <= 1)) throw Refuse.range(name, v, min = 0L, max = 1L)
        return p
    }

    /** `check_resolvable`: a probability the client does not round to 0 (unless it is 0). */
    public fun resolvable(v: Any?, name: String = "p"): Double {
        val p = probability(v, name)
        if (p > 0 && Threshold.realized(p) == 0.0) {
            throw Refuse.relation(
                "below_resolution", listOf(name),
                "$name=$p is below the client's 2^-64 resolution: it would be drawn with probability 0 (use 0 if " +
                    "that is meant, or a value >= 2^-64)",
            )
        }
        return p
    }

    /** A `bool` field. */
    public fun bool(v: Any?, name: String): Boolean {
        if (v !is Boolean) throw Refuse.paramType(name, "bool", v)
        return v
    }

    /** `LabeledDomain._check_labels`: labels, if given, are `domainSize` distinct strings. */
    public fun labels(labels: Any?, domainSize: Long): List<String>? {
        if (labels == null) return null
        if (labels !is List<*>) {
            throw Refuse.paramType("labels", "labels", labels, "labels must be a list of domain_size=$domainSize distinct strings or null, got ${Refuse.kind(labels)}")
        }
        if (labels.size.toLong() != domainSize) {
            throw Refuse.paramLength("labels", labels.size.toLong(), domainSize, domainSize, "labels must have domain_size=$domainSize entries, got ${labels.size}")
        }
        val bad = labels.indexOfFirst { it !is String }
        if (bad >= 0) throw Refuse.paramType("labels", "string", labels[bad], "labels[$bad] must be a string, got ${Refuse.kind(labels[bad])}", index = bad)
        if (labels.toSet().size != labels.size) throw Refuse.relation("distinct", listOf("labels"), "labels must be distinct")
        @Suppress("UNCHECKED_CAST")
        return labels as List<String>
    }

    /** The longest upload line a server job accepts, in bytes (`MAX_LINE`). */
    public const val MAX_LINE: Long = 1L shl 22

    /** The largest window index an envelope may carry. */
    public const val MAX_WINDOW: Long = 1L shl 53

    /** Counters a server aggregate of one metric may hold (2 GiB of int64). */
    public const val MAX_AGGREGATE_CELLS: Long = 1L shl 28

    /** `max_line_bytes`: the longest upload line (and its newline) a report with [schema] can make. */
    public fun maxLineBytes(protocol: String, schema: List<PayloadField>): Long {
        val payload = schema.joinToString(",") { f ->
            "\"${f.name}\":" + if (f.kind == PayloadField.Kind.UINT) (f.size - 1).toString() else "\"\""
        }
        val report = "{\"v\":1,\"protocol\":\"$protocol\",\"params\":\"${"0".repeat(16)}\",\"payload\":{$payload}}"
        val envelope = "{\"spec\":\"${"0".repeat(16)}\",\"metric\":\"${"m".repeat(32)}\",\"window\":$MAX_WINDOW,\"report\":$report}"
        val bits = schema.filter { it.kind == PayloadField.Kind.BITS }.sumOf { it.size }
        return envelope.length + bits + 1
    }

    /** `ProtocolParams.check_collectable`: every upload line within [MAX_LINE] and the aggregate within
     * [MAX_AGGREGATE_CELLS] counters, else a `param_limit` refusal. */
    public fun collectable(protocol: String, schema: List<PayloadField>, aggregateCells: Long) {
        val line = maxLineBytes(protocol, schema)
        if (line > MAX_LINE) {
            throw Refuse.limit(
                "line_bytes", line, MAX_LINE,
                "$protocol reports of these parameters take up to $line bytes as an upload line, over the " +
                    "$MAX_LINE-byte limit of every server job: all would be rejected",
            )
        }
        if (aggregateCells > MAX_AGGREGATE_CELLS) {
            throw Refuse.limit(
                "aggregate_cells", aggregateCells, MAX_AGGREGATE_CELLS,
                "the $protocol aggregate of these parameters needs $aggregateCells counters, over the limit of " +
                    "$MAX_AGGREGATE_CELLS (2 GiB)",
            )
        }
    }
}
