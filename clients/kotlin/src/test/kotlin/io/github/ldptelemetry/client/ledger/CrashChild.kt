package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.dap.DapTask
import io.github.ldptelemetry.client.dap.TaskFiles
import java.io.File

/**
 * The child process of [CrashTest]: opens the store folder `args[0]`, says "ready", waits for a line on its input
 * (the parent starts it as a spare, so that a JVM's start-up does not eat the time between two kills), then records
 * reports, every third a two-aggregator one (its DAP report made by the native library), and now and then uploads a
 * batch of the ingest lane or one two-aggregator report (acknowledging it as an upload would, often behind a report
 * still waiting), as fast as it can, until it is killed.
 */
object CrashChild {
    @JvmStatic
    fun main(args: Array<String>) {
        val store = FileStore(File(args[0])).apply { compactBytes = 4096 }
        val spec = TestSpecs.withDap
        val task = DapTask(TaskFiles.of(spec, "crashed"))
        // a clock 100 times as fast as the wall's: a window every 10 ms, so the cap binds and the kills mostly land
        // while a report is being written
        val client = TelemetryClient(spec, store, clock = { System.currentTimeMillis() / 10.0 }, tasks = mapOf("crashed" to task))
        println("ready")
        System.out.flush()
        readLine() // a spare waits for its turn (a line on its input) before it records
        var i = 0
        while (true) {
            try {
                if (i % 3 == 1) client.record("crashed", i % 2 == 0) else client.record("color", i % 4)
            } catch (e: BudgetExceededException) {
                Thread.sleep(1)
            }
            if (i % 7 == 3) {
                client.nextBatch()?.let { b -> client.acknowledgeBatch(b.id, b.reports.map { it.id }) }
            }
            if (i % 3 == 2) client.dapLane().let { lane -> lane.pending(1).firstOrNull()?.let { lane.acknowledge(it.id) } }
            i++
        }
    }
}
