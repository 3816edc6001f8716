package io.github.ldptelemetry.client.dap

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.LdpTypeException
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.spec.CollectionSpec
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.nio.ByteBuffer

/**
 * The spec's `poplar1` metric kind recorded with its task (issue 89, item 3): [Poplar1Task] reading a task file and
 * sealing DAP-09 reports through the native library's `ldp_poplar1_*` functions (JNA), and a [TelemetryClient] given
 * it: the string's bits as the measurement, the spec's charge and k reports a window, the value rules (refused before
 * anything is charged), and a task that is not the metric's refused when the client is made. That the reports count
 * the strings exactly is tests/clients/test_kotlin_poplar1_e2e.py's (a leader and a helper on loopback).
 */
class Poplar1ClientTest {
    private val vdaf = mapOf("type" to "Poplar1", "draft" to 18L, "bits" to 32L, "max_candidates" to 64L, "threshold" to 3L)
    private val spec = CollectionSpec.parse(
        """{"spec_version": 1, "name": "dap.test", "budget": {"per_window": 6.0, "lifetime": 400.0},
           "metrics": {"words": {"protocol": "poplar1", "params": {"bits": 32, "threshold": 3, "max_candidates": 64},
                                 "budget": {"per_report": 1.5}, "trust": "two-aggregator"},
                       "color": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4}, "budget": {"per_report": 1.0}}}}""",
    )
    private val task = Poplar1Task(TaskFiles.text("words", vdaf, reportsPerWindow = 4))
    private val spy = SpyTask(task)
    private val window = 20_000L
    private val now = window * 86400.0 + 5000.5

    @AfterEach
    fun close() = task.close()

    private fun client(t: TwoAggregatorTask = spy) = TelemetryClient(spec, MemoryStore(), clock = { now }, tasks = mapOf("words" to t))

    private fun timeOf(report: ByteArray) = ByteBuffer.wrap(report, 16, 8).long // DAP-09: report ID (16), time (u64)

    @Test
    fun `the task file's members, and reports made with given or fresh randomness`() {
        assertEquals(listOf("words", "two-aggregator", "Poplar1", 32, 64L, 3L, 4L, 86400L, 3600L, null, null),
            listOf(task.metric, task.trust, task.vdafType, task.length, task.maxCandidates, task.threshold, task.reportsPerWindow,
                task.windowSeconds, task.timePrecision, task.localJson, task.levels))
        assertEquals(Bytes.base64Url(ByteArray(32) { 0xa5.toByte() }), task.taskId)
        val bits = LongArray(32) { if (it % 3 == 0) 1L else 0L }
        val rand = ByteArray(task.randLength) { (7 * it).toByte() }
        val id = ByteArray(16) { it.toByte() }
        val a = task.reportWithRandom(bits, 1_700_000_123, id, rand)
        assertArrayEquals(a, task.reportWithRandom(bits, 1_700_000_123, id, rand), "the same inputs, the same bytes")
        assertFalse(a.contentEquals(task.reportWithRandom(bits, 1_700_000_123, id, rand.copyOf().also { it[0] = 1 })))
        assertArrayEquals(id, a.copyOf(16))
        assertEquals(1_699_999_200L, timeOf(a), "rounded down to the hour")
        val fresh = task.report(bits, 1_700_000_123)
        assertFalse(fresh.copyOf(16).contentEquals(task.report(bits, 1_700_000_123).copyOf(16)), "fresh report IDs")
        assertTrue(fresh.size > 200, "IDPF keys sealed to both aggregators: ${fresh.size} bytes")
        (TwoAggregatorTask.open(TaskFiles.text("words", vdaf)) as Poplar1Task).close()
        (TwoAggregatorTask.open(TaskFiles.of(TaskFiles.spec, "votes")) as DapTask).close()
    }

    @Test
    fun `task files and measurements it refuses`() {
        val bad = mapOf(
            TaskFiles.text("words", mapOf("type" to "Prio3Count")) to "is not Poplar1",
            TaskFiles.text("words", vdaf + ("draft" to 8L)) to "vdaf.draft must be 18",
            TaskFiles.text("words", vdaf + ("bits" to 300L)) to "bits must be an integer in [1, 256]",
            TaskFiles.text("words", vdaf + ("max_candidates" to 1L)) to "max_candidates must be >= 2",
            TaskFiles.text("words", vdaf + ("chunk_length" to 2L)) to "Poplar1 takes no chunk_length",
            TaskFiles.text("words", vdaf - "bits") to "lacks vdaf.bits",
            TaskFiles.text("words", vdaf, local = mapOf("protocol" to "rr")) to "local must be null",
            TaskFiles.text("words", vdaf).replace("\"hpke_configs\"", "\"x\"") to "has no hpke_configs",
            TaskFiles.text("words", vdaf).replace("ldp-task/1", "ldp-task/2") to "not an ldp-task/1 task file",
            "[]" to "a task file is a JSON object",
        )
        for ((text, want) in bad) {
            val e = assertThrows(IllegalArgumentException::class.java) { Poplar1Task(text).close() }
            assertTrue(e.message!!.contains(want), "$want: ${e.message}")
        }
        assertThrows(IllegalArgumentException::class.java) { task.report(LongArray(31), 1) }
        assertThrows(IllegalArgumentException::class.java) { task.report(LongArray(32) { 2L }, 1) }
        val closed = Poplar1Task(TaskFiles.text("words", vdaf))
        closed.close()
        assertThrows(IllegalStateException::class.java) { closed.report(LongArray(32), 1) }
    }

