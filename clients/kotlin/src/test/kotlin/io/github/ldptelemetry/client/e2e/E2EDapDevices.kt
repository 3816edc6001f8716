package io.github.ldptelemetry.client.e2e

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.Refusal
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.dap.SpyTask
import io.github.ldptelemetry.client.dap.TwoAggregatorTask
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.FileStore
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.upload.UploadOptions
import io.github.ldptelemetry.client.upload.UploadResult
import io.github.ldptelemetry.client.upload.Uploader
import java.io.File

/**
 * The devices of `tests/clients/test_kotlin_dap_e2e.py` and `test_kotlin_poplar1_e2e.py`: `E2EDapDevices JOB`, JOB a
 * JSON file `{"spec": …, "tasks": {metric: task file text}, "devices": [{"state": folder, "clock": unix seconds,
 * "records": [[metric, value], …]}]}`.
 *
 * Each device opens a [TelemetryClient] on its own [FileStore] folder with the tasks (each the task its file names,
 * [TwoAggregatorTask.open]: a `DapTask`, or a `Poplar1Task` for a `poplar1` metric; watched by a [SpyTask], which
 * keeps the measurements the client made: Prio3's, or a string's bits), records its values (a refusal for a spent
 * budget noted, or of a value: its code), uploads to the leaders with no ingest service (`UploadOptions()`), then
 * uploads again. Prints one JSON line: `made` (per metric, every measurement, in order) and per device its
 * `refused`, the first upload's `result`, the second's `again` (reports acknowledged), what is `pending` after, and
 * the ε `spent` per metric in the window.
 */
object E2EDapDevices {
    @JvmStatic
    fun main(args: Array<String>) {
        val job = Json.parse(File(args[0]).readText()) as Map<*, *>
        val spec = CollectionSpec.fromDict(job["spec"])
        val tasks = (job["tasks"] as Map<*, *>).entries.associate { (m, text) -> m as String to SpyTask(TwoAggregatorTask.open(text as String)) }
        val uploader = Uploader(UploadOptions())
        val devices = (job["devices"] as List<*>).map { d ->
            val device = d as Map<*, *>
            val clock = (device["clock"] as Number).toDouble()
            val client = TelemetryClient(spec, FileStore(File(device["state"] as String)), clock = { clock }, tasks = tasks)
            val refused = ArrayList<List<String>>()
            for (pair in device["records"] as List<*>) {
                val (metric, value) = pair as List<*>
                try {
                    client.record(metric as String, value)
                } catch (e: BudgetExceededException) {
                    refused.add(listOf(metric as String, "BudgetExceeded"))
                } catch (e: IllegalArgumentException) { // a value refused: its code (Python's)
                    refused.add(listOf(metric as String, (e as? Refusal ?: throw e).code.code))
                }
            }
            val result = uploader.upload(client)
            val again = uploader.upload(client).acknowledged
            val spent = tasks.keys.associateWith { client.spent(it).epsilon }
            linkedMapOf("refused" to refused, "result" to json(result), "again" to again, "pending" to client.pending(), "spent" to spent)
        }
        val made = tasks.mapValues { (_, t) -> t.made.map { it.first } }
        println(Json.write(linkedMapOf("made" to made, "devices" to devices)))
    }

    private fun json(r: UploadResult) = linkedMapOf(
        "batches" to r.batches.toLong(), "acknowledged" to r.acknowledged, "accepted" to r.accepted, "rejected" to r.rejected,
        "duplicates" to r.duplicates.toLong(), "stopped" to r.stopped.name.lowercase(),
    )
}
