package io.github.ldptelemetry.client.dap

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.protocols.Poplar1Params
import io.github.ldptelemetry.client.protocols.Prepared
import io.github.ldptelemetry.client.protocols.Protocols
import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.spec.TrustModel

/**
 * How a protocol's report enters Prio3 (Python's `ProtocolParams.prio3_fit()`, `ldp/encoders/base_vdaf.py`): the
 * Prio3 type and the randomized report's [field] that is the measurement; the aggregate's length is the field's size
 * in the protocol's schema (rr's 2 values are one count). The protocols listed are those with a two-aggregator mode
 * (the spec refuses one for the others).
 */
internal enum class Prio3Fit(val vdaf: String, val field: String, val protocols: Set<String>) {
    COUNT("Prio3Count", "bit", setOf("rr")),
    HISTOGRAM("Prio3Histogram", "index", setOf("grr")),
    POINTS("Prio3Histogram", "j", setOf("pgr", "hpg")),
    SUM_VEC("Prio3SumVec", "bits", setOf("sue", "oue")),
    ;

    companion object {
        fun of(protocol: String): Prio3Fit? = entries.firstOrNull { protocol in it.protocols }
    }
}

/**
 * A two-aggregator metric of a [io.github.ldptelemetry.client.TelemetryClient] (Python's `DapEncoder` and
 * `device_task`, `ldp/client/dap.py`): its [task], checked against the spec when made (an [IllegalArgumentException]
 * naming the first difference: the metric, window, trust model, VDAF type, reports a window, local protocol, Prio3
 * parameters, or for the `poplar1` kind a Poplar1 task's bits and max_candidates), what one report costs ([charge],
 * [CollectionSpec.reportCharge]), and the outbox line of a charged report ([line]).
 */
internal class DapMetric(spec: CollectionSpec, val metric: String, val task: TwoAggregatorTask) {
    private val m = spec.metric(metric)

    /** The `poplar1` metric kind's parameters (strings: a Poplar1 task), else null (a Prio3 task). */
    private val poplar1 = m.params as? Poplar1Params
    private val fit = if (poplar1 != null) null else Prio3Fit.of(m.params.protocol)
        ?: throw IllegalArgumentException("tasks: ${Refuse.quote(metric)} does not fit in Prio3")
    private val vdaf = fit?.vdaf ?: POPLAR1
    private val local = m.trust == TrustModel.TWO_AGGREGATOR_LOCAL
    private val length = poplar1?.bits?.toLong() ?: m.params.schema[0].size.let { if (fit == Prio3Fit.COUNT) 1L else it }

    /** What one report costs the ledger. */
    val charge: PrivacyCost = spec.reportCharge(metric)

    init {
        val wantLocal = if (local) linkedMapOf("protocol" to m.params.protocol, "params" to m.params.toDict()) else null
        val want = listOf(
            Triple("metric", metric, task.metric), Triple("window_seconds", spec.windowSeconds, task.windowSeconds),
            Triple("trust", m.trust.value, task.trust), Triple("vdaf", vdaf, task.vdafType),
            Triple("reports_per_window", spec.reportsPerWindow(metric), task.reportsPerWindow),
        )
        for ((key, ours, theirs) in want) if (ours != theirs) mismatch(spec, key, Refuse.show(theirs), Refuse.show(ours))
        if (!sameLocal(task.localJson)) mismatch(spec, "local", task.localJson ?: "null", wantLocal?.let { Json.write(it) } ?: "null")
        if (poplar1 != null) {
            if (task.length.toLong() != length || task.maxCandidates != poplar1.maxCandidates) {
                throw IllegalArgumentException(
                    "the task given for metric ${Refuse.quote(metric)} has Poplar1 parameters (bits ${task.length}, " +
                        "max_candidates ${task.maxCandidates}), the spec's metric (bits $length, max_candidates ${poplar1.maxCandidates})",
                )
            }
        }
        val maxMeasurement = if (fit == Prio3Fit.SUM_VEC) 1L else null
        if (poplar1 == null && (task.length.toLong() != length || task.maxMeasurement != maxMeasurement)) {
            throw IllegalArgumentException(
                "the task given for metric ${Refuse.quote(metric)} has Prio3 parameters (length ${task.length}, " +
                    "max_measurement ${task.maxMeasurement}), the spec's metric (length $length, max_measurement $maxMeasurement)",
            )
        }
    }

