package io.github.ldptelemetry.client.spec

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.Refusal
import io.github.ldptelemetry.client.SpecException
import io.github.ldptelemetry.client.dap.Prio3Fit
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.internal.JsonException
import io.github.ldptelemetry.client.internal.PyFloat
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.protocols.Protocol
import io.github.ldptelemetry.client.protocols.Poplar1Params
import io.github.ldptelemetry.client.protocols.ProtocolParams
import io.github.ldptelemetry.client.protocols.Protocols
import io.github.ldptelemetry.client.protocols.asDouble
import io.github.ldptelemetry.client.protocols.isInt
import io.github.ldptelemetry.client.protocols.isReal
import java.math.BigInteger

/** Budget caps of the collection or of one metric (`null`: no cap at that level). */
public data class Budget(val perReport: PrivacyCost? = null, val perWindow: PrivacyCost? = null, val lifetime: PrivacyCost? = null)

/**
 * Whom a metric's guarantee trusts (the spec's `trust`, `TRUST_MODELS` of ldp/spec/schema.py): [LOCAL] (no one: each
 * report is randomized on the device; the default), [SHUFFLE] (the shuffler, for a central ε by amplification),
 * [TWO_AGGREGATOR] (two non-colluding aggregators: the value secret-shared with Prio3, noised centrally) and
 * [TWO_AGGREGATOR_LOCAL] (the same, randomized on the device first). [value] is the spec's spelling.
 */
public enum class TrustModel(public val value: String) {
    LOCAL("local"),
    SHUFFLE("shuffle"),
    TWO_AGGREGATOR("two-aggregator"),
    TWO_AGGREGATOR_LOCAL("two-aggregator+local"),
    ;

    /** Whether the values go to the two-aggregator mode: secret-shared between two aggregators, recorded with the
     * metric's task ([io.github.ldptelemetry.client.dap.TwoAggregatorTask]) and refused without one
     * ([io.github.ldptelemetry.client.RefusalCode.TRUST_MODEL]). */
    public val twoAggregator: Boolean get() = this == TWO_AGGREGATOR || this == TWO_AGGREGATOR_LOCAL

    override fun toString(): String = value

    public companion object {
        /** The model spelled [value] (`"two-aggregator"`), or null. */
        @JvmStatic
        public fun fromValue(value: String): TrustModel? = entries.firstOrNull { it.value == value }
    }
}

/** One metric of a spec: its protocol parameters, budget, where the server finds its candidates, whom its
 * guarantee trusts ([trust]: [TrustModel.LOCAL] when the spec leaves it out; fingerprinted when not), and the
 * OpenTelemetry instrument that feeds it ([otel]: null when the spec leaves it out; fingerprinted when not). */
public class MetricSpec internal constructor(
    public val name: String,
    public val params: ProtocolParams,
    public val budget: Budget,
    public val candidates: String?,
    public val description: String,
    public val trust: TrustModel,
    /** The spec's `otel` key: which OpenTelemetry instrument feeds the metric and how, checked against its protocol
     * ([OtelSource]); null without one. */
    public val otel: OtelSource? = null,
) {
    /** The metric's protocol (its name is `params.protocol`). */
    public val protocol: Protocol<*> get() = Protocols.ofSpec(params.protocol)!!
}

/**
 * A validated collection spec (`ldp/spec/schema.py`, docs/client.md "The collection spec"): one JSON document naming
 * every metric with its protocol, parameters and budgets. [parse] checks it with the Python validator's rules
 * (every problem, as `json.path: message`, in one [SpecException]) and normalizes it, so that [fingerprint] is
 * the Python spec's fingerprint, which every envelope carries.
 *
 * A metric of a protocol this client does not implement is refused here, naming the protocols it knows: a spec this
 * client accepts is one it can serve.
 */
