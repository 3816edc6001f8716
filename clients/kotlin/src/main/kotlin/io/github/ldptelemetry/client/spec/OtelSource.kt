package io.github.ldptelemetry.client.spec

import io.github.ldptelemetry.client.internal.PyFloat
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.protocols.ProtocolParams
import io.github.ldptelemetry.client.protocols.asDouble
import io.github.ldptelemetry.client.protocols.isReal
import java.math.BigDecimal
import java.math.BigInteger

/**
 * The kind of an OpenTelemetry instrument a metric's `otel` mapping names (`KINDS` of ldp/spec/otel.py): a
 * [COUNTER], an [UPDOWN_COUNTER], a [HISTOGRAM] or a [GAUGE]; the observable instruments aggregate as their
 * synchronous kin. [value] is the spec's spelling.
 */
public enum class OtelKind(public val value: String) {
    COUNTER("counter"),
    UPDOWN_COUNTER("updown_counter"),
    HISTOGRAM("histogram"),
    GAUGE("gauge"),
    ;

    override fun toString(): String = value

    public companion object {
        /** The kind spelled [value] (`"updown_counter"`), or null. */
        @JvmStatic
        public fun fromValue(value: String): OtelKind? = entries.firstOrNull { it.value == value }
    }
}

/**
 * What one value of a protocol is (`VALUE_CLASSES` of ldp/spec/otel.py): a [BOOLEAN] (`rr`), a [CATEGORY] (an index
 * or label of a fixed domain: `grr`, `oue`, `olh`, …), a [NUMBER] (in `[low, high]`: `duchi`, `hybrid`, …) or a
 * [STRING] (`cms`, `rappor`, …). `multi` (several questions in one report) has none, so no OpenTelemetry mapping.
 */
public enum class OtelValueClass(internal val noun: String) {
    BOOLEAN("a boolean"),
    CATEGORY("a category"),
    NUMBER("a number"),
    STRING("a string"),
    ;

    public companion object {
        private val BY_PROTOCOL: Map<String, OtelValueClass> = buildMap {
            put("rr", BOOLEAN)
            for (p in listOf("grr", "oue", "sue", "olh", "blh", "hr", "hr-block", "ss", "thresh", "lgrr", "loue", "pgr", "hpg")) put(p, CATEGORY)
            for (p in listOf("duchi", "hybrid", "piecewise", "memo-mean", "bucket-grr", "bucket-oue", "dbitflip", "memo-dbitflip", "hh")) put(p, NUMBER)
            for (p in listOf("cms", "hcms", "rappor", "rappor-ngrams", "pem", "sfp")) put(p, STRING)
        }

        /** What protocol [protocol] (its spec name) encodes, or null: no mapping (`multi`, or an unknown name). */
        @JvmStatic
        public fun of(protocol: String): OtelValueClass? = BY_PROTOCOL[protocol]
    }
}

/**
 * How one window of an instrument's measurements becomes the metric's one value (the `value` of a metric's `otel`
 * mapping; ldp/spec/otel.py has the table). [value] is the spec's spelling, [kinds] the instrument kinds it reads
 * and [classes] the protocol classes it can feed:
 *
 * - [ANY]: whether anything was counted (the window's sum, or count, > 0); a counter or histogram; `rr`, or a
 *   protocol of categories with `domain_size` 2.
 * - [SUM]: the window's sum; a counter or up-down counter; a number protocol with `clip: true`.
 * - [LAST]: the last value observed; a gauge; a number protocol with `clip: true`.
 * - [MEAN]: sum / count of the window's observations; a histogram; a number protocol with `clip: true`.
 * - [BUCKET]: the bucket of [OtelSource.buckets] holding most observations; a histogram; a protocol of categories.
 * - [ATTRIBUTE]: the value of [OtelSource.attribute] counted most; a counter or histogram; a protocol of categories
 *   (named by [OtelSource.values], by default the protocol's labels) or of strings.
 *
 * Ties go to the lowest bucket or category, or the smallest string.
 */