    private fun mismatch(spec: CollectionSpec, key: String, theirs: String, ours: String): Nothing = throw IllegalArgumentException(
        "the task given for metric ${Refuse.quote(metric)} is not its task under spec ${Refuse.quote(spec.name)}: its $key is " +
            "$theirs, the spec's $ours (write it again: ldp collect task)",
    )

    /** Whether the task's local protocol is the spec's: none without local noise, else the same protocol with the
     * same parameters (compared by their fingerprint: the same numbers whether written 1 or 1.0). */
    private fun sameLocal(json: String?): Boolean {
        if (!local || json == null) return !local && json == null
        val doc = try {
            Json.parse(json) as? Map<*, *>
        } catch (e: IllegalArgumentException) {
            null
        } ?: return false
        if (doc.keys != setOf("protocol", "params") || doc["protocol"] != m.params.protocol) return false
        return try {
            Protocols[m.params.protocol]!!.paramsOf(doc["params"]) == m.params
        } catch (e: IllegalArgumentException) {
            false
        }
    }

    /** The VDAF measurement of [prepared]: for Poplar1, the string's bits (the first the most significant bit of its
     * first byte); for Prio3 with local noise inside, the randomized report's field (this draws the noise); without,
     * the exact value: its index, or one-hot for Prio3SumVec. */
    fun measurement(prepared: Prepared): LongArray {
        if (fit == null) {
            val bytes = prepared.value as ByteArray // Poplar1Params.measurement: bits / 8 bytes
            return LongArray(length.toInt()) { ((bytes[it / 8].toInt() ushr (7 - it % 8)) and 1).toLong() }
        }
        if (local) {
            return when (val v = prepared.randomize()[fit.field]) {
                is BitMask -> LongArray(v.size) { if (v[it]) 1L else 0L }
                is Long -> longArrayOf(v)
                else -> throw IllegalStateException("the ${m.params.protocol} report has no ${fit.field}")
            }
        }
        val index = when (val v = prepared.value) {
            is Boolean -> if (v) 1L else 0L
            is Number -> v.toLong()
            else -> throw IllegalStateException("a ${m.params.protocol} value is not an index")
        }
        return if (fit == Prio3Fit.SUM_VEC) LongArray(length.toInt()) { if (it.toLong() == index) 1L else 0L } else longArrayOf(index)
    }

    /** A report's time: [now] clamped into the charged [window], rounded down to the task's time precision (which
     * divides the window, so the report stays in the window it was charged to). */
    fun reportTime(now: Double, window: Long): Long {
        val size = task.windowSeconds
        val t = minOf(maxOf(Math.floor(now).toLong(), window * size), window * size + size - 1)
        return t - Math.floorMod(t, task.timePrecision)
    }

    /** The outbox line of one report of [prepared] charged to [window] at time [now]. */
    fun line(prepared: Prepared, now: Double, window: Long): String {
        val report = try {
            task.report(measurement(prepared), reportTime(now, window))
        } catch (e: IllegalArgumentException) { // a measurement the VDAF refuses: never one of a prepared value
            throw Refuse.reportNotMade(metric, e.message ?: e.toString())
        }
        return DapLine.write(task.taskId, report)
    }
}

/** The VDAF of the `poplar1` metric kind's task. */
private const val POPLAR1 = "Poplar1"

/** The outbox line of a DAP report: `{"task_id":"<base64url>","report":"<base64url of the DAP-09 Report>"}`, as
 * Python's `dap_line`; and back. */
internal object DapLine {
    private const val PREFIX = "{\"task_id\":"

    fun write(taskId: String, report: ByteArray): String = "$PREFIX${Json.write(taskId)},\"report\":\"${Bytes.base64Url(report)}\"}"

    /** Whether [line] is a DAP report's line (an envelope begins `{"spec":`): the lane it is uploaded in. */
    fun isDap(line: String): Boolean = line.startsWith(PREFIX)

    /** The task ID and the report's bytes of a DAP line; null when [line] is not one. */
    fun parse(line: String): Pair<String, ByteArray>? {
        val doc = try {
            Json.parse(line) as? Map<*, *>
        } catch (e: IllegalArgumentException) {
            null
        } ?: return null
        val taskId = doc["task_id"] as? String ?: return null
        val report = (doc["report"] as? String)?.let { Bytes.fromBase64Url(it) } ?: return null
        if (doc.size != 2 || Bytes.fromBase64Url(taskId)?.size != 32) return null
        return taskId to report
    }
}
