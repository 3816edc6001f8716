package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.internal.PyMath
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.BitMask

/**
 * Several attributes per report (`multi`; Wang et al., ICDE 2019; Arcolezi et al. 2021, `ldp/encoders/multi.py`):
 * `d >= 2` attributes, each by a fixed-domain or numeric protocol; `split` reports every attribute at `ε/d` (costs
 * the sum of their ε), `sample` reports one attribute `R(d)` at the full ε (costs the largest). An attribute is
 * `[name, protocol, {params without epsilon}]`; `rr` is symmetric RR at the attribute's ε.
 */
public class MultiParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** ε of one report, the [mode] (`"split"` or `"sample"`) and the attributes (at least 2). */
    public constructor(epsilon: Double, mode: String, attributes: List<Attribute>) :
        this(linkedMapOf("epsilon" to epsilon, "mode" to mode, "attributes" to attributes.map { listOf(it.name, it.protocol, it.params) }))

    /** One attribute: its [name] (`[a-z][a-z0-9_]{0,30}`, it prefixes the report's fields), its [protocol] (`rr`,
     * `grr`, `bucket-grr`, `dbitflip`, `duchi`, `piecewise` or `hybrid`) and that protocol's [params] without
     * `epsilon` (the multi's gives it). */
    public data class Attribute @JvmOverloads constructor(val name: String, val protocol: String, val params: Map<String, Any?> = emptyMap())

    override val protocol: String get() = "multi"
    public val epsilon: Double = reader.double("epsilon")
    public val mode: String
    public val names: List<String>
    public val protocols: List<String>
    public val components: List<ProtocolParams>

    init {
        mode = reader.choice("mode")
        val raw = values["attributes"]
        if (raw !is List<*>) throw Refuse.paramType("attributes", "list", raw, "attributes must be a list of [name, protocol, params], got ${Refuse.kind(raw)}")
        if (raw.size < 2) throw Refuse.paramLength("attributes", raw.size.toLong(), 2L, message = "a multi report needs at least 2 attributes (use the protocol itself for one), got ${raw.size}")
        val attrs = raw.mapIndexed { i, a -> normalized(a, i) }
        names = attrs.map { it.first }
        if (names.toSet().size != names.size) throw Refuse.relation("distinct", listOf("attributes"), "attribute names must be distinct, got ${Refuse.show(names)}")
        protocols = attrs.map { it.second }
        val each = if (mode == "split") epsilon / attrs.size else epsilon
        components = attrs.mapIndexed { i, (name, proto, params) ->
            try {
                build(proto, params, each)
            } catch (e: IllegalArgumentException) {
                throw Refuse.restated(e, "attributes[$i] ($name): $proto at ε=$each: ", emptyMap(), "attribute" to name)
            }
        }
        val fieldNames = schema.map { it.name }
        if (fieldNames.size > MAX_FIELDS) throw Refuse.limit("fields", fieldNames.size.toLong(), MAX_FIELDS.toLong(), "a multi report carries at most $MAX_FIELDS fields (the wire format's limit); these attributes need ${fieldNames.size}")
        val tooLong = fieldNames.filter { it.length > 32 }
        if (tooLong.isNotEmpty()) throw Refuse.limit("field_name_characters", tooLong.maxOf { it.length }.toLong(), 32L, "report field names are at most 32 characters; shorten the attribute names of ${Refuse.show(tooLong)}")
        if (fieldNames.toSet().size != fieldNames.size) throw Refuse.relation("distinct_fields", listOf("attributes"), "attribute names make colliding report fields ${Refuse.show(fieldNames.sorted())}; rename an attribute")
        Checks.collectable(protocol, schema, components.size + components.sumOf { cells(it) })
    }

    override val domainSize: Int? get() = null
    public val d: Int get() = components.size
    public val prefixes: List<String> get() = names.map { "${it}_" }

    override fun canonicalDict(): Map<String, Any?> = linkedMapOf(
        "epsilon" to io.github.ldptelemetry.client.internal.PyFloat(epsilon), "mode" to mode,
        "attributes" to names.indices.map { i -> listOf(names[i], protocols[i], withoutEpsilon(components[i], canonical = true)) },
    )

    override val privacyCost: PrivacyCost by lazy {
        val costs = components.map { it.privacyCost.epsilon }
        PrivacyCost(if (mode == "split") fsum(costs) else costs.max())
    }

    override val schema: List<PayloadField>
        get() = (if (mode == "sample") listOf(PayloadField.uint("attr", components.size.toLong())) else emptyList()) +
            components.flatMapIndexed { i, c -> c.schema.map { f -> f.copy(name = names[i] + "_" + f.name) } }

    public companion object {
        /** The most fields a report carries (the wire format's limit). */
        public const val MAX_FIELDS: Int = 16
        private val NAME_RE = Regex("^[a-z][a-z0-9_]{0,30}$")
        private val COMPONENTS = listOf("rr", "grr", "bucket-grr", "dbitflip", "duchi", "piecewise", "hybrid")
        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): MultiParams = PROTOCOL.params(values)

        public val PROTOCOL: Protocol<MultiParams> = Protocol("multi", "MultiParams", ::MultiParams, { p, o -> MultiEncoder(p, o) })

        private fun normalized(a: Any?, i: Int): Triple<String, String, Map<String, Any?>> {
            val name: Any?
            val proto: Any?
            val params: Any?
            if (a is Map<*, *>) {
                if (a.keys.map { it.toString() }.toSet() != setOf("name", "protocol", "params")) {
                    throw Refuse.paramType(
                        "attributes", "attribute", a,
                        "attributes[$i] must have exactly the keys name, protocol, params; got ${Refuse.show(a.keys.map { it.toString() }.sorted())}",
                        index = i, valueError = true,
                    )
                }
                name = a["name"]
                proto = a["protocol"]
                params = a["params"]
            } else if (a is List<*> && a.size == 3) {
                name = a[0]
                proto = a[1]
                params = a[2]
            } else {
                throw Refuse.paramType("attributes", "attribute", a, "attributes[$i] must be [name, protocol, params] or an object of them, got ${Refuse.kind(a)}", index = i)
            }
            if (!(name is String && NAME_RE.matches(name))) {
                val message = "attributes[$i]: names are [a-z][a-z0-9_]{0,30} (they prefix report fields), got ${Refuse.show(name)}"
                if (name !is String) throw Refuse.paramType("attributes", "string", name, message, index = i, valueError = true)
                throw Refuse.relation("attribute_name", listOf("attributes"), message, index = i)
            }
            if (proto !in COMPONENTS) {
                throw Refuse.paramChoice("attributes", COMPONENTS, proto, index = i)
            }
            if (params !is Map<*, *>) throw Refuse.paramType("attributes", "object", params, "attributes[$i] ($name): params must be an object, got ${Refuse.kind(params)}", index = i)
            if ("epsilon" in params) {
                throw LdpValueException(
                    RefusalCode.UNKNOWN_PARAMS, mapOf("params" to listOf("epsilon"), "attribute" to name),
                    "attributes[$i] ($name): params must not carry epsilon (the multi's epsilon is split or given whole by the mode)",
                )
            }
            @Suppress("UNCHECKED_CAST")
            return Triple(name, proto as String, params as Map<String, Any?>)
        }

        private fun build(proto: String, params: Map<String, Any?>, epsilon: Double): ProtocolParams {
            if (proto == "rr") {
                if (params.isNotEmpty()) throw Refuse.unknownParams(params.keys.sortedWith(PyText.CODE_POINT_ORDER), "rr attribute (it takes none: symmetric RR at the attribute's ε)")
                val eps = Checks.epsilon(epsilon)
                val p = PyMath.logisticTail(eps)
                val q = PyMath.logisticTail(-eps)
                if (q == 1.0) throw Refuse.relation("epsilon_too_large", listOf("epsilon"), "epsilon=$eps is too large for binary RR: q = 1/(1+e^-ε) rounds to 1 in double precision, so reports would not be private")
                return BinaryRRParams.PROTOCOL.params(linkedMapOf("p" to p, "q" to q))
            }
            return Protocols[proto]!!.paramsOf(LinkedHashMap(params).apply { put("epsilon", epsilon) })
        }

        private fun withoutEpsilon(c: ProtocolParams, canonical: Boolean): Map<String, Any?> =
            if (c is BinaryRRParams) emptyMap() else (if (canonical) c.canonicalDict() else c.toDict()).filterKeys { it != "epsilon" }

        private fun cells(c: ProtocolParams): Long = when (c) {
            is BinaryRRParams -> 1L
            is DuchiParams -> 2L
            is HybridParams -> c.cells + 2L
            is PiecewiseParams -> c.cells.toLong()
            is DBitFlipParams -> 2L * c.numBuckets
            else -> (c.domainSize ?: 0).toLong()
        }

        /** `math.fsum`: the correctly rounded sum. */
        private fun fsum(xs: List<Double>): Double {
            var acc = java.math.BigDecimal.ZERO
            for (x in xs) acc = acc.add(java.math.BigDecimal(x))
            return acc.toDouble()
        }
    }
}

