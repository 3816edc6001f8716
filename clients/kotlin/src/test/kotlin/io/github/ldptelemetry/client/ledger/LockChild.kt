package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.TelemetryClient
import java.io.File

/**
 * A child process of [LockFairnessTest]: transacts on the store folder `args[0]` in a tight loop (records, and
 * acknowledges a batch now and then so that the outbox never fills), re-taking the lock microseconds after each
 * release, until it is killed.
 */
object LockChild {
    @JvmStatic
    fun main(args: Array<String>) {
        val client = TelemetryClient(TestSpecs.grr(perWindow = 1e12, lifetime = 1e12, windowSeconds = 1_000_000, maxBatch = 50), FileStore(File(args[0]), lockTimeoutMillis = 600_000))
        println("ready")
        System.out.flush()
        var i = 0L
        while (true) {
            client.record("color", (i % 4).toInt())
            if (i % 40 == 39L) client.nextBatch()?.let { b -> client.acknowledgeBatch(b.id, b.reports.map { it.id }) }
            i++
        }
    }
}
