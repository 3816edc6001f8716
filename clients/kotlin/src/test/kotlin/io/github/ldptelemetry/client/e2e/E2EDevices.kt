package io.github.ldptelemetry.client.e2e

import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.FileStore
import io.github.ldptelemetry.client.random.KeyedRandomSource
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.upload.UploadOptions
import io.github.ldptelemetry.client.upload.Uploader
import java.io.File

/**
 * The devices of `tests/clients/test_kotlin_e2e.py`: `E2EDevices SPEC DEVICES STATES URL TOKEN SEED`.
 *
 * For each device `d` of the DEVICES file (a JSON list of `[metric, value]` lists), opens a [TelemetryClient] on
 * its own [FileStore] folder `STATES/d`, records its values unless that folder already holds a state (a second run
 * resumes: it only uploads what is left), and uploads through the [Uploader] to URL (one collector URL, or several
 * separated by commas: the uploader's endpoint list, in that order). Prints one JSON line:
 * `recorded`, `acknowledged`, `accepted`, `rejected`, `duplicates`, `pending` (left after the upload) and `spec`
 * (the spec's fingerprint).
 *
 * SIMULATION: each device's noise comes from `KeyedRandomSource(SEED, "device/<d>")` so that the test's outcome is
 * fixed; a real device uses the default `SecureRandomSource`.
 */
object E2EDevices {
    @JvmStatic
    fun main(args: Array<String>) {
        val (specPath, devicesPath, statesPath, url, token, seedHex) = args
        val spec = CollectionSpec.parse(File(specPath).readText())
        val devices = Json.parse(File(devicesPath).readText()) as List<*>
        val seed = Bytes.fromHex(seedHex)
        val uploader = Uploader(UploadOptions(endpoints = url.split(","), token = token))
        var recorded = 0L
        var acknowledged = 0L
        var accepted = 0L
        var duplicates = 0L
        var pending = 0L
        val rejected = LinkedHashMap<String, Long>()
        for ((d, values) in devices.withIndex()) {
            val folder = File(statesPath, "d$d")
            val fresh = !File(folder, "state.json").exists()
            val rng = KeyedRandomSource(seed, Bytes.ascii("device/$d"))
            val client = TelemetryClient(spec, FileStore(folder), rng = rng)
            if (fresh) {
                for (pair in values as List<*>) {
                    val (metric, value) = pair as List<*>
                    client.record(metric as String, value)
                    recorded++
                }
            }
            val result = uploader.upload(client)
            acknowledged += result.acknowledged
            accepted += result.accepted
            duplicates += result.duplicates
            for ((k, v) in result.rejected) rejected[k] = (rejected[k] ?: 0L) + v
            pending += client.pending()
        }
        println(
            Json.write(
                linkedMapOf(
                    "recorded" to recorded, "acknowledged" to acknowledged, "accepted" to accepted, "rejected" to rejected,
                    "duplicates" to duplicates, "pending" to pending, "spec" to spec.fingerprint,
                ),
            ),
        )
    }

    private operator fun <T> Array<T>.component6(): T = this[5]
}
