package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Json
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.util.Random
import java.util.concurrent.TimeUnit

/**
 * The ledger survives being killed mid-write: two child JVMs record on one store folder, and one of them is killed
 * (SIGKILL) at a random moment, 200 times. After each kill the parent opens the store with a short lock timeout and
 * checks that it is never locked out, never corrupt, and never over-spent: every window's reports within its cap,
 * and the lifetime total exactly the reports that exist (each charged once, none without its charge).
 */
class CrashTest {
    @TempDir
    lateinit var dir: File

    private fun child(): Process {
        val java = File(System.getProperty("java.home"), "bin/java").path
        val cp = System.getProperty("surefire.test.class.path") ?: System.getProperty("java.class.path")
        val p = ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-cp", cp, CrashChild::class.java.name, dir.path)
            .redirectErrorStream(true).start()
        return p
    }

    @Test
    fun `200 kills - never over-spent, never corrupt, never locked out`() {
        val random = Random(20261124)
        val kills = Integer.getInteger("ldp.crash.kills", 200)
        val children = arrayOf(child(), child())
        val spec = TestSpecs.grr(perWindow = 5.0, lifetime = 1e9, windowSeconds = 1)
        var checkedReports = 0L
        repeat(kills) { k ->
            val victim = random.nextInt(2)
            Thread.sleep(50L + random.nextInt(250))
            children[victim].destroyForcibly().waitFor(10, TimeUnit.SECONDS)
            // never locked out: the survivor keeps working, and the parent gets the lock within 5 s
            TelemetryClient(spec, FileStore(dir, lockTimeoutMillis = 5_000)) // opens (and sweeps) the store
            // one transaction: the survivor keeps recording meanwhile
            val (pending, uploaded, lifetime) = FileStore(dir, lockTimeoutMillis = 5_000).transact { tx ->
                val state = tx.state!!
                val head = tx.head(Int.MAX_VALUE)
                assertEquals(tx.pendingCount, head.size.toLong())
                Triple(head, state.uploaded.values.sum(), BudgetLedger.spent(state, "*", null))
            }
            assertEquals(PrivacyCost((pending.size + uploaded).toDouble()), lifetime, "kill $k: each report charged exactly once")
            val perWindow = pending.groupingBy { (Json.parse(it.line) as Map<*, *>)["window"] as Long }.eachCount()
            assertTrue(perWindow.values.all { it <= 5 }, "kill $k: a window over its cap: $perWindow")
            assertEquals(pending.map { it.id }, pending.map { it.id }.sorted(), "kill $k: outbox in id order")
            checkedReports = pending.size + uploaded
            children[victim] = child()
        }
        children.forEach { it.destroyForcibly().waitFor(10, TimeUnit.SECONDS) }
        assertTrue(checkedReports > 10L * kills, "the children made progress ($checkedReports reports)")
        val stray = dir.listFiles()!!.map { it.name }.filter { it.endsWith(".tmp") }
        assertTrue(stray.size <= 2, "temporary files are swept: $stray")
    }
}