    @Test
    fun `a string is recorded as its bits, charged the spec's per_report, k reports a window`() {
        val c = client()
        c.record("words", "hé")
        val time = window * 86400 + 3600
        assertEquals(listOf(bitsOf("68c3a900") to time), spy.made)
        assertEquals(1.5, c.spent("words").epsilon)
        c.recordMany(listOf("words" to "", "words" to Bytes.fromHex("00ff")))
        assertEquals(listOf(bitsOf("00000000"), bitsOf("00ff0000")), spy.made.drop(1).map { it.first })
        c.record("words", "abcd")
        assertEquals("words", assertThrows(BudgetExceededException::class.java) { c.record("words", "x") }.scope, "k = 6 / 1.5 = 4")
        val lines = c.dapLane().pending(10)
        assertEquals(4, lines.size)
        for (r in lines) {
            val (taskId, report) = DapLine.parse(r.line)!!
            assertEquals(task.taskId, taskId)
            assertEquals(time, timeOf(report))
        }
    }

    @Test
    fun `a value the kind refuses is refused with Python's code, nothing charged`() {
        val c = client()
        val refused = mapOf("abcde" to RefusalCode.VALUE_TOO_LONG, "ab\u0000" to RefusalCode.NOT_IN_ALPHABET, "\uD800" to RefusalCode.NOT_ENCODABLE)
        for ((value, code) in refused) assertEquals(code, assertThrows(LdpValueException::class.java) { c.record("words", value) }.code, value)
        for (value in listOf(5L, true, null)) assertEquals(RefusalCode.VALUE_TYPE, assertThrows(LdpTypeException::class.java) { c.record("words", value) }.code)
        val e = assertThrows(LdpValueException::class.java) { c.recordMany(listOf("color" to 1L, "words" to "abcde")) }
        assertTrue(e.message!!.startsWith("recordMany item 1 (\"words\"): "), e.message)
        assertEquals(0.0, c.spent().epsilon)
        assertEquals(0L, c.pending())
        assertTrue(spy.made.isEmpty())
    }

    @Test
    fun `a task that is not the metric's is refused when the client is made`() {
        val cases = mapOf(
            TaskFiles.text("words", vdaf + ("bits" to 40L), reportsPerWindow = 4) to "has Poplar1 parameters (bits 40, max_candidates 64), the spec's metric (bits 32, max_candidates 64)",
            TaskFiles.text("words", vdaf + ("max_candidates" to 65L), reportsPerWindow = 4) to "max_candidates 65), the spec's metric (bits 32, max_candidates 64)",
            TaskFiles.text("words", vdaf, reportsPerWindow = 2) to "its reports_per_window is 2, the spec's 4",
            TaskFiles.text("other", vdaf, reportsPerWindow = 4) to "its metric is \"other\", the spec's \"words\"",
            TaskFiles.text("words", vdaf, windowSeconds = 3600, reportsPerWindow = 4) to "its window_seconds is 3600, the spec's 86400",
        )
        for ((text, want) in cases) {
            Poplar1Task(text).use { t ->
                val e = assertThrows(IllegalArgumentException::class.java) { client(t) }
                assertTrue(e.message!!.contains(want), "$want: ${e.message}")
            }
        }
        DapTask(TaskFiles.text("words", mapOf("type" to "Prio3Histogram", "length" to 4L), reportsPerWindow = 4)).use { t ->
            val e = assertThrows(IllegalArgumentException::class.java) { client(t) }
            assertTrue(e.message!!.contains("its vdaf is \"Prio3Histogram\", the spec's \"Poplar1\""), e.message)
        }
        val grr = CollectionSpec.parse(
            """{"spec_version": 1, "name": "dap.test", "budget": {"per_window": 6.0, "lifetime": 400.0},
               "metrics": {"words": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4}, "budget": {"per_report": 1.0},
                                     "trust": "two-aggregator"}}}""",
        )
        val e = assertThrows(IllegalArgumentException::class.java) { TelemetryClient(grr, MemoryStore(), tasks = mapOf("words" to task)) }
        assertTrue(e.message!!.contains("its vdaf is \"Poplar1\", the spec's \"Prio3Histogram\""), e.message)
    }

    private fun bitsOf(hex: String): List<Long> = Bytes.fromHex(hex).flatMap { b -> (7 downTo 0).map { ((b.toInt() ushr it) and 1).toLong() } }
}
