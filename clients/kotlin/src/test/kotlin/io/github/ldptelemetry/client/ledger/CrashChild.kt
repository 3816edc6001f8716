package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.TelemetryClient
import java.io.File

/**
 * The child process of [CrashTest]: opens the store folder `args[0]`, says "ready", waits for a line on its input
 * (the parent starts it as a spare, so that a JVM's start-up does not eat the time between two kills), then records
 * reports (and now and then acknowledges a batch, as an upload would) as fast as it can, until it is killed.
 */
object CrashChild {
    @JvmStatic
    fun main(args: Array<String>) {
        val store = FileStore(File(args[0])).apply { compactBytes = 4096 }
        // a clock 100 times as fast as the wall's: a window every 10 ms, so the cap binds and the kills mostly land
        // while a report is being written
        val client = TelemetryClient(TestSpecs.grr(perWindow = 5.0, lifetime = 1e9, windowSeconds = 1), store, clock = { System.currentTimeMillis() / 10.0 })
        println("ready")
        System.out.flush()
        readLine() // a spare waits for its turn (a line on its input) before it records
        var i = 0
        while (true) {
            try {
                client.record("color", i % 4)
            } catch (e: BudgetExceededException) {
                Thread.sleep(1)
            }
            if (i % 7 == 3) {
                client.nextBatch()?.let { b -> client.acknowledgeBatch(b.id, b.reports.map { it.id }) }
            }
            i++
        }
    }
}