public class CollectionSpec private constructor(
    public val name: String,
    public val budget: Budget,
    public val metrics: Map<String, MetricSpec>,
    public val windowSeconds: Long,
    public val minIntervalSeconds: Long,
    public val maxBatch: Int,
    public val description: String,
) {
    /** The metric called [name]; an [IllegalArgumentException] naming the known ones otherwise. */
    public fun metric(name: String): MetricSpec = metrics[name]
        ?: throw IllegalArgumentException("no metric ${Refuse.quote(name)} in collection ${Refuse.quote(this.name)} (metrics: ${metrics.keys.joinToString(", ")})")

    /** The protocol parameters of metric [name]. */
    public fun params(name: String): ProtocolParams = metric(name).params

    /** What the device's ledger is charged for one report of metric [name] (Python's `report_charge`): the protocol's
     * local cost when the device randomizes (`local`, `shuffle`, `two-aggregator+local`); for a `two-aggregator`
     * metric, whose exact value is secret-shared, the spec's `budget.per_report`. */
    public fun reportCharge(name: String): PrivacyCost {
        val m = metric(name)
        return if (m.trust == TrustModel.TWO_AGGREGATOR) m.budget.perReport ?: m.params.privacyCost else m.params.privacyCost
    }

    /** The most reports of metric [name] one device sends a window (Python's `reports_per_window`): its per-window cap
     * (the metric's, else the collection's) over its per-report cost, at least 1; null without a per-window cap. */
    public fun reportsPerWindow(name: String): Long? {
        val m = metric(name)
        val cap = m.budget.perWindow ?: budget.perWindow ?: return null
        val per = m.budget.perReport ?: m.params.privacyCost
        if (per.epsilon <= 0) return null
        return maxOf(1L, Math.floor(cap.epsilon / per.epsilon + 1e-9).toLong())
    }

    /** The per-window cap of metric [name] on the device's ledger (Python's `device_window_cap`): the spec's for a
     * `local` or `shuffle` metric; for a two-aggregator one, k reports' [reportCharge], k its [reportsPerWindow] (1
     * when the spec caps none), so a device sends at most the k reports a window that the central guarantee counts. */
    public fun deviceWindowCap(name: String): PrivacyCost? {
        val m = metric(name)
        if (!m.trust.twoAggregator) return m.budget.perWindow
        val charge = reportCharge(name)
        val k = (reportsPerWindow(name) ?: 1L).toDouble()
        return PrivacyCost(charge.epsilon * k, charge.delta * k)
    }

    /** The normalized document without release thresholds, with Python's number forms: what the fingerprint hashes. */
    public fun canonicalDict(): Map<String, Any?> {
        val ms = LinkedHashMap<String, Any?>()
        for ((n, m) in metrics) {
            val doc = linkedMapOf<String, Any?>("protocol" to m.params.protocol, "params" to m.params.canonicalDict(), "budget" to budgetJson(m.budget))
            if (m.candidates != null) doc["candidates"] = m.candidates
            if (m.description.isNotEmpty()) doc["description"] = m.description
            if (m.trust != TrustModel.LOCAL) doc["trust"] = m.trust.value // left out: older specs keep their fingerprints
            if (m.otel != null) doc["otel"] = m.otel.canonicalDict() // likewise left out when absent
            ms[n] = doc
        }
        val out = linkedMapOf<String, Any?>(
            "spec_version" to SPEC_VERSION.toLong(), "name" to name, "window_seconds" to windowSeconds, "budget" to budgetJson(budget),
            "upload" to linkedMapOf("min_interval_seconds" to minIntervalSeconds, "max_batch" to maxBatch.toLong()), "metrics" to ms,
        )
        if (description.isNotEmpty()) out["description"] = description
        return out
    }

    /** `canonical_json(spec.to_dict(release=False))`. */
    public fun canonical(): String = PyText.canonicalJson(canonicalDict())

    /** 16 hex digits of SHA-256 over [canonical]: names this exact spec. */
    public val fingerprint: String by lazy { PyText.sha256Hex16(canonical()) }

    public companion object {
        public const val SPEC_VERSION: Int = 1

        /** The longest window or upload interval: the ledger clock's range (to year 9999). */
        public const val MAX_SECONDS: Long = 253402300799L
        public const val MAX_BATCH: Long = 1L shl 20
        private const val MAX_MIN_REPORTS = 1L shl 62
        /** Longest planned horizon of `release.central.windows` (as the Python package's `MAX_TARGET_WINDOWS`). */
        private const val MAX_TARGET_WINDOWS = 1_000_000L
        private const val SECONDS_WHY = "the clock's range ends in year 9999"
        private const val POPLAR1_TRUST = "must be two-aggregator for poplar1 (its devices share the exact value: no local randomizer)"
        private val NAME_RE = Regex("^[a-z][a-z0-9_.-]{0,63}$")
        private val METRIC_RE = Regex("^[a-z][a-z0-9_]{0,31}$")

        /** Parses and validates spec JSON text; [SpecException] lists every problem. */
        @JvmStatic
        @JvmOverloads
        public fun parse(text: String, source: String = "spec"): CollectionSpec {
            val data = try {
                Json.parse(text)
            } catch (e: JsonException) {
                throw SpecException(listOf("$: not valid JSON: ${e.message}"), source)
            }
            return fromDict(data, source)
        }

        /** Validates and normalizes a decoded document. */
        @JvmStatic
        @JvmOverloads
        public fun fromDict(data: Any?, source: String = "spec"): CollectionSpec = Checker().spec(data, source)

        private fun budgetJson(b: Budget): Map<String, Any?> {
            val out = LinkedHashMap<String, Any?>()
            fun cost(c: PrivacyCost): Any = if (c.delta == 0.0) PyFloat(c.epsilon) else linkedMapOf("epsilon" to PyFloat(c.epsilon), "delta" to PyFloat(c.delta))
            b.perReport?.let { out["per_report"] = cost(it) }
            b.perWindow?.let { out["per_window"] = cost(it) }
            b.lifetime?.let { out["lifetime"] = cost(it) }
            return out
        }

        internal fun join(path: String, key: String): String {
            if (!METRIC_RE.matches(key)) return "$path[${Json.write(key)}]"
            return if (path == "$") key else "$path.$key"
        }
    }

    private class Checker {
        val errors = ArrayList<String>()

        fun fail(path: String, msg: String) {
            errors.add("$path: $msg")
        }

        /** `_kind`: how the validator names a JSON value's type. */
        fun kind(v: Any?): String = when (v) {
            null -> "null"
            is List<*> -> "a list"
            is String -> "a string"
            is Boolean -> "a boolean"
            is Map<*, *> -> "an object"
            else -> "${Refuse.kind(v)} ${v}"
        }

        fun obj(value: Any?, path: String, required: List<String>, optional: List<String>): Map<String, Any?>? {
            if (value !is Map<*, *>) {
                fail(path, "must be an object, got ${kind(value)}")
                return null
            }
            @Suppress("UNCHECKED_CAST")
            val m = value as Map<String, Any?>
            val allowed = (required + optional).toSet()
            for (key in m.keys.filter { it !in allowed }.sortedWith(PyText.CODE_POINT_ORDER)) {
                fail(join(path, key), "unknown key (expected one of ${allowed.sortedWith(PyText.CODE_POINT_ORDER).joinToString(", ")})")
            }
            for (key in required.filter { it !in m }.sortedWith(PyText.CODE_POINT_ORDER)) fail(join(path, key), "required")
            return m
        }

        fun int(value: Any?, path: String, low: Long, high: Long, why: String): Long? {
            if (!isInt(value)) {
                fail(path, "must be an integer, got ${kind(value)}")
                return null
            }
            val big = if (value is BigInteger) value else BigInteger.valueOf((value as Number).toLong())
            when {
                big < BigInteger.valueOf(low) -> fail(path, "must be >= $low, got $value")
                big > BigInteger.valueOf(high) -> fail(path, "must be <= ${high} ($why), got ${thousandsBig(big)}")
                else -> return big.toLong()
            }
            return null
        }

        fun thousandsBig(b: BigInteger): String = b.toString()

        fun cost(value: Any?, path: String): PrivacyCost? {
            val parts: List<Pair<Any?, String>>
            val wanted: String
            if (value is Map<*, *>) {
                val m = obj(value, path, listOf("epsilon"), listOf("delta")) ?: return null
                if ("epsilon" !in m) return null
                parts = listOf(m["epsilon"] to join(path, "epsilon"), (if ("delta" in m) m["delta"] else 0L) to join(path, "delta"))
                wanted = "a finite number"
            } else {
                parts = listOf(value to path, 0L to path)
                wanted = "a finite number (ε) or {\"epsilon\": ε, \"delta\": δ}"
            }
            for ((v, p) in parts) {
                if (!isReal(v) || asDouble(v).let { it.isNaN() || it.isInfinite() }) {
                    fail(p, "must be $wanted, got ${kind(v)}")
                    return null
                }
            }
            val eps = asDouble(parts[0].first)
            val delta = asDouble(parts[1].first)
            when {
                !(eps > 0) -> fail(parts[0].second, "must be > 0, got ${(parts[0].first)}")
                !(delta >= 0 && delta < 1) -> fail(parts[1].second, "must be in [0, 1), got ${(parts[1].first)}")
                else -> return PrivacyCost(eps, delta)
            }
            return null
        }

        fun release(value: Any?, path: String) {
            val v = obj(value, path, emptyList(), listOf("min_reports", "min_z", "central")) ?: return
            if ("central" in v) central(v["central"], join(path, "central"))
            if ("min_reports" in v) int(v["min_reports"], join(path, "min_reports"), 0, MAX_MIN_REPORTS, "a count of reports")
            if ("min_z" in v) {
                val z = v["min_z"]
                if (!isReal(z) || asDouble(z).let { it.isNaN() || it.isInfinite() }) {
                    fail(join(path, "min_z"), "must be a finite number >= 0, got ${kind(z)}")
                } else if (asDouble(z) < 0) {
                    fail(join(path, "min_z"), "must be >= 0, got ${z}")
                }
            }
        }

        /** A central target: `epsilon` finite > 0, `delta` in (0, 1), `windows` an integer in [1, 1,000,000] (optional). */
        fun central(value: Any?, path: String) {
            val v = obj(value, path, listOf("epsilon", "delta"), listOf("windows")) ?: return
            for ((key, rule) in listOf("epsilon" to "> 0", "delta" to "in (0, 1)")) {
                if (key !in v) continue
                val x = v[key]
                if (!isReal(x) || asDouble(x).let { it.isNaN() || it.isInfinite() }) {
                    fail(join(path, key), "must be a finite number $rule, got ${kind(x)}")
                } else if (!(asDouble(x) > 0 && (key == "epsilon" || asDouble(x) < 1))) {
                    fail(join(path, key), "must be $rule, got ${x}")
                }
            }
            if ("windows" in v) int(v["windows"], join(path, "windows"), 1, MAX_TARGET_WINDOWS, "a horizon the accountant composes")
        }

        fun le(small: PrivacyCost?, big: PrivacyCost?, path: String, what: String) {
            if (small != null && big != null && !small.fitsWithin(big)) fail(path, "$small exceeds $what ($big)")
        }

        fun params(protocolName: Any?, raw: Any?, path: String): ProtocolParams? {
            val entry = (protocolName as? String)?.let { Protocols.ofSpec(it) }
            if (entry == null) {
                val shown = if (protocolName is String) Refuse.quote(protocolName) else Refuse.show(protocolName)
                val notYet = if (protocolName is String && protocolName in Protocols.NOT_YET) {
                    "; $protocolName is a protocol of the Python client that this client does not implement yet"
                } else {
                    ""
                }
                fail(join(path, "protocol"), "unknown protocol $shown (known: ${(Protocols.names + Poplar1Params.NAME).sorted().joinToString(", ")})$notYet")
                return null
            }
            val required = entry.fields.filter { !it.hasDefault }.map { it.name }
            val optional = entry.fields.filter { it.hasDefault }.map { it.name }
            val ppath = join(path, "params")
            val o = obj(raw, ppath, required, optional) ?: return null
            if (!required.all { it in o } || !o.keys.all { k -> entry.fields.any { it.name == k } }) return null
            return try {
                entry.params(o).also { it.privacyCost }
            } catch (e: IllegalArgumentException) {
                val msg = e.message ?: e.toString()
                val param = (e as? Refusal)?.fields?.get("param") as? String
                val name = param?.takeIf { msg.startsWith("$it ") } ?: entry.fields.map { it.name }.firstOrNull { msg.startsWith("$it ") }
                if (name == null) {
                    fail(ppath, msg)
                } else {
                    fail(join(ppath, name), if (msg[name.length + 1] == '(') msg else msg.substring(name.length + 1))
                }
                null
            }
        }

        fun metric(name: String, raw: Any?, total: Budget): MetricSpec? {
            val path = join("metrics", name)
            if (!METRIC_RE.matches(name)) fail(path, "metric names match [a-z][a-z0-9_]{0,31}")
            val m = obj(raw, path, listOf("protocol", "params", "budget"), listOf("candidates", "description", "release", "trust", "otel")) ?: return null
            val params = if ("protocol" in m && "params" in m) params(m["protocol"], m["params"], path) else null
            val bpath = join(path, "budget")
            var budget: Budget? = null
            if ("budget" in m) {
                val b = obj(m["budget"], bpath, listOf("per_report"), listOf("per_window", "lifetime"))
                if (b != null) {
                    val perReport = if ("per_report" in b) cost(b["per_report"], join(bpath, "per_report")) else null
                    val perWindow = if ("per_window" in b) cost(b["per_window"], join(bpath, "per_window")) else null
                    val lifetime = if ("lifetime" in b) cost(b["lifetime"], join(bpath, "lifetime")) else null
                    budget = Budget(perReport, perWindow, lifetime)
                    le(perReport, perWindow, join(bpath, "per_report"), "the metric's per_window")
                    le(perWindow, lifetime, join(bpath, "per_window"), "the metric's lifetime")
                    le(perReport, lifetime, join(bpath, "per_report"), "the metric's lifetime")
                    le(perReport, total.perWindow, join(bpath, "per_report"), "budget.per_window of the collection")
                    le(perReport, total.lifetime, join(bpath, "per_report"), "budget.lifetime of the collection")
                    if (params != null && perReport != null && !params.privacyCost.fitsWithin(perReport)) {
                        fail(
                            join(bpath, "per_report"),
                            "$perReport is less than what one ${params.protocol} report costs with these params (${params.privacyCost})",
                        )
                    }
                }
            }
            val candidates = m["candidates"]
            val cpath = join(path, "candidates")
            if (candidates != null) {
                if (candidates !is String || candidates.isBlank()) {
                    fail(cpath, "must be a path relative to the spec file, or a URL; got ${kind(candidates)}")
                } else if ("://" !in candidates && (candidates.startsWith("/") || candidates.startsWith("~"))) {
                    fail(cpath, "must be relative to the spec file (or a URL), got ${Refuse.quote(candidates)}")
                } else if (params?.domainSize != null) {
                    fail(cpath, "${params.protocol} has a fixed domain (domain_size=${params.domainSize}); candidates are for open-domain protocols")
                }
            }
            val description = if ("description" in m) m["description"] else ""
            if (description !is String) fail(join(path, "description"), "must be a string, got ${kind(description)}")
            if ("release" in m) release(m["release"], join(path, "release"))
            val rawTrust = if ("trust" in m) m["trust"] else "local"
            val trust = (rawTrust as? String)?.let { TrustModel.fromValue(it) }
            if (trust == null) {
                val shown = if (rawTrust is String || isReal(rawTrust)) Refuse.show(rawTrust) else Json.write(rawTrust)
                fail(join(path, "trust"), "must be one of ${TrustModel.entries.joinToString(", ")}, got $shown")
            } else if (params is Poplar1Params) {
                if (trust != TrustModel.TWO_AGGREGATOR) fail(join(path, "trust"), "$POPLAR1_TRUST, got ${Refuse.show(trust.value)}")
            } else if (trust.twoAggregator && params != null && Prio3Fit.of(params.protocol) == null) {
                fail(join(path, "trust"), "${params.protocol} does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): no two-aggregator mode for it")
            }
            val otel = if ("otel" in m) OtelSource.parse(m["otel"], join(path, "otel"), params, { errors.size }, ::fail, ::obj, ::kind) else null
            if (params == null || budget?.perReport == null) return null
            return MetricSpec(name, params, budget, candidates as? String, description as? String ?: "", trust ?: TrustModel.LOCAL, otel)
        }

        fun spec(data: Any?, source: String): CollectionSpec {
            val d = obj(data, "$", listOf("spec_version", "name", "budget", "metrics"), listOf("window_seconds", "upload", "description", "release"))
                ?: throw SpecException(errors, source)
            if ("spec_version" in d && !(isInt(d["spec_version"]) && d["spec_version"] == SPEC_VERSION.toLong())) {
                val v = d["spec_version"]
                fail("spec_version", "must be $SPEC_VERSION, got ${if (v is String || isReal(v)) Refuse.show(v) else Json.write(v)}")
            }
            val name = d["name"]
            if ("name" in d && !(name is String && NAME_RE.matches(name))) {
                fail("name", "collection names match [a-z][a-z0-9_.-]{0,63}, got ${if (name is String) Refuse.quote(name) else Json.write(name)}")
            }
            val window = int(if ("window_seconds" in d) d["window_seconds"] else 86400L, "window_seconds", 1, MAX_SECONDS, SECONDS_WHY)
            var total = Budget()
            if ("budget" in d) {
                val b = obj(d["budget"], "budget", listOf("per_window", "lifetime"), emptyList())
                if (b != null) {
                    total = Budget(
                        perWindow = if ("per_window" in b) cost(b["per_window"], "budget.per_window") else null,
                        lifetime = if ("lifetime" in b) cost(b["lifetime"], "budget.lifetime") else null,
                    )
                    le(total.perWindow, total.lifetime, "budget.per_window", "budget.lifetime")
                }
            }
            var interval = 86400L
            var batch = 1000L
            val rawUp = if ("upload" in d) d["upload"] else emptyMap<String, Any?>()
            val up = obj(rawUp, "upload", emptyList(), listOf("min_interval_seconds", "max_batch"))
            if (up != null) {
                interval = int(if ("min_interval_seconds" in up) up["min_interval_seconds"] else 86400L, "upload.min_interval_seconds", 0, MAX_SECONDS, SECONDS_WHY) ?: 86400L
                batch = int(if ("max_batch" in up) up["max_batch"] else 1000L, "upload.max_batch", 1, MAX_BATCH, "a client holds one batch in memory") ?: 1000L
            }
            val description = if ("description" in d) d["description"] else ""
            if (description !is String) fail("description", "must be a string, got ${kind(description)}")
            if ("release" in d) release(d["release"], "release")
            val metrics = LinkedHashMap<String, MetricSpec>()
            val rawMetrics = d["metrics"]
            if ("metrics" in d) {
                val names = (rawMetrics as? Map<*, *>)?.keys?.map { it.toString() } ?: emptyList()
                if (obj(rawMetrics, "metrics", emptyList(), names) != null) {
                    if (names.isEmpty()) fail("metrics", "a collection needs at least one metric")
                    for (mname in names.sortedWith(PyText.CODE_POINT_ORDER)) {
                        metric(mname, (rawMetrics as Map<*, *>)[mname], total)?.let { metrics[mname] = it }
                    }
                }
            }
            if (errors.isNotEmpty()) throw SpecException(errors, source)
            return CollectionSpec(name as String, total, metrics, window!!, interval, batch.toInt(), description as String)
        }
    }
}
