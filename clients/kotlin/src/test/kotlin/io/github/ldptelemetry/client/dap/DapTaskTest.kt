package io.github.ldptelemetry.client.dap

import io.github.ldptelemetry.client.internal.Json
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.File
import java.util.Base64

/**
 * [DapTask] through JNA and the native client's C interface (issue 87, item 2): the DAP reports of
 * `clients/rust/tests/data/dap_reports.json` made again byte for byte from a task file holding the fixture's task ID,
 * Prio3 type and both configs; fresh reports from the OS generator; the members of a VDAF-08 task with local noise;
 * and refusals as exceptions naming what was wrong.
 */
class DapTaskTest {
    @Suppress("UNCHECKED_CAST")
    private val fixture = Json.parse(File(System.getProperty("ldp.dap.fixture")).readText()) as Map<String, Any?>

    private fun unhex(s: String) = ByteArray(s.length / 2) { s.substring(2 * it, 2 * it + 2).toInt(16).toByte() }
    private fun hex(b: ByteArray) = b.joinToString("") { "%02x".format(it) }
    private fun b64(hexText: String) = Base64.getUrlEncoder().withoutPadding().encodeToString(unhex(hexText))

    @Suppress("UNCHECKED_CAST")
    private fun taskFile(vdaf: Any?, extra: Map<String, Any?> = emptyMap()): String {
        val config = { role: String -> b64((fixture[role] as Map<String, Any?>)["config"] as String) }
        return Json.write(mapOf("format" to "ldp-task/1", "task_id" to b64(fixture["task_id"] as String), "app" to "a",
            "metric" to "m", "vdaf" to vdaf, "window_seconds" to 86400, "time_precision" to 3600,
            "leader_url" to "https://leader.example", "local" to null, "reports_per_window" to 1,
            "hpke_configs" to mapOf("leader" to config("leader"), "helper" to config("helper"))) + extra)
    }

    @Test
    @Suppress("UNCHECKED_CAST")
    fun `the fixture's reports byte for byte`() {
        (fixture["reports"] as List<Map<String, Any?>>).forEachIndexed { i, case ->
            DapTask(taskFile(case["vdaf"])).use { task ->
                val rand = ByteArray(task.randLength) { j -> (31 * j + i).toByte() }
                val m = when (val v = case["measurement"]) {
                    is List<*> -> LongArray(v.size) { (v[it] as Number).toLong() }
                    else -> longArrayOf((v as Number).toLong())
                }
                val time = (case["time"] as Number).toLong()
                val report = task.reportWithRandom(m, time, unhex(case["report_id"] as String), rand)
                assertEquals(case["report"], hex(report), "case $i")
                assertFalse(task.report(m, time).contentEquals(report))
            }
        }
    }

    @Test
    fun `the members of a VDAF-08 task with local noise`() {
        val local = mapOf("protocol" to "rr", "params" to mapOf("p" to 0.25, "q" to 0.75))
        DapTask(taskFile(mapOf("type" to "Prio3Count", "draft" to 8), mapOf("local" to local, "reports_per_window" to 2)))
            .use { t ->
                assertEquals(listOf("m", "two-aggregator+local", "Prio3Count", 8, 1, 2L, 86400L, 3600L),
                    listOf(t.metric, t.trust, t.vdafType, t.draft, t.length, t.reportsPerWindow, t.windowSeconds,
                        t.timePrecision))
                assertEquals(local, Json.parse(t.localJson!!))
                assertEquals(43, t.taskId.length)
                assertTrue(t.report(longArrayOf(1), 1_700_000_000).size > 100)
            }
    }

    @Test
    fun `refusals name what was wrong`() {
        assertTrue(assertThrows(IllegalArgumentException::class.java) { DapTask("{}") }.message!!
            .contains("not an ldp-task/1 task file"))
        assertTrue(assertThrows(IllegalArgumentException::class.java) {
            DapTask(taskFile(mapOf("type" to "Prio3Count"), mapOf("hpke_configs" to null)))
        }.message!!.contains("has no hpke_configs"))
        val task = DapTask(taskFile(mapOf("type" to "Prio3Count")))
        assertThrows(IllegalArgumentException::class.java) { task.report(longArrayOf(2), 1) }
        task.close()
        assertThrows(IllegalStateException::class.java) { task.report(longArrayOf(1), 1) }
        task.close()
        assertArrayEquals(byteArrayOf(), ByteArray(0))
    }
}