public enum class OtelValue(
    public val value: String,
    public val kinds: List<OtelKind>,
    public val classes: List<OtelValueClass>,
    internal val noun: String,
) {
    ANY("any", listOf(OtelKind.COUNTER, OtelKind.HISTOGRAM), listOf(OtelValueClass.BOOLEAN, OtelValueClass.CATEGORY), "a boolean"),
    SUM("sum", listOf(OtelKind.COUNTER, OtelKind.UPDOWN_COUNTER), listOf(OtelValueClass.NUMBER), "a number"),
    LAST("last", listOf(OtelKind.GAUGE), listOf(OtelValueClass.NUMBER), "a number"),
    MEAN("mean", listOf(OtelKind.HISTOGRAM), listOf(OtelValueClass.NUMBER), "a number"),
    BUCKET("bucket", listOf(OtelKind.HISTOGRAM), listOf(OtelValueClass.CATEGORY), "a category"),
    ATTRIBUTE("attribute", listOf(OtelKind.COUNTER, OtelKind.HISTOGRAM), listOf(OtelValueClass.CATEGORY, OtelValueClass.STRING), "a category or a string"),
    ;

    override fun toString(): String = value

    public companion object {
        /** The value spelled [value] (`"attribute"`), or null. */
        @JvmStatic
        public fun fromValue(value: String): OtelValue? = entries.firstOrNull { it.value == value }
    }
}

/**
 * The OpenTelemetry instrument that feeds a metric, and how (a metric's `otel` key: ldp/spec/otel.py's
 * `OtelSource`; [MetricSpec.otel]), e.g. `{"instrument": "app.screen.views", "kind": "counter", "value":
 * "attribute", "attribute": "screen"}`. A privatizing reader reads only the instruments a spec names, and
 * [CollectionSpec.parse] has already checked the mapping against the metric's protocol (the constructor checks
 * nothing: a mapping built by hand is as given).
 *
 * @property instrument the instrument's name as the spec gives it (`[A-Za-z][A-Za-z0-9_./-]{0,254}`; matched
 *   case-insensitively: [key]).
 * @property kind the instrument's kind.
 * @property value how one window of it becomes one value ([OtelValue]).
 * @property attribute the attribute key whose value is counted ([OtelValue.ATTRIBUTE] only; 1 to 255 characters).
 * @property values the attribute values naming the protocol's categories in index order ([OtelValue.ATTRIBUTE] with
 *   a protocol of categories; null: the protocol's labels, or a protocol of strings).
 * @property buckets the histogram's upper bounds, strictly increasing ([OtelValue.BUCKET] only; OpenTelemetry's
 *   explicit buckets: bucket `i` holds `(buckets[i-1], buckets[i]]`, the last one everything above).
 */