/** The `multi` encoder: a value is a map `{name: value}` of every attribute. */
public class MultiEncoder(params: MultiParams, options: EncoderOptions) : Encoder<MultiParams, List<Prepared>>(params, options) {
    private val parts = params.components.map { c -> Protocols[c.protocol]!!.encoder(c, EncoderOptions(rng = rng)) }

    override fun check(value: Any?): List<Prepared> {
        val names = params.names
        if (value !is Map<*, *>) {
            throw Refuse.valueType("object", value, "multi values must be a map {name: value} of the attributes ${Refuse.show(names)}, got ${Refuse.kind(value)}")
        }
        val missing = names.filter { it !in value }
        if (missing.isNotEmpty()) throw Refuse.missingAttributes(missing)
        val extra = value.keys.map { it.toString() }.filter { it !in names }
        if (extra.isNotEmpty()) throw Refuse.unknownAttributes(extra.sortedWith(PyText.CODE_POINT_ORDER))
        return names.mapIndexed { i, name ->
            try {
                parts[i].prepare(value[name])
            } catch (e: IllegalArgumentException) {
                throw Refuse.restated(e, "attribute ${Refuse.quote(name)}: ", emptyMap(), "attribute" to name)
            }
        }
    }

    override fun draw(value: List<Prepared>): Report {
        val pr = params
        if (pr.mode == "split") {
            return report(value.flatMapIndexed { i, p -> p.randomize().payload.map { (k, v) -> pr.prefixes[i] + k to v } })
        }
        val j = rng.randbelow(pr.d)
        val payload = mutableListOf<Pair<String, Any>>("attr" to j.toLong())
        for ((i, c) in pr.components.withIndex()) {
            if (i == j) {
                payload.addAll(value[j].randomize().payload.map { (k, v) -> pr.prefixes[j] + k to v })
            } else {
                for (f in c.schema) payload.add(pr.prefixes[i] + f.name to if (f.kind == PayloadField.Kind.UINT) 0L else BitMask(f.size.toInt()))
            }
        }
        return report(payload)
    }
}
