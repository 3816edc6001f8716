package io.github.ldptelemetry.client.dap

import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.spec.CollectionSpec
import java.io.File

/**
 * Task files for the tests, as `ldp collect task --leader-config … --helper-config …` writes them: both aggregators'
 * HPKE configs are those of `clients/rust/tests/data/dap_reports.json` (a real key pair each), the rest as given.
 */
object TaskFiles {
    @Suppress("UNCHECKED_CAST")
    private val fixture by lazy { Json.parse(File(System.getProperty("ldp.dap.fixture")).readText()) as Map<String, Any?> }

    @Suppress("UNCHECKED_CAST")
    private fun config(role: String) = Bytes.base64Url(Bytes.fromHex((fixture[role] as Map<String, Any?>)["config"] as String))

    /** A task file of [metric] ([vdaf]: the `vdaf` member); [id] fills the 32-byte task ID. */
    fun text(
        metric: String, vdaf: Map<String, Any?>, windowSeconds: Long = 86400, timePrecision: Long = 3600,
        local: Map<String, Any?>? = null, reportsPerWindow: Long? = 1, leaderUrl: String = "https://leader.example",
        id: Int = 0xa5,
    ): String = Json.write(
        linkedMapOf(
            "format" to "ldp-task/1", "task_id" to Bytes.base64Url(ByteArray(32) { id.toByte() }), "app" to "app",
            "metric" to metric, "vdaf" to vdaf, "window_seconds" to windowSeconds, "time_precision" to timePrecision,
            "leader_url" to leaderUrl, "local" to local, "reports_per_window" to reportsPerWindow,
            "hpke_configs" to mapOf("leader" to config("leader"), "helper" to config("helper")),
        ),
    )

    /** The task file of two-aggregator [metric] of [spec] (its Prio3 type written out here, not taken from the client's
     * table), VDAF [draft]. */
    fun of(spec: CollectionSpec, metric: String, leaderUrl: String = "https://leader.example", draft: Long = 18, id: Int = 0xa5): String {
        val m = spec.metric(metric)
        val d = m.params.domainSize!!.toLong()
        val vdaf: Map<String, Any?> = when (m.params.protocol) {
            "rr" -> mapOf("type" to "Prio3Count", "draft" to draft)
            "grr" -> mapOf("type" to "Prio3Histogram", "length" to d, "draft" to draft)
            "sue", "oue" -> mapOf("type" to "Prio3SumVec", "length" to d, "max_measurement" to 1L, "draft" to draft)
            else -> error("no task for ${m.params.protocol} here")
        }
        val local = if (m.trust.value == "two-aggregator+local") mapOf("protocol" to m.params.protocol, "params" to m.params.toDict()) else null
        return text(metric, vdaf, spec.windowSeconds, minOf(3600L, spec.windowSeconds), local, spec.reportsPerWindow(metric), leaderUrl, id)
    }

    /** A spec with the example's two metrics, a SumVec one (`votes`, charged its `per_report` 1.5) and a local one. */
    val spec: CollectionSpec by lazy {
        CollectionSpec.parse(
            """{"spec_version": 1, "name": "dap.test", "window_seconds": 86400,
             "budget": {"per_window": 6.0, "lifetime": 400.0}, "upload": {"min_interval_seconds": 0, "max_batch": 10},
             "metrics": {
               "search_engine": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4, "labels": ["a", "b", "c", "other"]},
                                 "budget": {"per_report": 1.0, "per_window": 1.0, "lifetime": 365.0}, "trust": "two-aggregator"},
               "crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75},
                           "budget": {"per_report": 1.1, "per_window": 2.2, "lifetime": 200.0}, "trust": "two-aggregator+local"},
               "votes": {"protocol": "oue", "params": {"epsilon": 1.0, "domain_size": 3}, "budget": {"per_report": 1.5},
                         "trust": "two-aggregator"},
               "color": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4}, "budget": {"per_report": 1.0}}}}""",
        )
    }
}

/** A task that records what the client asked of [task] (the measurement and time of each report). */
class SpyTask(private val task: TwoAggregatorTask) : TwoAggregatorTask by task {
    val made = ArrayList<Pair<List<Long>, Long>>()

    override fun report(measurement: LongArray, time: Long): ByteArray {
        made.add(measurement.toList() to time)
        return task.report(measurement, time)
    }
}