public data class OtelSource(
    public val instrument: String,
    public val kind: OtelKind,
    public val value: OtelValue,
    public val attribute: String? = null,
    public val values: List<String>? = null,
    public val buckets: List<Double>? = null,
) {
    /** The instrument's name as matched: ASCII lowercase (as the OpenTelemetry SDKs compare names). */
    public val key: String get() = instrument.lowercase()

    /** The attribute values of the categories, in index order: [values], else the `labels` of [params] (null when
     * neither names them, or for a protocol without labels). */
    public fun categories(params: ProtocolParams): List<String>? =
        values ?: (params.values["labels"] as? List<*>)?.map { it as String }

    /** `to_dict()`: the mapping as the spec writes it, normalized (optional keys only when set, buckets as doubles). */
    public fun toDict(): Map<String, Any?> = linkedMapOf<String, Any?>("instrument" to instrument, "kind" to kind.value, "value" to value.value).also { out ->
        attribute?.let { out["attribute"] = it }
        values?.let { out["values"] = it }
        buckets?.let { out["buckets"] = it }
    }

    /** [toDict] with the buckets written as Python floats (`100.0`): the metric's `otel` in the canonical form. */
    internal fun canonicalDict(): Map<String, Any?> = toDict().toMutableMap().also { out ->
        buckets?.let { b -> out["buckets"] = b.map { PyFloat(it) } }
    }

    internal companion object {
        /** OpenTelemetry's instrument names (`INSTRUMENT_RE`). */
        private val INSTRUMENT_RE = Regex("^[A-Za-z][A-Za-z0-9_./-]{0,254}$")
        private const val MAX_ATTRIBUTE_LENGTH = 255

        /**
         * `parse_otel`: the `otel` key [raw] at [path] (a metric's), checked on its own and against [params] (null:
         * the params were refused, so only the key's own rules are checked), each problem reported to [fail] in the
         * Python validator's order; null when any was found. [obj] and [kind] are the spec checker's.
         */
        fun parse(
            raw: Any?,
            path: String,
            params: ProtocolParams?,
            errors: () -> Int,
            fail: (String, String) -> Unit,
            obj: (Any?, String, List<String>, List<String>) -> Map<String, Any?>?,
            kind: (Any?) -> String,
        ): OtelSource? {
            val o = obj(raw, path, listOf("instrument", "kind", "value"), listOf("attribute", "values", "buckets")) ?: return null
            val before = errors()
            fun shown(v: Any?) = if (v is String) Refuse.quote(v) else kind(v)
            fun at(key: String) = CollectionSpec.join(path, key)

            val instrument = o["instrument"]
            if ("instrument" in o && !(instrument is String && INSTRUMENT_RE.matches(instrument))) {
                fail(at("instrument"), "instrument names match [A-Za-z][A-Za-z0-9_./-]{0,254} (OpenTelemetry's rule), got ${shown(instrument)}")
            }
            val kindOf = (o["kind"] as? String)?.let { OtelKind.fromValue(it) }
            if ("kind" in o && kindOf == null) {
                fail(at("kind"), "must be one of ${OtelKind.entries.joinToString(", ")}, got ${shown(o["kind"])}")
            }
            val value = (o["value"] as? String)?.let { OtelValue.fromValue(it) }
            if ("value" in o && value == null) {
                fail(at("value"), "must be one of ${OtelValue.entries.joinToString(", ")}, got ${shown(o["value"])}")
            } else if (value != null && kindOf != null && kindOf !in value.kinds) {
                fail(at("value"), "'$value' reads a ${value.kinds.joinToString(" or ")} instrument, got kind ${Refuse.quote(kindOf.value)}")
            }
            val attribute = attribute(o, value, ::at, fail, ::shown)
            val buckets = buckets(o, value, ::at, fail, kind)
            val values = values(o, value, ::at, fail, kind)
            if (params != null && value != null) fits(value, params, if ("values" in o) o["values"] else values, buckets, ::at, fail)
            if (errors() != before || instrument !is String || kindOf == null || value == null) return null
            return OtelSource(instrument, kindOf, value, attribute, values, buckets)
        }

        private fun attribute(o: Map<String, Any?>, value: OtelValue?, at: (String) -> String, fail: (String, String) -> Unit, shown: (Any?) -> String): String? {
            if ("attribute" !in o) {
                if (value == OtelValue.ATTRIBUTE) fail(at("attribute"), "required with value 'attribute'")
                return null
            }
            val attribute = o["attribute"]
            when {
                value != OtelValue.ATTRIBUTE -> fail(at("attribute"), "only with value 'attribute'")
                attribute !is String || attribute.codePointCount(0, attribute.length) !in 1..MAX_ATTRIBUTE_LENGTH ->
                    fail(at("attribute"), "must be an attribute key of 1 to $MAX_ATTRIBUTE_LENGTH characters, got ${shown(attribute)}")
                else -> return attribute
            }
            return null
        }

        private fun values(o: Map<String, Any?>, value: OtelValue?, at: (String) -> String, fail: (String, String) -> Unit, kind: (Any?) -> String): List<String>? {
            if ("values" !in o) return null
            val values = o["values"]
            when {
                value != OtelValue.ATTRIBUTE -> fail(at("values"), "only with value 'attribute'")
                values !is List<*> || values.isEmpty() || !values.all { it is String } -> fail(at("values"), "must be a non-empty list of strings, got ${kind(values)}")
                values.toSet().size != values.size -> fail(at("values"), "must be distinct, got a value twice")
                else -> return values.map { it as String }
            }
            return null
        }

        private fun buckets(o: Map<String, Any?>, value: OtelValue?, at: (String) -> String, fail: (String, String) -> Unit, kind: (Any?) -> String): List<Double>? {
            if ("buckets" !in o) {
                if (value == OtelValue.BUCKET) fail(at("buckets"), "required with value 'bucket'")
                return null
            }
            val buckets = o["buckets"]
            when {
                value != OtelValue.BUCKET -> fail(at("buckets"), "only with value 'bucket'")
                buckets !is List<*> || buckets.isEmpty() || !buckets.all { isReal(it) && asDouble(it).isFinite() } ->
                    fail(at("buckets"), "must be a non-empty list of finite numbers, got ${kind(buckets)}")
                // Python compares an int and a float exactly: so do these (2^53 + 1 is above 2^53 as a float)
                buckets.zipWithNext().any { (a, b) -> exact(a) >= exact(b) } -> fail(at("buckets"), "must be strictly increasing")
                else -> return buckets.map { asDouble(it) }
            }
            return null
        }

        private fun exact(v: Any?): BigDecimal = when (v) {
            is BigInteger -> BigDecimal(v)
            is Long, is Int, is Short, is Byte -> BigDecimal.valueOf((v as Number).toLong())
            else -> BigDecimal(asDouble(v))
        }

        /** `_fits`: the mapping against the protocol: its class, the number of categories, `clip` for numbers
         * ([values]: as given, null when left out). */
        private fun fits(value: OtelValue, params: ProtocolParams, values: Any?, buckets: List<Double>?, at: (String) -> String, fail: (String, String) -> Unit) {
            val protocol = params.protocol
            val cls = OtelValueClass.of(protocol)
            if (cls == null) {
                fail(at("value"), "$protocol has no OpenTelemetry mapping (only the protocols of one value do)")
                return
            }
            if (cls !in value.classes) {
                fail(at("value"), "'$value' gives ${value.noun}, which $protocol does not encode (it takes ${cls.noun})")
                return
            }
            val size = params.values["domain_size"]
            when {
                value == OtelValue.ANY && cls == OtelValueClass.CATEGORY && size != 2L ->
                    fail(at("value"), "'any' gives a boolean: $protocol needs domain_size 2 for it, got $size")
                cls == OtelValueClass.NUMBER && params.values["clip"] != true ->
                    fail(at("value"), "'$value' gives any number: set params.clip to true, so that $protocol clips a value outside its range instead of refusing it")
                value == OtelValue.BUCKET && buckets != null && (buckets.size + 1).toLong() != size ->
                    fail(at("buckets"), "${buckets.size} bounds make ${buckets.size + 1} buckets: $protocol has domain_size $size")
                value == OtelValue.ATTRIBUTE && cls == OtelValueClass.CATEGORY -> when {
                    values is List<*> && values.isNotEmpty() && values.size.toLong() != size ->
                        fail(at("values"), "${values.size} values for $protocol's domain_size $size")
                    values == null && params.values["labels"] == null ->
                        fail(at("values"), "required: $protocol has no labels to name its categories")
                }
                value == OtelValue.ATTRIBUTE && values != null ->
                    fail(at("values"), "only for a protocol of categories: $protocol takes any string")
            }
        }
    }
}
